import { within, type DomainContext } from '../domain/context.js';
import { PURGE_PEER } from '../domain/job-kinds.js';
import { purgeDeletedPeer } from '../domain/peers/peer-deletion.js';
import type { HandlersOf } from './catalog.js';

/** A peer's purge: no model needed, so every worker runs it. */
export function erasureHandlers(ctx: DomainContext): HandlersOf<typeof PURGE_PEER> {
  return {
    [PURGE_PEER]: {
      async run(payload, job, store, signal) {
        const result = await purgeDeletedPeer(within(ctx, store), job.workspaceId ?? '', payload, { signal });
        if (result === 'stopped') return { kind: 'failed', error: `purge stopped: ${String(signal.reason)}`, retryable: true };
        return result === 'purged' ? { kind: 'done' } : { kind: 'skipped', reason: 'peer already purged' };
      },
      // renewed while it runs: a killed worker's purge is taken over within the lease
      timeoutMs: 10 * 60_000,
      leaseMs: 30_000,
    },
  };
}
