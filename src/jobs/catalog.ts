import { DELIVER_WEBHOOK, PURGE_SESSION, purgeDeletedSession, type DeliverWebhookPayload, type PurgeSessionPayload, type WebhookEventType } from '../domain/follow-ups.js';
import type { JobRecord, JsonObject, Store } from '../storage/store.js';
import { deliverWebhook, type WebhookDeliveryConfig } from './deliver-webhook.js';

/** How a job ended: normal outcomes are values, not exceptions; the worker decides on retries. */
export type JobOutcome =
  | { kind: 'done' }
  | { kind: 'skipped'; reason: string }
  | { kind: 'failed'; error: string; retryable: boolean };

export interface JobHandler<P = unknown> {
  /**
   * Reads a claimed job's stored payload (a stored row is input too): the typed payload, or
   * undefined when it does not fit the kind. The worker dead-letters such a job without running it.
   */
  readPayload(payload: JsonObject): P | undefined;
  /** `signal` aborts when the run is past its time (or the worker stops). */
  run(payload: P, job: JobRecord, store: Store, signal: AbortSignal): Promise<JobOutcome>;
  /** Longest a run may take; also the lease (unless `leaseMs`), after which another worker may take the job. */
  timeoutMs: number;
  /**
   * A lease shorter than the timeout, renewed while the run goes on: a crashed worker's job is
   * taken over after this long, however long a run may take.
   */
  leaseMs?: number;
  /** Most runs of this kind at once in one process (default: the worker's concurrency). */
  concurrency?: number;
  /**
   * Its queues hold many jobs to run one after another (an endpoint's deliveries in order): a
   * run that ends well claims the next job of its queue as it is recorded (Worker.chainLane).
   */
  ordered?: boolean;
}

/** Job kind -> handler. Each handler's payload type is its own, checked by its `readPayload`. */
export type JobCatalog = Record<string, JobHandler<any>>;

/** Declares a handler, tying its payload reader and its run to one payload type. */
export function jobHandler<P>(handler: JobHandler<P>): JobHandler<P> {
  return handler;
}

export const isText = (value: unknown): value is string => typeof value === 'string' && value.length > 0;

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = ['test.event', 'queue.empty', 'message.created', 'peer.deleted'];

export function readDeliverWebhookPayload(payload: JsonObject): DeliverWebhookPayload | undefined {
  const { endpointId, eventId, event } = payload;
  if (!isText(endpointId) || !isText(eventId) || !isObject(event)) return undefined;
  const { type, data, timestamp } = event;
  if (!WEBHOOK_EVENT_TYPES.includes(type as WebhookEventType) || !isObject(data) || !isText(timestamp)) return undefined;
  return { endpointId, eventId, event: { type: type as WebhookEventType, data, timestamp } };
}

export function readPurgeSessionPayload(payload: JsonObject): PurgeSessionPayload | undefined {
  const { sessionId } = payload;
  return isText(sessionId) ? { sessionId } : undefined;
}

/**
 * The handlers that need no model. `deliveries`: most webhook deliveries one process runs at once
 * (default: the worker's concurrency).
 */
export function buildCatalog(webhooks: WebhookDeliveryConfig, deliveries?: { concurrency: number }): JobCatalog {
  return {
    [DELIVER_WEBHOOK]: jobHandler({
      readPayload: readDeliverWebhookPayload,
      run: (payload, _job, store) => deliverWebhook(payload, store, webhooks),
      // the request timeout plus time to look up the endpoint and record the outcome
      timeoutMs: webhooks.timeoutMs + 2_000,
      concurrency: deliveries?.concurrency,
      ordered: webhooks.inOrder ?? true,
    }),
    [PURGE_SESSION]: jobHandler({
      readPayload: readPurgeSessionPayload,
      async run({ sessionId }, job, store, signal) {
        const result = await purgeDeletedSession(store, job.workspaceId ?? '', sessionId, signal);
        if (result === 'stopped') return { kind: 'failed', error: `purge stopped: ${String(signal.reason)}`, retryable: true };
        return result === 'purged' ? { kind: 'done' } : { kind: 'skipped', reason: 'session already gone or active' };
      },
      timeoutMs: 60_000,
    }),
  };
}
