import { MAX_NEIGHBOURS, type ConclusionLevel, type ConclusionRecord, type ConclusionScope, type JsonObject, type MessageRecord, type Page } from '../../storage/store.js';
import { DOCUMENT_FILTER } from '../filters/filter-schemas.js';
import { documentFilter, listQuery, type ListRequest, type ReadRules } from '../filters/filters.js';
import { inTransaction, type DomainContext } from '../context.js';
import { invalidInput, notFound } from '../errors.js';
import { MAX_QUERY_TOKENS } from '../search/scoring.js';
import { rankConclusions, type VectorRanking } from './conclusion-search.js';
import { exceedsTokensOf, tokenCount } from '../text/token-count.js';
import { saveConclusions } from './deduplicate.js';
import { PeerDeletingError } from '../../storage/peer-deleting.js';
import { embedderOf, embedForRequest, embedQueryForRequest, fixVectorSize } from '../search/embeddings.js';

/** Most tokens in one conclusion's content: the embedding model's input limit (contract §6). */
export const MAX_CONCLUSION_TOKENS = 8192;

/** The 422 text for content over the token limit, or undefined when it fits. */
export function conclusionTokenProblem(content: string): string | undefined {
  // a token is at least one UTF-8 byte, so short content needs no tokenizer run
  if (Buffer.byteLength(content, 'utf8') <= MAX_CONCLUSION_TOKENS) return undefined;
  const tokens = tokenCount(content);
  return tokens > MAX_CONCLUSION_TOKENS
    ? `Content exceeds maximum embedding token limit of ${MAX_CONCLUSION_TOKENS} (got ${tokens} tokens)`
    : undefined;
}

export interface ConclusionInput {
  content: string;
  observerId: string;
  observedId: string;
  sessionId?: string | null;
  /** Ids of current conclusions of the same observer about the same peer that this one replaces. */
  supersedes?: readonly string[];
}

/** Most conclusions one history returns. */
export const MAX_HISTORY = 100;

/**
 * Checks the `supersedes` lists of a request (inside its transaction, before anything is
 * written): each id is a conclusion of the workspace (404), of the item's observer and observed
 * peer, current, and named by one item only (422).
 */
async function checkSupersedes(ctx: DomainContext, workspaceId: string, inputs: readonly ConclusionInput[]): Promise<void> {
  const named = new Set<string>();
  for (const [index, input] of inputs.entries()) {
    for (const id of input.supersedes ?? []) {
      const where = `conclusions[${index}].supersedes`;
      if (named.has(id)) throw invalidInput(`${where}: conclusion ${id} is named more than once in this request`);
      named.add(id);
      const old = await ctx.store.memory.findConclusion(workspaceId, id, { includeSuperseded: true });
      if (old === undefined) throw notFound(`${where}: conclusion ${id} not found in workspace ${workspaceId}`);
      if (old.observerId !== input.observerId || old.observedId !== input.observedId) {
        throw invalidInput(
          `${where}: conclusion ${id} is ${old.observerId}'s about ${old.observedId}; it can only be superseded by a conclusion of the same observer about the same peer`,
        );
      }
      if (old.supersededAt !== null && old.supersededAt !== undefined) throw invalidInput(`${where}: conclusion ${id} was already superseded by ${old.supersededBy}`);
    }
  }
}

/**
 * Stores 1 to 100 conclusions at level "explicit", all or nothing (contract §7.5). A referenced
 * session must exist and be active; observer and observed peers must exist. Checked in request
 * order: each item's session, then its observer, then its observed peer. With an embedding model
 * the contents are embedded before the transaction opens (a model failure is a 503 and stores
 * nothing) and stored with their vectors. Deduplicated as the deriver's are (deduplicate.ts):
 * an item that repeats an earlier one or merges into a stored conclusion answers with the
 * conclusion that holds it (reinforced, or the new one that replaced it), so the answer has one
 * conclusion per item, in order. An item's `supersedes` (checked before anything is written)
 * retires those conclusions in favour of the one that holds the item's fact.
 */
