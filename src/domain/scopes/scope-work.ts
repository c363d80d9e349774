import type { ConclusionRecord } from '../../storage/store.js';
import { inTransaction, type DomainContext } from '../context.js';
import { newJob, SCOPE_BACKFILL, SCOPE_REMOVAL, type ScopeWorkPayload } from '../job-kinds.js';
import { dreamsAvailable, queueDream } from '../scheduling/dream-schedule.js';
import { embedderOf, queueConclusionEmbeddings } from '../search/embeddings.js';
import { emitQueueEmpty } from '../reasoning/queue-empty.js';

/*
 * A scope's background work (shared/reference/scopes.md S5.2, S5.3), on the durable job queue:
 * a backfill copies the explicit conclusions a session held before the scope joined it, without
 * a model; a removal retires what the scope holds from a session it left. A (scope, session)
 * pair's jobs share one queue, so they run one at a time in the order they were asked for.
 */

export const scopeQueueKey = (p: ScopeWorkPayload) => `scope:${JSON.stringify([p.workspaceId, p.scopePeerId, p.sessionId])}`;

/** The scope and session of a scope job's queue key; undefined for other keys. */
export function scopeWorkOfKey(queueKey: string): ScopeWorkPayload | undefined {
  if (!queueKey.startsWith('scope:')) return undefined;
  try {
    const parts: unknown = JSON.parse(queueKey.slice('scope:'.length));
    if (!Array.isArray(parts) || parts.length !== 3 || !parts.every((p) => typeof p === 'string')) return undefined;
    const [workspaceId, scopePeerId, sessionId] = parts as string[];
    return { workspaceId, scopePeerId, sessionId };
  } catch {
    return undefined;
  }
}

/**
 * Queues a backfill or a removal (inside the caller's transaction), unless one of that kind is
 * already pending or running for the pair. A queued backfill's status becomes `pending`.
 */
export async function queueScopeWork(ctx: DomainContext, work: { kind: 'backfill' | 'removal' } & ScopeWorkPayload, now: Date): Promise<boolean> {
  const { store } = ctx;
  const { kind, ...payload } = work;
  const jobKind = kind === 'backfill' ? SCOPE_BACKFILL : SCOPE_REMOVAL;
  const queueKey = scopeQueueKey(payload);
  if ((await store.jobs.openJobs(queueKey)).some((job) => job.kind === jobKind)) return false;
  await store.jobs.enqueue([newJob({ id: ctx.newId(), kind: jobKind, workspaceId: payload.workspaceId, queueKey, payload, maxAttempts: ctx.limits.jobMaxAttempts })], now);
  if (kind === 'backfill') await store.scopes.saveBackfill(payload.workspaceId, payload.scopePeerId, { sessionId: payload.sessionId, state: 'pending', updatedAt: now, docsCopied: null });
  return true;
}

/** How a scope job ended: how many conclusions it copied or retired. */
export type ScopeWorkOutcome = { kind: 'done'; count: number } | { kind: 'skipped'; reason: string };

/** Whether the scope's peer is still an active member of the session (a removal may have come first). */
async function isScopeMember(ctx: DomainContext, payload: ScopeWorkPayload): Promise<boolean> {
  const member = await ctx.store.sessions.findMembership(payload.workspaceId, payload.sessionId, payload.scopePeerId);
  return member !== undefined && member.leftAt === null;
}

/**
 * The backfill: the session's explicit conclusions that peers drew about themselves, each copied
 * once into the scope's collection about that peer (content, level, session, times derived,
 * sources and vector kept; `copiedFrom` naming the original). Copies already live are skipped,
 * so a rerun (a crash after the copies committed) copies nothing twice. Nothing is written when
 * the scope left the session meanwhile. A copied source without a vector is embedded by the
 * embedding job; a manual omni dream per peer copied consolidates the scope's collection.
 */
