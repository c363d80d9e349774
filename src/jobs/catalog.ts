import type { DomainContext } from '../domain/context.js';
import { purgeDeletedSession } from '../domain/follow-ups.js';
import { DELIVER_WEBHOOK, JOB_KINDS, PAYLOAD_READERS, PURGE_SESSION, WEBHOOK_EVENTS_PER_JOB, type JobKind, type JobPayloads } from '../domain/job-kinds.js';
import type { JobRecord, JsonObject, Store } from '../storage/store.js';
import { deliverWebhook, type WebhookDeliveryConfig } from './deliver-webhook.js';
import { erasureHandlers } from './erasure-jobs.js';
import { reasoningHandlers } from './reasoning-jobs.js';
import { scopeHandlers } from './scope-jobs.js';

/** How a job ended: normal outcomes are values, not exceptions; the worker decides on retries. */
export type JobOutcome =
  | { kind: 'done' }
  | { kind: 'skipped'; reason: string }
  /** `payload`: the job's payload from now on, when the run did part of it (what is left to do). */
  | { kind: 'failed'; error: string; retryable: boolean; payload?: JsonObject };

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
  /**
   * Jobs of this kind run several at a time: a claim takes up to `max` of them, the jobs of one
   * workspace run as one call of `run` (one model request, one write for all of them), and each
   * gets its own outcome. After a claim that came back short of `max`, while a run of the kind
   * is still going on, the kind is claimed again only `gatherMs` after that claim (or once its
   * runs have ended), so that a kind that does not keep up takes the jobs queued meanwhile
   * together; a kind with no run going on claims a new job at once.
   */
  batch?: JobBatch<P>;
}

export interface JobBatch<P = unknown> {
  max: number;
  gatherMs: number;
  /** The outcomes of `items`' jobs, in their order (`signal` as for `run`). */
  run(items: { payload: P; job: JobRecord }[], store: Store, signal: AbortSignal): Promise<JobOutcome[]>;
}

/** Job kind -> handler, for the worker (which runs any kinds it is given; tests give it their own). */
export type JobCatalog = Record<string, JobHandler<any>>;

/** The handler of one of Engram's kinds: its payload's reader is the kind's (domain/job-kinds.ts). */
export type KindHandler<K extends JobKind> = Omit<JobHandler<JobPayloads[K]>, 'readPayload'>;

/**
 * A handler for every kind; undefined where this process cannot run the kind (model work without
 * a model): such jobs stay queued for a process that can. A kind left out does not compile.
 */
export type KindHandlers = { [K in JobKind]: KindHandler<K> | undefined };

/** Handlers of some kinds, each present. */
export type HandlersOf<K extends JobKind> = { [P in K]: KindHandler<P> };

/** The worker's catalog of the handlers given, each with its kind's payload reader. */
export function catalogOf(handlers: Partial<KindHandlers>): JobCatalog {
  const catalog: JobCatalog = {};
  for (const kind of JOB_KINDS) {
    const handler = handlers[kind];
    if (handler !== undefined) catalog[kind] = { ...handler, readPayload: PAYLOAD_READERS[kind] };
  }
  return catalog;
}

/**
 * Every kind's handler for a process: deliveries and purges, scope work, and (with a model)
 * reasoning. With model work beside them, deliveries take at most `share` of the process's runs,
 * as each reasoning kind does.
 */
export function buildJobCatalog(ctx: DomainContext, webhooks: WebhookDeliveryConfig, share: { concurrency: number }): JobCatalog {
  const handlers: KindHandlers = {
    ...followUpHandlers(webhooks, ctx.reasoning === undefined ? undefined : share),
    ...scopeHandlers(ctx),
    ...erasureHandlers(ctx),
    ...reasoningHandlers(ctx, share),
  };
  return catalogOf(handlers);
}

/**
 * The follow-ups of changes (domain/follow-ups.ts), which need no model. `deliveries`: most
 * webhook deliveries one process runs at once (default: the worker's concurrency).
 */
export function followUpHandlers(webhooks: WebhookDeliveryConfig, deliveries?: { concurrency: number }): HandlersOf<typeof DELIVER_WEBHOOK | typeof PURGE_SESSION> {
  return {
    [DELIVER_WEBHOOK]: {
      run: (payload, _job, store, signal) => deliverWebhook(payload, store, webhooks, signal),
      // a job's events one request after another, each within the request timeout, plus time to
      // look up the endpoint and record the outcome; its lease is one request's, renewed while
      // the run goes on, so a crashed worker's deliveries are taken over as soon as before
      timeoutMs: WEBHOOK_EVENTS_PER_JOB * webhooks.timeoutMs + 2_000,
      leaseMs: webhooks.timeoutMs + 2_000,
      concurrency: deliveries?.concurrency,
      ordered: webhooks.inOrder ?? true,
    },
    [PURGE_SESSION]: {
      async run({ sessionId }, job, store, signal) {
        const result = await purgeDeletedSession(store, job.workspaceId ?? '', sessionId, signal);
        if (result === 'stopped') return { kind: 'failed', error: `purge stopped: ${String(signal.reason)}`, retryable: true };
        return result === 'purged' ? { kind: 'done' } : { kind: 'skipped', reason: 'session already gone or active' };
      },
      timeoutMs: 60_000,
    },
  };
}