export async function createConclusions(ctx: DomainContext, workspaceId: string, inputs: ConclusionInput[]): Promise<ConclusionRecord[]> {
  const vectors = await embedForRequest(
    ctx,
    workspaceId,
    inputs.map((input) => input.content),
    'no conclusion was stored',
  );
  await fixVectorSize(ctx, vectors);
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    // the peers named, in one statement, kept to the commit (before the count rows saveConclusions
    // takes: the lock order): a peer being deleted is not among them, and cannot be marked until then
    // the sessions named are read with it (on PostgreSQL the statements go out together: one
    // wait), and checked below in request order
    const sessionIds = [...new Set(inputs.flatMap((input) => input.sessionId ?? []))];
    const [livePeers, sessions] = await Promise.all([
      store.peers.keepLivePeers(
        workspaceId,
        inputs.flatMap((input) => [input.observerId, input.observedId]),
      ),
      Promise.all(sessionIds.map((sessionId) => store.sessions.find(workspaceId, sessionId))),
    ]);
    const sessionsFound = new Map(sessionIds.map((sessionId, index) => [sessionId, sessions[index]]));
    for (const input of inputs) {
      const sessionId = input.sessionId ?? null;
      if (sessionId !== null) {
        const session = sessionsFound.get(sessionId);
        if (session === undefined || !session.isActive) throw notFound(`Session ${sessionId} not found in workspace ${workspaceId}`);
      }
      for (const peerId of [input.observerId, input.observedId]) {
        if (!livePeers.has(peerId)) throw notFound(`Peer ${peerId} not found in workspace ${workspaceId}`);
      }
    }
    await checkSupersedes(ctx, workspaceId, inputs);
    const drafts = inputs.map((input, index) => ({
      record: {
        id: ctx.newId(),
        workspaceId,
        observerId: input.observerId,
        observedId: input.observedId,
        sessionId: input.sessionId ?? null,
        content: input.content,
        level: 'explicit' as const,
        sourceIds: null,
        timesDerived: 1,
        createdAt: now,
        validFrom: now,
      },
      vector: vectors?.[index],
    }));
    const saved = await saveConclusions(store, drafts, { semantic: ctx.reasoning?.settings.deriver.deduplicate ?? false, now, keptPeers: { workspaceId, ids: livePeers } });
    // a peer marked for deletion: nothing of the request is written (its peers are kept from the
    // start, so none should be; an item dropped unnoticed would be worse than this check)
    const discarded = saved.find((s) => s.outcome === 'discarded');
    if (discarded !== undefined) {
      const alive = await store.peers.keepLivePeers(workspaceId, [discarded.record.observerId, discarded.record.observedId]);
      throw new PeerDeletingError(alive.has(discarded.record.observerId) ? discarded.record.observedId : discarded.record.observerId);
    }
    // each superseded conclusion names the conclusion that now holds the new fact (the new one,
    // or a stored one it repeated); a fact that repeats the one it supersedes supersedes nothing
    const supersessions = inputs.flatMap((input, index) => (input.supersedes ?? []).map((oldId) => ({ oldId, newId: saved[index].record.id })));
    const done = await store.memory.supersedeConclusions(workspaceId, supersessions, now);
    const replaced = new Set(done.map((s) => s.oldId));
    // an item that repeated a conclusion superseded by a later item of the request is answered with it as it now is
    return Promise.all(
      saved.map(async (s) => (replaced.has(s.record.id) ? ((await store.memory.findConclusion(workspaceId, s.record.id, { includeSuperseded: true })) ?? s.record) : s.record)),
    );
  });
}

/**
 * The workspace's current conclusions (with `includeSuperseded`, the superseded ones too), newest
 * first (`reverse`: oldest first), filtered (§5.1 Document).
 */
export function listConclusions(ctx: DomainContext, workspaceId: string, request: ListRequest & { includeSuperseded?: boolean }): Promise<Page<ConclusionRecord>> {
  return ctx.store.memory.listConclusions(workspaceId, { ...listQuery(ctx.store, request, DOCUMENT_FILTER), includeSuperseded: request.includeSuperseded === true });
}

export interface ConclusionQuery {
  query: string;
  topK: number;
  /** Largest cosine distance of a result (semantic search only; full-text ranking ignores it). */
  distance: number | null;
  filters: JsonObject | null;
  rules: ReadRules;
  /** Superseded conclusions too (ranked by their words: a superseded conclusion keeps no vector). */
  includeSuperseded?: boolean;
}

/** Python truthiness of a JSON value: the reference reads the peers with `a or b`. */
function isFalsy(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && Object.keys(value).length === 0;
}

/** The peer named by `filters.<raw>` or else `filters.<public>` (`observer` / `observer_id`). */
function pickPeer(filters: JsonObject, rawName: string, publicName: string): unknown {
  return isFalsy(filters[rawName]) ? filters[publicName] : filters[rawName];
}

/** Neighbours read first when filters narrow a semantic search (then four times as many each time). */
const NARROWED_FIRST_READ = 64;

/** Filter keys naming the collection, which the vector search is confined to already. */
const SCOPE_KEYS = ['observer', 'observer_id', 'observed', 'observed_id', 'workspace_id', 'workspace_name'];

const LEVELS: readonly string[] = ['explicit', 'deductive', 'inductive', 'contradiction'] satisfies ConclusionLevel[];

