import type { JobRecord } from '../storage/store.js';
import type { JobHandler, JobOutcome } from './catalog.js';

/* One attempt at a job: how it ended, what is recorded, when it is tried again. */

/**
 * How a run ended as the worker records it: the handler's outcome, or `interrupted` when the
 * store failed under it (the attempt is given back, not counted).
 */
export type RunOutcome = JobOutcome | { kind: 'interrupted' };

/** An outcome the store could not take while it was unavailable, kept until it can. */
export interface UnrecordedOutcome {
  job: JobRecord;
  outcome: RunOutcome;
  /** When the job's lease ends; after that another worker may run it again, so it is dropped. */
  leaseEnds: number;
}

/** How an attempt ended for its job: done, skipped, to be retried, dead-lettered, or given back unfinished. */
export type AttemptOutcome = 'done' | 'skipped' | 'retried' | 'dead' | 'interrupted';

export function attemptOutcome(job: JobRecord, outcome: RunOutcome): AttemptOutcome {
  if (outcome.kind !== 'failed') return outcome.kind;
  return !outcome.retryable || job.attempts >= job.maxAttempts ? 'dead' : 'retried';
}

/** The handler's reading of a claimed job's payload; undefined when it is not an object or does not fit. */
export function readPayload(handler: JobHandler<unknown>, job: JobRecord): unknown {
  const stored: unknown = job.payload;
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) return undefined;
  try {
    return handler.readPayload(job.payload);
  } catch {
    return undefined;
  }
}

/** Delay before attempt `attempts + 1`: doubling from the base, capped, with jitter (50-100%). */
export function retryDelay(attempts: number, baseMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(ceiling * (0.5 + random() / 2));
}
