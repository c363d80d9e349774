import { DELIVER_WEBHOOK, PURGE_SESSION, type PurgeSessionPayload } from '../domain/follow-ups.js';
import type { JobRecord, Store } from '../storage/store.js';
import { deliverWebhook, type WebhookDeliveryConfig } from './deliver-webhook.js';

/** How a job ended: normal outcomes are values, not exceptions; the worker decides on retries. */
export type JobOutcome =
  | { kind: 'done' }
  | { kind: 'skipped'; reason: string }
  | { kind: 'failed'; error: string; retryable: boolean };

export interface JobHandler {
  /** `signal` aborts when the run is past its time (or the worker stops). */
  run(job: JobRecord, store: Store, signal: AbortSignal): Promise<JobOutcome>;
  /** Longest a run may take; also the lease (unless `leaseMs`), after which another worker may take the job. */
  timeoutMs: number;
  /**
   * A lease shorter than the timeout, renewed while the run goes on: a crashed worker's job is
   * taken over after this long, however long a run may take.
   */
  leaseMs?: number;
  /** Most runs of this kind at once in one process (default: the worker's concurrency). */
  concurrency?: number;
}

export type JobCatalog = Record<string, JobHandler>;

export function buildCatalog(webhooks: WebhookDeliveryConfig): JobCatalog {
  return {
    [DELIVER_WEBHOOK]: {
      run: (job, store) => deliverWebhook(job, store, webhooks),
      // the request timeout plus time to look up the endpoint and record the outcome
      timeoutMs: webhooks.timeoutMs + 2_000,
    },
    [PURGE_SESSION]: {
      async run(job, store) {
        const { sessionId } = job.payload as PurgeSessionPayload;
        const purged = await store.purgeInactiveSession(job.workspaceId ?? '', sessionId);
        return purged ? { kind: 'done' } : { kind: 'skipped', reason: 'session already gone or active' };
      },
      timeoutMs: 60_000,
    },
  };
}