/**
 * The levels a filter's `level` allows when it is one value or an `in` list of values (the forms
 * the chat's prefetch uses), for the vector search to apply while it scans; undefined for any
 * other form, which the rows are filtered by instead. A value that is no level allows none.
 */
function levelsOf(filters: unknown): ConclusionLevel[] | undefined {
  if (filters === null || typeof filters !== 'object' || Array.isArray(filters)) return undefined;
  const level = (filters as JsonObject).level;
  const inList = level !== null && typeof level === 'object' && !Array.isArray(level) && Object.keys(level).length === 1 ? (level as JsonObject).in : undefined;
  const values = typeof level === 'string' ? [level] : inList;
  if (!Array.isArray(values) || !values.every((value) => typeof value === 'string')) return undefined;
  return (values as string[]).filter((value): value is ConclusionLevel => LEVELS.includes(value));
}

/**
 * The scope's live conclusions nearest in meaning to `query`, nearest first, at most `topK`
 * within `maxDistance` (cosine) and passing `filters`. Undefined when semantic search cannot run
 * (no embedding model, or no vector stored yet): the caller ranks by full text instead. The
 * query is embedded once; a model failure is a 503. With filters beyond the scope, more
 * neighbours are read so that filtering still leaves `topK` when it can.
 */
export async function nearestConclusions(
  ctx: DomainContext,
  scope: ConclusionScope,
  query: string,
  options: { topK: number; maxDistance?: number; filters: unknown; rules: ReadRules; excludeIds?: readonly string[]; vector?: readonly number[] },
): Promise<ConclusionRecord[] | undefined> {
  if (embedderOf(ctx) === undefined || (await ctx.store.vectors.dimensions()) === undefined) return undefined;
  if (query.trim() === '') return [];
  // a malformed filter is its 422 before any model call
  const filter = documentFilter(ctx.store, options.filters, options.rules);
  // `vector`: the query embedded already (a caller searching several times with one query)
  const vector = options.vector ?? (await embedQueryForRequest(ctx, scope.workspaceId, query, 'the search could not run'))!;
  const filters = options.filters;
  // a level filter is applied by the vector search itself; other filters beyond the scope narrow
  const levels = levelsOf(filters);
  const applied = new Set([...SCOPE_KEYS, ...(levels !== undefined ? ['level'] : [])]);
  const narrowed =
    scope.sessionIds !== undefined ||
    (filters !== null && filters !== undefined && (typeof filters !== 'object' || Array.isArray(filters) || Object.keys(filters).some((key) => !applied.has(key))));
  const found: ConclusionRecord[] = [];
  const checked = new Set<string>();
  // Filters beyond the scope are applied to the rows, so more neighbours than top_k are read: a
  // few times top_k first, then four times as many while too few passed and more are there (up
  // to MAX_NEIGHBOURS). Reading MAX_NEIGHBOURS at once read up to 4,096 rows per query.
  for (let k = narrowed ? Math.min(MAX_NEIGHBOURS, Math.max(NARROWED_FIRST_READ, options.topK * 4)) : options.topK; ; k = Math.min(MAX_NEIGHBOURS, k * 4)) {
    const neighbours = await ctx.store.vectors.nearestConclusions({
      workspaceId: scope.workspaceId,
      observerId: scope.observerId,
      observedId: scope.observedId,
      vector,
      k,
      maxDistance: options.maxDistance,
      excludeIds: options.excludeIds,
      levels,
    });
    // nearest first each time: the rows of those checked before are not read again
    const fresh = neighbours.filter((n) => !checked.has(n.conclusionId)).map((n) => n.conclusionId);
    found.push(...(await ctx.store.memory.conclusionsByIds(scope, fresh, filter)));
    for (const id of fresh) checked.add(id);
    if (!narrowed || found.length >= options.topK || neighbours.length < k || k >= MAX_NEIGHBOURS) return found.slice(0, options.topK);
  }
}

/** The query without its observer or observed peer: v2's text (v3.0.12's too). */
const MISSING_PEERS = 'observer and observed must be specified for semantic search';
/** v3's, as the reference words it after v3.0.12 (scopes.md S9, #960). */
const MISSING_PEERS_V3 =
  `${MISSING_PEERS}. Pass them inside the 'filters' object, e.g. {"query": "...", "filters": {"observer": "alice", "observed": "bob"}}. ` +
  "Both 'observer'/'observer_id' and 'observed'/'observed_id' are accepted.";

/**
 * The observer's conclusions about the observed peer that best answer the query, best match
 * first (contract §7.5): full text ranked by BM25 over the collection, fused with the nearest in
 * meaning when an embedding model is configured (conclusion-search.ts). Both peers come from
 * the filters (§5.6); the other filters narrow; `distance` bounds the vector half.
 */
