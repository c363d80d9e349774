import type { JsonObject, NewJob } from '../storage/store.js';
import type { DomainContext } from './context.js';
import { isoSeconds } from './iso-seconds.js';

/*
 * Background work a change can cause. Each is written as a job row in the same transaction as
 * the change, so a committed change always has its job and a rolled-back one never does.
 */

/** Job kind: remove a deleted session and everything in it. */
export const PURGE_SESSION = 'session.purge';

export interface PurgeSessionPayload extends JsonObject {
  sessionId: string;
}

/** Queues the removal of a session just marked inactive (contract §7.3: purged asynchronously). */
export async function schedulePurgeSession(ctx: DomainContext, workspaceId: string, sessionId: string, now: Date): Promise<void> {
  const { store } = ctx;
  await store.jobs.enqueue(
    [
      {
        id: ctx.newId(),
        kind: PURGE_SESSION,
        workspaceId,
        queueKey: `purge:${workspaceId}`,
        payload: { sessionId },
        maxAttempts: ctx.limits.jobMaxAttempts,
      },
    ],
    now,
  );
}

/** Job kind: deliver one webhook event to one endpoint. */
export const DELIVER_WEBHOOK = 'webhook.deliver';

export type WebhookEventType = 'test.event' | 'queue.empty' | 'message.created';

/** A webhook event as delivered: `{"data", "timestamp", "type"}` (contract §7.6). */
export interface WebhookEvent {
  type: WebhookEventType;
  data: JsonObject;
  /** `YYYY-MM-DDTHH:MM:SSZ` */
  timestamp: string;
}

/** One event for one endpoint; the job's queue key is `webhook:<endpoint id>`, so deliveries to it stay in order. */
export interface DeliverWebhookPayload extends JsonObject {
  endpointId: string;
  /** Same for every endpoint and every retry of one event: receivers drop duplicates by it. */
  eventId: string;
  event: WebhookEvent & JsonObject;
}

/**
 * Queues each event for every webhook endpoint of the workspace, in order; returns how many
 * deliveries were queued. A workspace without endpoints costs one indexed lookup.
 */
export async function emitWebhookEvents(
  ctx: DomainContext,
  workspaceId: string,
  events: { type: WebhookEventType; data: JsonObject }[],
  now: Date,
): Promise<number> {
  const { store } = ctx;
  if (events.length === 0) return 0;
  const endpointIds = await store.webhooks.ids(workspaceId);
  if (endpointIds.length === 0) return 0;
  const jobs: NewJob[] = [];
  for (const { type, data } of events) {
    const eventId = ctx.newId();
    const event = { type, data, timestamp: isoSeconds(now) };
    for (const endpointId of endpointIds) {
      const payload: DeliverWebhookPayload = { endpointId, eventId, event };
      jobs.push({ id: `${eventId}:${endpointId}`, kind: DELIVER_WEBHOOK, workspaceId, queueKey: `webhook:${endpointId}`, payload, maxAttempts: ctx.limits.jobMaxAttempts });
    }
  }
  await store.jobs.enqueue(jobs, now);
  return jobs.length;
}
