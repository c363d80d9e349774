import type { JsonObject, Page } from './records.js';

/* The work queue: jobs, their listing and counts, and the store that claims and records them. */

export interface NewJob {
  id: string;
  kind: string;
  workspaceId: string | null;
  /** Jobs with one key run one at a time, in the order they were enqueued. */
  queueKey: string;
  payload: JsonObject;
  maxAttempts: number;
  /** When it may run first (default: at once). */
  runAfter?: Date;
  /**
   * Queued only when its queue has no pending job; a pending one is brought forward to
   * `runAfter` instead, never later (JobStore.schedule's rule, for a deriver unit's job).
   */
  scheduled?: boolean;
}

export interface JobRecord {
  id: string;
  kind: string;
  workspaceId: string | null;
  queueKey: string;
  payload: JsonObject;
  /** Attempts so far, this one included. */
  attempts: number;
  maxAttempts: number;
  createdAt: Date;
}

/** The states a workspace's jobs are listed by: `failed` is pending again after a failed attempt. */
export type JobListStatus = 'pending' | 'running' | 'failed' | 'dead';

/** A job as its workspace's list shows it: its state, last error and times. */
export interface JobListing extends JobRecord {
  status: 'pending' | 'running' | 'done' | 'dead';
  lastError: string | null;
  runAfter: Date;
  finishedAt: Date | null;
}

/** Work counted for the queue status: by state, with failed (dead-lettered) work apart from completed. */
export interface WorkCounts {
  completed: number;
  failed: number;
  inProgress: number;
  pending: number;
}

/** Which representation work units a count reads (queue status filters). */
/** The durable work queue. */
export interface JobStore {
  /**
   * Queues the jobs in their order, in one statement (on PostgreSQL the `scheduled` ones'
   * pending jobs are moved in it too): a message write's units, embeddings, summaries and
   * deliveries in one round trip.
   */
  enqueue(jobs: readonly NewJob[], now: Date): Promise<void>;
  /**
   * Leases up to `limit` runnable jobs: pending and due, or running with an expired lease;
   * only of kind `kind` when it is given.
   */
  claim(limit: number, now: Date, leaseUntil: Date, kind?: string): Promise<JobRecord[]>;
  /**
   * Which of `kinds` have a job that may be claimable now (a pending one that is due, or a
   * running one whose lease ran out), in one statement: a worker claims only those kinds.
   */
  claimableKinds(kinds: readonly string[], now: Date): Promise<Set<string>>;
  /**
   * Completes `job` (its queue's head, running) and leases the jobs after it in its queue, in
   * one atomic step: up to `limit` of them (default 1), the unbroken run of the next ones that
   * are of the same kind and claimable now, in queue order (none when the next one is not).
   * The worker's next deliveries to an endpoint then start without a round of claims.
   */
  completeAndClaimNext(job: Pick<JobRecord, 'id' | 'queueKey' | 'kind'>, now: Date, leaseUntil: Date, limit?: number): Promise<JobRecord[]>;
  /**
   * Makes sure a pending job of `job.queueKey` runs by `runAfter`: brings the pending one
   * forward if it is due later, or queues `job` when none is pending (one running is not
   * enough: it may have read its work already).
   */
  schedule(job: NewJob, runAfter: Date, now: Date): Promise<void>;
  /** Moves a running job's lease to `until` (a worker still at work on it). */
  extendLease(id: string, until: Date): Promise<void>;
  complete(id: string, now: Date): Promise<void>;
  /** Completes the jobs `ids` in one statement (a batch's runs that ended well). */
  completeMany(ids: readonly string[], now: Date): Promise<void>;
  /** `payload`: the job's payload from now on (what is left of it), when given. */
  retry(id: string, runAfter: Date, error: string, payload?: JsonObject): Promise<void>;
  deadLetter(id: string, now: Date, error: string, payload?: JsonObject): Promise<void>;
  /** Gives a claimed job back (graceful stop) without counting the attempt. */
  release(id: string): Promise<void>;
  /** Deletes up to `limit` jobs done before `doneBefore` or dead-lettered before `deadBefore`, oldest first: how many. */
  purgeFinished(doneBefore: Date, deadBefore: Date, limit: number): Promise<number>;
  /** Deletes up to `limit` of the finished jobs' counters of hours before `before`'s: how many. */
  purgeCounters(before: Date, limit: number): Promise<number>;
  /**
   * Jobs of some kinds in the workspace by kind and queue key, in one statement: done and dead
   * (failed) in the hour of `finishedSince` or later, from the queues' counters, which only the
   * summary and dream kinds keep (zero for other kinds), running under a live lease, pending
   * (of the kinds in `dueOnly`: only those due by `now`). `session`: only that session's queue
   * (its summaries, `kinds` being the summary kind), read through the session's counters and the
   * queue's open jobs, not the workspace's.
   */
  countsByQueue(
    workspaceId: string,
    kinds: readonly string[],
    now: Date,
    options: { finishedSince: Date; dueOnly?: readonly string[]; session?: { id: string; queueKey: string } },
  ): Promise<(WorkCounts & { kind: string; queueKey: string })[]>;
  /** The pending and running jobs of a queue key, in order. */
  openJobs(queueKey: string): Promise<{ id: string; kind: string; status: 'pending' | 'running'; runAfter: Date; payload: JsonObject }[]>;
  /** Sets the due time (and, when given, the kind) of the queue key's pending jobs of `kind`; returns how many. */
  reschedulePending(queueKey: string, kind: string, runAfter: Date, newKind?: string): Promise<number>;
  /**
   * reschedulePending for several queue keys (their pending jobs of `kind` to `runAfter`), the
   * rows locked in key order: one statement on PostgreSQL. Returns how many moved.
   */
  reschedulePendingOf(queueKeys: readonly string[], kind: string, runAfter: Date): Promise<number>;
  /** Pending and running jobs of a queue key (a running job counts itself). */
  openInQueue(queueKey: string): Promise<number>;
  /** Jobs of every workspace by status: pending, running and dead (not the finished ones kept, a day's worth). */
  countByStatus(): Promise<Record<string, number>>;
  /** Open jobs of every workspace by kind and status (pending or running). */
  countOpenByKind(): Promise<{ kind: string; status: 'pending' | 'running'; count: number }[]>;
  /** One page of the workspace's jobs in `status`, newest first, and how many there are. */
  listOfWorkspace(workspaceId: string, status: JobListStatus, offset: number, limit: number): Promise<Page<JobListing>>;
  /**
   * Puts the workspace's dead job `id` back in its queue, due at `now`, with its attempts counted
   * from zero (its last error kept until an attempt ends); undefined when it has no such dead job.
   */
  reopenDead(workspaceId: string, id: string, now: Date): Promise<JobListing | undefined>;
}