export async function runScopeBackfill(ctx: DomainContext, payload: ScopeWorkPayload): Promise<ScopeWorkOutcome> {
  try {
    const sources = await ctx.store.memory.ownExplicitConclusions(payload.workspaceId, payload.sessionId);
    const copied = await inTransaction(ctx, async (ctx) => {
      const { store } = ctx;
      const now = ctx.now();
      // the session's row first, kept (not locked) as every background writer keeps it
      // (docs/decisions/0019-background-writers.md), so that message writes never wait for a backfill
      const session = await store.sessions.findAndKeep(payload.workspaceId, payload.sessionId);
      if (session === undefined || !(await isScopeMember(ctx, payload))) return undefined;
      const done = await store.memory.copiedSources(payload.workspaceId, payload.scopePeerId, payload.sessionId);
      // what the deriver gave the scope while it was a member is there already under its own id
      const held = new Set<string>();
      for (const observedId of new Set(sources.map((source) => source.observedId))) {
        const scope = { workspaceId: payload.workspaceId, observerId: payload.scopePeerId, observedId, level: 'explicit', sessionId: payload.sessionId };
        const same = await store.reasoning.liveConclusionsByContent(scope, sources.filter((s) => s.observedId === observedId).map((s) => s.content));
        for (const key of same.keys()) held.add(`${observedId}\u0000${key}`);
      }
      // the scope and the peers copied about, kept to the commit: none for a peer being deleted
      const live = await store.peers.keepLivePeers(payload.workspaceId, [payload.scopePeerId, ...sources.map((source) => source.observedId)]);
      const copies: ConclusionRecord[] = sources
        .filter((source) => live.has(payload.scopePeerId) && live.has(source.observedId))
        .filter((source) => !done.has(source.id) && !held.has(`${source.observedId}\u0000${contentKey(source.content)}`))
        .map((source) => ({ ...source, id: ctx.newId(), observerId: payload.scopePeerId, copiedFrom: source.id }));
      if (copies.length > 0) {
        await store.memory.lockConclusionCounts(copies);
        await store.memory.insertConclusions(copies);
        const unembedded = await store.vectors.copyConclusionVectors(payload.workspaceId, copies.map((copy) => ({ fromId: copy.copiedFrom!, toId: copy.id })));
        // a copy whose original has no vector is embedded (when an embedding model is configured)
        if (embedderOf(ctx) !== undefined) await queueConclusionEmbeddings(ctx, payload.workspaceId, unembedded, now);
        if (dreamsAvailable(ctx)) {
          for (const observedId of new Set(copies.map((copy) => copy.observedId))) {
            await queueDream(ctx, { workspaceId: payload.workspaceId, observerId: payload.scopePeerId, observedId, dreamType: 'omni', sessionId: null, rebuild: false }, now);
          }
        }
      }
      await store.scopes.saveBackfill(payload.workspaceId, payload.scopePeerId, { sessionId: payload.sessionId, state: 'completed', updatedAt: now, docsCopied: copies.length });
      await emitQueueEmpty(ctx, { queueType: 'scope_backfill', workspaceId: payload.workspaceId, sessionId: payload.sessionId, observedId: null, observerId: payload.scopePeerId }, now);
      return copies.length;
    });
    return copied === undefined ? { kind: 'skipped', reason: 'the scope is no longer a member of the session' } : { kind: 'done', count: copied };
  } catch (error) {
    // the status tells the failure; the queue retries the job as any other
    await ctx.store.scopes
      .saveBackfill(payload.workspaceId, payload.scopePeerId, { sessionId: payload.sessionId, state: 'failed', updatedAt: ctx.now(), docsCopied: null })
      .catch(() => undefined);
    throw error;
  }
}

/**
 * The removal: the scope's explicit conclusions stated in the session (copies and live-derived
 * alike) are soft-deleted, then every derived conclusion of the scope drawn from them, until none
 * is left; the session's backfill status is cleared; each collection that lost conclusions gets
 * a card rebuilt from what remains and an omni dream. Messages and the membership row stay.
 */
export async function runScopeRemoval(ctx: DomainContext, payload: ScopeWorkPayload): Promise<ScopeWorkOutcome> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    // the session's row kept first, as the backfill does (a purge may have removed it: nothing left)
    if ((await store.sessions.findAndKeep(payload.workspaceId, payload.sessionId)) === undefined) {
      await store.scopes.deleteBackfill(payload.workspaceId, payload.scopePeerId, payload.sessionId);
      return { kind: 'done', count: 0 };
    }
    const retired = await store.memory.retireSessionConclusions(payload.workspaceId, payload.scopePeerId, payload.sessionId, now);
    await store.scopes.deleteBackfill(payload.workspaceId, payload.scopePeerId, payload.sessionId);
    if (dreamsAvailable(ctx)) {
      for (const observedId of retired.observedIds) {
        const collection = { workspaceId: payload.workspaceId, observerId: payload.scopePeerId, observedId, sessionId: null };
        await queueDream(ctx, { ...collection, dreamType: 'card_refresh', rebuild: true }, now);
        await queueDream(ctx, { ...collection, dreamType: 'omni', rebuild: false }, now);
      }
    }
    await emitQueueEmpty(ctx, { queueType: 'scope_removal', workspaceId: payload.workspaceId, sessionId: payload.sessionId, observedId: null, observerId: payload.scopePeerId }, now);
    return { kind: 'done', count: retired.ids.length };
  });
}

/** How liveConclusionsByContent compares contents: trimmed and lower-cased. */
const contentKey = (content: string) => content.trim().toLowerCase();
