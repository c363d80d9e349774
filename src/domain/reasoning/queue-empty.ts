import type { DomainContext } from '../context.js';
import { emitWebhookEvents } from '../follow-ups.js';

/**
 * Queues a `queue.empty` webhook event (contract §7.6) for a work unit whose last open work was
 * just done, inside the transaction of that work's final write: the event is sent exactly when
 * the drain is committed. `observer` is null for representation units (the reference's shape).
 */
export async function emitQueueEmpty(
  ctx: DomainContext,
  unit: { queueType: 'representation' | 'summary' | 'dream' | 'scope_backfill' | 'scope_removal'; workspaceId: string; sessionId: string | null; observedId: string | null; observerId?: string | null },
  now: Date,
): Promise<number> {
  return emitWebhookEvents(
    ctx,
    unit.workspaceId,
    [
      {
        type: 'queue.empty',
        data: {
          observed: unit.observedId,
          observer: unit.observerId ?? null,
          queue_type: unit.queueType,
          session_id: unit.sessionId,
          workspace_id: unit.workspaceId,
        },
      },
    ],
    now,
  );
}
