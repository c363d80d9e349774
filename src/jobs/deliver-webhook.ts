
import type { Store } from '../storage/store.js';
import type { JobOutcome } from './catalog.js';
import { safePost } from './safe-post.js';
import { canonicalJson, signBody } from './webhook-body.js';
import { type DeliverWebhookPayload } from '../domain/job-kinds.js';

export interface WebhookDeliveryConfig {
  secret: string;
  timeoutMs: number;
  allowPrivate: boolean;
  /** Deliveries to an endpoint one after another in one queue (WEBHOOK_ORDERED; default true). */
  inOrder?: boolean;
}

/**
 * Delivers a job's events to its endpoint, one request each, in order. The body bytes of an event
 * are the same on every attempt, so the signature and the `Idempotency-Key` (the event id) let
 * receivers drop duplicates. An event that fails ends the run: the events before it were
 * delivered and are left out of the next attempt (the outcome's `payload`), so it starts with
 * the one that failed. A run past its time (`signal`: the worker has recorded the timeout and
 * will run the job again) sends nothing more.
 */
export async function deliverWebhook(payload: DeliverWebhookPayload, store: Store, config: WebhookDeliveryConfig, signal?: AbortSignal): Promise<JobOutcome> {
  const endpoint = await store.webhooks.find(payload.endpointId);
  if (endpoint === undefined) return { kind: 'skipped', reason: 'endpoint deleted' };
  // as the reference: without a signing secret nothing is sent
  if (config.secret === '') return { kind: 'skipped', reason: 'WEBHOOK_SECRET is not set' };
  const { events } = payload;
  // the payload of the next attempt once `index` events went out (none changed before the first)
  const left = (index: number) => (index === 0 ? undefined : { ...payload, events: events.slice(index) });
  for (const [index, { eventId, event }] of events.entries()) {
    if (signal?.aborted === true) return { kind: 'failed', error: `stopped before event ${index + 1} of ${events.length}: ${String(signal.reason)}`, retryable: true, payload: left(index) };
    const body = canonicalJson(event);
    const outcome = await safePost(endpoint.url, body, {
      headers: {
        'content-type': 'application/json',
        'x-honcho-signature': signBody(body, config.secret),
        'idempotency-key': eventId,
        'user-agent': 'Engram-Webhooks',
      },
      timeoutMs: config.timeoutMs,
      allowPrivate: config.allowPrivate,
    });
    if (outcome.kind === 'delivered') continue;
    const error = outcome.kind === 'rejected' ? `endpoint answered ${outcome.status}` : outcome.error;
    const retryable = outcome.kind === 'rejected' || outcome.retryable;
    return { kind: 'failed', error: events.length === 1 ? error : `event ${index + 1} of ${events.length}: ${error}`, retryable, payload: left(index) };
  }
  return { kind: 'done' };
}
