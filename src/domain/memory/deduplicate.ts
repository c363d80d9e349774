import type { ConclusionRecord, Store } from '../../storage/store.js';

/*
 * Storing new conclusions with deduplication (reasoning.md R2), on every path that creates them
 * (the deriver and manual `POST .../conclusions`):
 * 1. a repeat inside one batch (same collection, level, session and trimmed, case-folded text) is
 *    dropped;
 * 2. exact: a live conclusion with that text is reinforced (`times_derived` + 1);
 * 3. semantic, when `semantic` is on and the new conclusion has a vector: the nearest live
 *    conclusion of the same collection and level (and session, for explicit ones) within cosine
 *    distance SEMANTIC_DUPLICATE_DISTANCE is the same fact. The richer text wins: a new one at
 *    least as rich replaces it (the old one soft-deleted, the new one stored with its
 *    `times_derived` + 1 and the union of both's sources), else the old one is reinforced.
 * Conclusions are handled in order, so a near-duplicate later in the same batch merges with the
 * one stored just before it. New conclusions and their vectors are written together (a statement
 * for each hundred rows, not two for each conclusion): on PostgreSQL the transaction holds its
 * collections' count rows from the start, so every round trip in it holds the other writers of
 * those collections. Runs inside the caller's transaction; the vectors were made before it.
 */

/** Largest cosine distance at which two conclusions are the same fact (the reference's 0.05). */
export const SEMANTIC_DUPLICATE_DISTANCE = 0.05;

