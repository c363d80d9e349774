import type { JsonObject, PeerFootprint } from '../../storage/store.js';
import { inTransaction, type DomainContext } from '../context.js';
import { notFound } from '../errors.js';
import { emitWebhookEvents } from '../follow-ups.js';
import { newJob, PURGE_PEER, type PurgePeerPayload } from '../job-kinds.js';
import { summaryQueueKey } from '../scheduling/queue-reasoning.js';
import { SUMMARIZE, type SummarizePayload } from '../job-kinds.js';

/*
 * Deleting a peer (docs/forgetting.md). The request marks the peer and queues a job in one
 * transaction: from that commit the peer is gone from reads, writes naming it get a 409, and
 * background writers (the deriver, dreams, scope copies, cards) drop what they would write for it
 * (PeerStore.keepLivePeers). The job then removes its data in short transactions, each a bounded
 * batch, so it can stop anywhere (a SIGKILL, a timeout) and the next attempt goes on from there:
 * every step selects what is still there. Last, the peer's row, and a `peer.deleted` event.
 */

/** The queue of a workspace's peer deletions: one at a time, in the order asked. */
const queueKey = (workspaceId: string) => `peer-purge:${workspaceId}`;

/** Rows one transaction of the purge deletes. */
export const PEER_PURGE_BATCH = 500;

export interface PeerDeletion {
  dryRun: boolean;
  /** The job that removes the data (absent on a dry run). */
  jobId?: string;
  removed: PeerFootprint;
}

/**
 * Marks the peer and queues its purge, or with `dryRun` only counts what that would remove.
 * 404 when the peer does not exist or is already being deleted.
 */
export async function deletePeer(ctx: DomainContext, workspaceId: string, peerId: string, options: { dryRun: boolean }): Promise<PeerDeletion> {
  const missing = () => notFound(`Peer ${peerId} not found in workspace ${workspaceId}`);
  if (options.dryRun) {
    if ((await ctx.store.peers.find(workspaceId, peerId)) === undefined) throw missing();
    return { dryRun: true, removed: await ctx.store.erasure.peerFootprint(workspaceId, peerId) };
  }
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    if (!(await store.erasure.markPeerDeleting(workspaceId, peerId, now))) throw missing();
    // counted after the mark: writers that kept the peer have committed, later ones write nothing for it
    const removed = await store.erasure.peerFootprint(workspaceId, peerId);
    const jobId = ctx.newId();
    const payload: PurgePeerPayload = { peerId, removed: { ...removed } };
    await store.jobs.enqueue([newJob({ id: jobId, kind: PURGE_PEER, workspaceId, queueKey: queueKey(workspaceId), payload, maxAttempts: ctx.limits.jobMaxAttempts })], now);
    return { dryRun: false, jobId, removed };
  });
}

/**
 * Runs a peer's purge to its end: 'purged' (the row is gone and the event queued), 'absent' (no
 * marked peer of that id: already purged), 'stopped' (`signal` aborted; what went stays gone).
 */
export async function purgeDeletedPeer(
  ctx: DomainContext,
  workspaceId: string,
  payload: PurgePeerPayload,
  options: { signal?: AbortSignal; batch?: number } = {},
): Promise<'purged' | 'absent' | 'stopped'> {
  const { peerId } = payload;
  const batch = options.batch ?? PEER_PURGE_BATCH;
  if (!(await ctx.store.erasure.isDeleting(workspaceId, peerId))) return 'absent';
  const pause = async () => {
    if (options.signal?.aborted) return false;
    await new Promise((resolve) => setImmediate(resolve));
    return true;
  };
  // its messages, one session at a time (the session's row first); a session it no longer has
  // messages in loses its summaries, which quoted them, and gets them written again
  for (let session = await ctx.store.erasure.nextMessageSession(workspaceId, peerId); session !== undefined; session = await ctx.store.erasure.nextMessageSession(workspaceId, peerId)) {
    const sessionId = session;
    await inTransaction(ctx, async (ctx) => {
      const { left } = await ctx.store.erasure.deletePeerMessages(workspaceId, peerId, sessionId, batch);
      if (!left) await rebuildSummaries(ctx, workspaceId, sessionId);
    });
    if (!(await pause())) return 'stopped';
  }
  // conclusions by or about it (scopes' copies first), then the rest
  while ((await inTransaction(ctx, (ctx) => ctx.store.erasure.deletePeerConclusions(workspaceId, peerId, batch))) > 0) {
    if (!(await pause())) return 'stopped';
  }
  while ((await inTransaction(ctx, (ctx) => ctx.store.erasure.deletePeerRest(workspaceId, peerId, batch))) > 0) {
    if (!(await pause())) return 'stopped';
  }
  return inTransaction(ctx, async (ctx) => {
    if (!(await ctx.store.erasure.deletePeerRow(workspaceId, peerId))) return 'absent';
    await emitWebhookEvents(ctx, workspaceId, [{ type: 'peer.deleted', data: { workspace_id: workspaceId, peer_id: peerId, removed: snakeCounts(payload.removed) } }], ctx.now());
    return 'purged';
  });
}

/** Removes a session's summaries; when it had some and still has messages, queues them written again. */
async function rebuildSummaries(ctx: DomainContext, workspaceId: string, sessionId: string): Promise<void> {
  const { store } = ctx;
  if ((await store.erasure.clearSummaries(workspaceId, sessionId)) === 0) return;
  const count = await store.reasoning.sessionMessageCount(workspaceId, sessionId);
  const [last] = await store.messages.recent(workspaceId, sessionId, 1);
  if (count === 0 || last === undefined) return;
  const payload: SummarizePayload = { workspaceId, sessionId, messageId: last.id, messageSeq: count, kinds: ['short', 'long'] };
  await store.jobs.enqueue(
    [{ id: ctx.newId(), kind: SUMMARIZE, workspaceId, queueKey: summaryQueueKey(payload), payload, maxAttempts: ctx.limits.jobMaxAttempts }],
    ctx.now(),
  );
}

export function snakeCounts(removed: PeerFootprint): JsonObject {
  return {
    messages: removed.messages,
    conclusions: removed.conclusions,
    scope_copies: removed.scopeCopies,
    peer_cards: removed.peerCards,
    memberships: removed.memberships,
    metamessages: removed.metamessages,
    summaries: removed.summaries,
  };
}