export async function queryConclusions(ctx: DomainContext, workspaceId: string, options: ConclusionQuery): Promise<ConclusionRecord[]> {
  const filters = options.filters ?? {};
  const observer = pickPeer(filters, 'observer', 'observer_id');
  const observed = pickPeer(filters, 'observed', 'observed_id');
  if (isFalsy(observer) || isFalsy(observed)) throw invalidInput(options.rules.hints ? MISSING_PEERS_V3 : MISSING_PEERS);
  if (typeof observer !== 'string' || typeof observed !== 'string') {
    // the reference compares the column with whatever was sent and fails in the database
    throw invalidInput('observer and observed must each be a single peer id (a string) for semantic search');
  }
  if (await exceedsTokensOf(options.query, MAX_QUERY_TOKENS)) throw invalidInput(`Query exceeds maximum token limit of ${MAX_QUERY_TOKENS}.`);
  // superseded conclusions keep no vector: with include_superseded they are found by their words
  const scope = { workspaceId, observerId: observer, observedId: observed, includeSuperseded: options.includeSuperseded === true };
  return rankConclusions(
    ctx,
    scope,
    { query: options.query, filters: options.filters, rules: options.rules, limit: options.topK },
    await vectorHalf(ctx, scope, options.query, { maxDistance: options.distance ?? undefined, filters: options.filters, rules: options.rules }),
  );
}

/**
 * The vector half of a hybrid search of the scope (rankConclusions), undefined when semantic
 * search cannot run (no embedding model, or no vector stored yet). `vector`: the query embedded
 * already; the query is embedded once otherwise, when the half is first asked for.
 */
export async function vectorHalf(
  ctx: DomainContext,
  scope: ConclusionScope,
  query: string,
  options: { maxDistance?: number; filters: unknown; rules: ReadRules; vector?: readonly number[] },
): Promise<VectorRanking | undefined> {
  if (embedderOf(ctx) === undefined || (await ctx.store.vectors.dimensions()) === undefined) return undefined;
  return (topK) => nearestConclusions(ctx, scope, query, { ...options, topK });
}

/** The 404 for a conclusion that is missing, deleted or in another workspace (contract §7.5). */
function conclusionNotFound(workspaceId: string, conclusionId: string) {
  return notFound(`Document ${conclusionId} not found or does not belong to workspace ${workspaceId}`);
}

/**
 * One conclusion, current or superseded (not in the v3.0.12 interface; newer official SDKs read
 * it by id): a superseded one answers with its `superseded_at` and `superseded_by`.
 */
export async function getConclusion(ctx: DomainContext, workspaceId: string, conclusionId: string): Promise<ConclusionRecord> {
  const found = await ctx.store.memory.findConclusion(workspaceId, conclusionId, { includeSuperseded: true });
  if (found === undefined) throw conclusionNotFound(workspaceId, conclusionId);
  return found;
}

/** A conclusion of a history with the messages it was drawn from (none for derived or API-made ones). */
export interface HistoryEntry {
  conclusion: ConclusionRecord;
  sourceMessages: MessageRecord[];
}

/**
 * The chain of facts a conclusion belongs to, oldest first: what it superseded (and what those
 * superseded), itself, and the conclusions that replaced it, up to the current one. Each explicit
 * conclusion comes with its source messages, in the order it names them. 404 as for get.
 */
export async function conclusionHistory(ctx: DomainContext, workspaceId: string, conclusionId: string): Promise<HistoryEntry[]> {
  const chain = await ctx.store.memory.conclusionHistory(workspaceId, conclusionId, MAX_HISTORY);
  if (chain === undefined) throw conclusionNotFound(workspaceId, conclusionId);
  const messageIds = [...new Set(chain.flatMap((c) => (c.level === 'explicit' ? (c.sourceIds ?? []) : [])))];
  const messages = new Map((messageIds.length === 0 ? [] : await ctx.store.messages.byIds(workspaceId, messageIds)).map((m) => [m.id, m]));
  return chain.map((conclusion) => ({
    conclusion,
    sourceMessages: conclusion.level === 'explicit' ? (conclusion.sourceIds ?? []).flatMap((id) => messages.get(id) ?? []) : [],
  }));
}

/** Soft-deletes a conclusion: it disappears from every list, query and representation. */
export async function deleteConclusion(ctx: DomainContext, workspaceId: string, conclusionId: string): Promise<void> {
  const deleted = await ctx.store.memory.softDeleteConclusion(workspaceId, conclusionId, ctx.now());
  if (!deleted) throw conclusionNotFound(workspaceId, conclusionId);
}