/** The richer of two texts by the reference's measure: distinct words plus ten times the words only it has. */
export function richness(text: string, other: string): number {
  const words = (value: string) => new Set(value.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
  const mine = words(text);
  const theirs = words(other);
  let unique = 0;
  for (const word of mine) if (!theirs.has(word)) unique++;
  return mine.size + 10 * unique;
}

export interface ConclusionDraft {
  record: ConclusionRecord;
  /** The content's embedding; absent when no embedding model is configured. */
  vector?: number[];
}

/** What became of a draft: stored as new, merged into a stored one, or dropped as a repeat of an earlier draft. */
/** 'discarded': its observer or observed peer is being deleted (or gone), so nothing was written. */
export type SaveOutcome = 'created' | 'reinforced' | 'replaced' | 'repeat' | 'discarded';

export interface SavedConclusion {
  /** The live conclusion that now holds the fact (the new one, or the one it merged into). */
  record: ConclusionRecord;
  outcome: SaveOutcome;
}

const normalized = (content: string) => content.trim().toLowerCase();

function scopeKey(r: ConclusionRecord): string {
  return JSON.stringify([r.workspaceId, r.observerId, r.observedId, r.level, r.sessionId]);
}

function unionIds(a: string[] | null, b: string[] | null): string[] | null {
  if (a === null && b === null) return null;
  return [...new Set([...(a ?? []), ...(b ?? [])])];
}

export interface SaveOptions {
  semantic: boolean;
  now: Date;
  /** Live peers of a workspace the caller keeps already (PeerStore.keepLivePeers in this transaction): not read again. */
  keptPeers?: { workspaceId: string; ids: ReadonlySet<string> };
}

/** Stores `drafts` deduplicated as described above; one result per draft, in order. */
export async function saveConclusions(store: Store, all: readonly ConclusionDraft[], options: SaveOptions): Promise<SavedConclusion[]> {
  // The peers first, kept to the commit (after the session's row, before the count rows: the
  // lock order): a peer whose deletion was marked meanwhile gets nothing written for it, and a
  // mark coming now waits for this commit, so its purge finds what this writes.
  const live = new Map<string, ReadonlySet<string>>();
  for (const workspaceId of new Set(all.map((draft) => draft.record.workspaceId))) {
    const ids = all.filter((draft) => draft.record.workspaceId === workspaceId).flatMap((draft) => [draft.record.observerId, draft.record.observedId]);
    const kept = options.keptPeers?.workspaceId === workspaceId ? options.keptPeers.ids : undefined;
    live.set(workspaceId, kept !== undefined && ids.every((id) => kept.has(id)) ? kept : await store.peers.keepLivePeers(workspaceId, ids));
  }
  const isLive = ({ record }: ConclusionDraft) => {
    const peers = live.get(record.workspaceId);
    return peers !== undefined && peers.has(record.observerId) && peers.has(record.observedId);
  };
  const drafts = all.filter(isLive);
  if (drafts.length < all.length) {
    const saved = await saveConclusions(store, drafts, options);
    let next = 0;
    return all.map((draft) => (isLive(draft) ? saved[next++] : { record: draft.record, outcome: 'discarded' as const }));
  }
  await store.memory.lockConclusionCounts(drafts.map((draft) => draft.record));
  // exact matches among stored conclusions, looked up once per scope
  const scopes = new Map<string, { record: ConclusionRecord; contents: string[] }>();
  for (const { record } of drafts) {
    const key = scopeKey(record);
    const entry = scopes.get(key) ?? { record, contents: [] };
    entry.contents.push(record.content);
    scopes.set(key, entry);
  }
  const stored = new Map<string, Map<string, string>>();
  for (const [key, { record, contents }] of scopes) {
    const { workspaceId, observerId, observedId, level, sessionId } = record;
    stored.set(key, await store.reasoning.liveConclusionsByContent({ workspaceId, observerId, observedId, level, sessionId }, contents));
  }

  // new conclusions wait here and are written together (with their vectors, a statement each per
  // hundred rows), before any other write that stores a conclusion and at the end: a semantic
  // search that would find one of them first writes them, so it sees what it saw before
  const pending: ConclusionDraft[] = [];
  const writePending = async () => {
    if (pending.length === 0) return;
    const drafts = pending.splice(0);
    await store.memory.insertConclusions(drafts.map((draft) => draft.record));
    const vectors = drafts.filter((draft) => draft.vector !== undefined);
    if (vectors.length > 0) await store.vectors.putConclusions(vectors.map((draft) => vectorRow(draft.record, draft.vector!)));
  };

  const results: SavedConclusion[] = [];
  const seen = new Map<string, number>();
  for (const draft of drafts) {
    const { record } = draft;
    const batchKey = `${scopeKey(record)}\u0000${normalized(record.content)}`;
    const earlier = seen.get(batchKey);
    if (earlier !== undefined) {
      results.push({ record: results[earlier].record, outcome: 'repeat' });
      continue;
    }
    seen.set(batchKey, results.length);

    const exact = stored.get(scopeKey(record))?.get(normalized(record.content));
    if (exact !== undefined) {
      const reinforced = await reinforce(store, record.workspaceId, exact);
      if (reinforced !== undefined) {
        results.push({ record: reinforced, outcome: 'reinforced' });
        continue;
      }
    }

    if (options.semantic && draft.vector !== undefined) {
      if (pending.some((other) => nearDuplicates(other, draft))) await writePending();
      const merged = await mergeNearDuplicate(store, draft, options.now, writePending);
      if (merged !== undefined) {
        results.push(merged);
        continue;
      }
    }

    pending.push(draft);
    results.push({ record, outcome: 'created' });
  }
  await writePending();
  return results;
}

/**
 * Whether the semantic search for `draft` would find `other` (a new conclusion not yet written):
 * the same collection and level (and session, for explicit ones) within the duplicate distance.
 */
function nearDuplicates(other: ConclusionDraft, draft: ConclusionDraft): boolean {
  const a = other.record;
  const b = draft.record;
  if (a.workspaceId !== b.workspaceId || a.observerId !== b.observerId || a.observedId !== b.observedId || a.level !== b.level) return false;
  if (b.level === 'explicit' && a.sessionId !== b.sessionId) return false;
  if (other.vector === undefined || other.vector.length !== draft.vector!.length) return false;
  const distance = cosineDistance(other.vector, draft.vector!);
  return distance !== undefined && distance <= SEMANTIC_DUPLICATE_DISTANCE;
}

/** 1 - cos(a, b), as the vector indexes measure it; undefined for a zero vector. */
export function cosineDistance(a: readonly number[], b: readonly number[]): number | undefined {
  let dot = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  if (aa === 0 || bb === 0) return undefined;
  return 1 - dot / Math.sqrt(aa * bb);
}

async function reinforce(store: Store, workspaceId: string, id: string): Promise<ConclusionRecord | undefined> {
  const count = await store.memory.reinforceConclusion(workspaceId, id);
  if (count === undefined) return undefined;
  return store.memory.findConclusion(workspaceId, id);
}

function vectorRow(record: ConclusionRecord, vector: number[]) {
  const { id: conclusionId, workspaceId, observerId, observedId, level, sessionId } = record;
  return { conclusionId, workspaceId, observerId, observedId, level, sessionId, vector };
}

async function mergeNearDuplicate(store: Store, draft: ConclusionDraft, now: Date, writePending: () => Promise<void>): Promise<SavedConclusion | undefined> {
  const { record } = draft;
  const [nearest] = await store.vectors.nearestConclusions({
    workspaceId: record.workspaceId,
    observerId: record.observerId,
    observedId: record.observedId,
    vector: draft.vector!,
    k: 1,
    maxDistance: SEMANTIC_DUPLICATE_DISTANCE,
    levels: [record.level],
    ...(record.level === 'explicit' ? { sessionId: record.sessionId } : {}),
  });
  if (nearest === undefined) return undefined;
  const old = await store.memory.findConclusion(record.workspaceId, nearest.conclusionId);
  if (old === undefined) return undefined;
  if (richness(record.content, old.content) >= richness(old.content, record.content)) {
    // the replacement is stored after the new conclusions before it in the batch, as it comes after them
    await writePending();
    const replaced = await store.memory.replaceConclusion(record.workspaceId, old.id, { ...record, sourceIds: unionIds(old.sourceIds, record.sourceIds) }, now);
    if (replaced === undefined) return undefined;
    await store.vectors.putConclusions([vectorRow(replaced, draft.vector!)]);
    return { record: replaced, outcome: 'replaced' };
  }
  const reinforced = await reinforce(store, record.workspaceId, old.id);
  return reinforced === undefined ? undefined : { record: reinforced, outcome: 'reinforced' };
}
