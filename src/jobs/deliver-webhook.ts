
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
 * Delivers one event to one endpoint. The body bytes are the same on every attempt, so the
 * signature and the `Idempotency-Key` (the event id) let receivers drop duplicates.
 */
export async function deliverWebhook(payload: DeliverWebhookPayload, store: Store, config: WebhookDeliveryConfig): Promise<JobOutcome> {
  const endpoint = await store.webhooks.find(payload.endpointId);
  if (endpoint === undefined) return { kind: 'skipped', reason: 'endpoint deleted' };
  // as the reference: without a signing secret nothing is sent
  if (config.secret === '') return { kind: 'skipped', reason: 'WEBHOOK_SECRET is not set' };
  const body = canonicalJson(payload.event);
  const outcome = await safePost(endpoint.url, body, {
    headers: {
      'content-type': 'application/json',
      'x-honcho-signature': signBody(body, config.secret),
      'idempotency-key': payload.eventId,
      'user-agent': 'Engram-Webhooks',
    },
    timeoutMs: config.timeoutMs,
    allowPrivate: config.allowPrivate,
  });
  switch (outcome.kind) {
    case 'delivered':
      return { kind: 'done' };
    case 'rejected':
      return { kind: 'failed', error: `endpoint answered ${outcome.status}`, retryable: true };
    case 'failed':
      return { kind: 'failed', error: outcome.error, retryable: outcome.retryable };
  }
}
