import { within, type DomainContext } from '../domain/context.js';
import { PURGE_PEER, purgeDeletedPeer, type PurgePeerPayload } from '../domain/peers/peer-deletion.js';
import type { JsonObject, PeerFootprint } from '../storage/store.js';
import { isText, jobHandler, type JobCatalog } from './catalog.js';

const COUNTS: readonly (keyof PeerFootprint)[] = ['messages', 'conclusions', 'scopeCopies', 'peerCards', 'memberships', 'metamessages', 'summaries'];

/** A stored payload of a peer's purge, checked when claimed. */
export function readPurgePeerPayload(payload: JsonObject): PurgePeerPayload | undefined {
  const { peerId, removed } = payload;
  if (!isText(peerId) || typeof removed !== 'object' || removed === null || Array.isArray(removed)) return undefined;
  const counts = removed as Record<string, unknown>;
  if (!COUNTS.every((key) => Number.isSafeInteger(counts[key]) && (counts[key] as number) >= 0)) return undefined;
  return { peerId, removed: Object.fromEntries(COUNTS.map((key) => [key, counts[key]])) as PurgePeerPayload['removed'] };
}

/** A peer's purge: no model needed, so every worker runs it. */
export function erasureHandlers(ctx: DomainContext): JobCatalog {
  return {
    [PURGE_PEER]: jobHandler({
      readPayload: readPurgePeerPayload,
      async run(payload, job, store, signal) {
        const result = await purgeDeletedPeer(within(ctx, store), job.workspaceId ?? '', payload, { signal });
        if (result === 'stopped') return { kind: 'failed', error: `purge stopped: ${String(signal.reason)}`, retryable: true };
        return result === 'purged' ? { kind: 'done' } : { kind: 'skipped', reason: 'peer already purged' };
      },
      // renewed while it runs: a killed worker's purge is taken over within the lease
      timeoutMs: 10 * 60_000,
      leaseMs: 30_000,
    }),
  };
}
