import { isStoreUnavailable, type JobRecord, type Store } from '../storage/store.js';
import type { JobBatch, JobCatalog, JobHandler, JobOutcome } from './catalog.js';
import { attemptOutcome, readPayload, retryDelay, type AttemptOutcome, type RunOutcome, type UnrecordedOutcome } from './attempts.js';
import { removeOldWork } from './cleanup.js';
import { StoreOutage } from './store-outage.js';

export interface WorkerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface WorkerOptions {
  /** Jobs run at once by this process. */
  concurrency: number;
  /** Pause between polls when the queue had nothing to run. */
  pollMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  logger: WorkerLogger;
  now?: () => Date;
  random?: () => number;
  /** How long finished jobs are kept before they are removed. */
  keepFinishedMs?: number;
  /** How long dead-lettered jobs (and their last error) are kept before they are removed. */
  keepDeadMs?: number;
  /** Told of every attempt's end (metrics); `durationMs` is the run's time, 0 for a job never run. */
  onAttempt?: (event: { kind: string; outcome: AttemptOutcome; durationMs: number }) => void;
}

/**
 * Jobs of an ordered queue that a run claims at once after the one it ran (chainLane): they run
 * one after another with no claim between them, each one's completion written beside the next
 * run.
 */
export const CHAIN_LENGTH = 16;

/** Between the vector index's upkeep checks while no step is due (Worker.upkeepNow). */
export const UPKEEP_EVERY_MS = 5_000;
/** The upkeep's steps in the job attempts' metrics (`engram_job_attempts_total{kind}`). */
export const UPKEEP_KIND = 'vectors.upkeep';

/** Their lease, in leases of one job: each of them starts only while one run's time is left of it. */
const CHAIN_LEASE_FACTOR = 2;

/** The jobs of one kind, claimed on their own (Worker.lanes). */
interface Lane {
  kind: string;
  leaseMs: number;
  concurrency: number;
  running: Set<string>;
  quietUntil: number;
  woken: number;
  /** Its handler's batch (JobHandler.batch), if it runs its jobs several at a time. */
  batch: JobBatch | undefined;
  /** A batch lane whose last claim came back short is not claimed again before this (gatherMs). */
  gatherUntil: number;
}

/**
 * Claims jobs from the store, runs them through the catalog, and records each outcome:
 * done, retried later with backoff, or dead-lettered once its attempts are used up. Several
 * workers (in one or many processes) can share a queue; a job whose worker died is taken
 * again when its lease runs out.
 */
export class Worker {
  private readonly active = new Map<string, Promise<void>>();
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private poked = false;
  private unlisten: (() => void) | undefined;
  private lastPurge = 0;
  /** The purge of old jobs under way, if any (stop waits for its current batch). */
  private purging: Promise<void> | undefined;
  /** The vector index's upkeep step under way, if any (stop cancels it), and when the next may start. */
  private upkeeping: { done: Promise<void>; abort: AbortController } | undefined;
  private nextUpkeep = 0;
  private readonly now: () => Date;
  private readonly random: () => number;
  /**
   * Kinds claimed on their own, each with its lease (its handler's timeout) and its share of runs.
   * `quietUntil`: a lane whose claim came back empty although a job of its kind was due (it waits
   * behind a running head of its queue: a deriver unit's next batch while the model answers the
   * last) is not claimed again until one of its own jobs ends here, a job is queued here, or a
   * poll interval has passed; rounds that other kinds' jobs set off would walk its queues for
   * nothing. `woken` counts those ends and queuings: one during a claim makes its empty answer
   * stale (the claim may have read the queue before the head's end was recorded), so the lane
   * does not go quiet on it.
   */
  private readonly lanes: Lane[];
  /** Set while the store is unavailable: claims back off and the state is reported as paused. */
  private readonly outage: StoreOutage;
  private readonly unrecorded: UnrecordedOutcome[] = [];
  private readonly leaseEnds = new Map<string, number>();
  /** Jobs claimed to run after the one before them in their queue, not started yet (launch). */
  private readonly followers = new Set<string>();
  /** Completions written beside the next run (completeAside). */
  private readonly asides = new Set<Promise<void>>();
  /** The jobs of each batch run under way, by the run's key in `active` (its first job's id). */
  private readonly batches = new Map<string, JobRecord[]>();

  constructor(
    private readonly store: Store,
    private readonly catalog: JobCatalog,
    private readonly options: WorkerOptions,
  ) {
    this.now = options.now ?? (() => new Date());
    this.random = options.random ?? Math.random;
    this.outage = new StoreOutage(options.logger, this.now);
    // One lane per kind, so a webhook (seconds) never waits behind model work (minutes) and a
    // crashed worker's job is taken over after its own kind's lease. Only kinds this process has
    // a handler for are claimed: a process without a model (or of an older version) leaves the
    // reasoning jobs to the processes that can run them, instead of failing them.
    this.lanes = Object.keys(catalog).map((kind) => ({
      kind,
      leaseMs: catalog[kind].leaseMs ?? catalog[kind].timeoutMs,
      concurrency: Math.min(catalog[kind].concurrency ?? options.concurrency, options.concurrency),
      running: new Set<string>(),
      quietUntil: 0,
      woken: 0,
      batch: catalog[kind].batch,
      gatherUntil: 0,
    }));
  }

  /**
   * Starts the loop. Jobs queued through the same store (by this process's requests) wake it
   * at once; jobs queued by other processes are found at the next poll.
   */
  start(): void {
    this.unlisten ??= this.store.onJobsQueued(() => this.notify());
    this.loopDone ??= this.loop();
  }

  /** running, paused while the store is unavailable, or stopped. */
  status(): { state: 'running' | 'paused' | 'stopped'; since?: string } {
    if (this.stopping) return { state: 'stopped' };
    if (this.outage.since !== undefined) return { state: 'paused', since: this.outage.since.toISOString() };
    return { state: 'running' };
  }

  /** Polls at once instead of after the idle pause (e.g. right after enqueuing). */
  notify(): void {
    this.poked = true;
    for (const lane of this.lanes) this.wakeLane(lane);
    this.wake?.();
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      // a notify from here on (during the claim) cancels the next pause
      this.poked = false;
      // the runs claimed this round: a job alone, or a batch lane's jobs of one workspace
      const claimed: JobRecord[][] = [];
      // a lane's claim came back with all it asked for: more of its jobs may be due at once
      let more = false;
      const free = this.options.concurrency - this.active.size;
      if (free > 0) {
        try {
          const now = this.now();
          await this.recordLeftovers(now);
          // one statement tells which lanes with room have work; only those claim
          const open = this.lanes.filter((lane) => lane.running.size < lane.concurrency && lane.quietUntil <= now.getTime() && !this.gathering(lane, now.getTime())).map((lane) => lane.kind);
          const ready = await this.store.jobs.claimableKinds(open, now);
          for (const lane of this.lanes) {
            const room = Math.min(lane.concurrency - lane.running.size, this.options.concurrency - this.active.size - claimed.length);
            if (room <= 0 || !ready.has(lane.kind) || this.stopping) continue;
            const woken = lane.woken;
            const asked = lane.batch?.max ?? room;
            const jobs = await this.store.jobs.claim(asked, now, new Date(now.getTime() + lane.leaseMs), lane.kind);
            if (jobs.length >= asked) more = true;
            if (jobs.length === 0 && lane.woken === woken) lane.quietUntil = now.getTime() + this.options.pollMs;
            if (lane.batch !== undefined && jobs.length > 0 && jobs.length < lane.batch.max) lane.gatherUntil = now.getTime() + lane.batch.gatherMs;
            for (const job of jobs) this.leaseEnds.set(job.id, now.getTime() + lane.leaseMs);
            const runs = lane.batch === undefined ? jobs.map((job) => [job]) : byWorkspace(jobs);
            // a batch of several workspaces' jobs is several runs: those past the lane's room go back
            await this.giveBack(runs.splice(room).flat());
            for (const run of runs) {
              lane.running.add(run[0].id);
              claimed.push(run);
            }
          }
          this.purgeNow(now);
          this.upkeepNow(now);
          this.outage.ended();
        } catch (error) {
          if (isStoreUnavailable(error)) {
            this.outage.failed(error);
            await this.pause(this.outage.backoff(this.options.pollMs), true);
            continue;
          }
          this.options.logger.error({ err: error }, 'claiming jobs failed');
        }
        if (this.stopping) {
          // stop() began during this round: what it claimed is given back unrun
          await this.giveBack(claimed.flat());
          break;
        }
        for (const run of claimed) {
          const handler = Object.hasOwn(this.catalog, run[0].kind) ? this.catalog[run[0].kind] : undefined;
          if (handler?.batch === undefined) this.launch(run[0]);
          else this.launchBatch(run, handler, handler.batch);
        }
      }
      // Another round at once only when a claim may have left due jobs behind (it came back
      // full). After short claims every due job was taken: what comes due next is a job queued
      // here or one ending (each cuts the pause short, also when it came during this round) or
      // another process's job, found at the poll. An immediate round would find nothing but
      // cost a probe of the lanes, often a walk of a lane's queues too
      if (claimed.length === 0 || !more || this.active.size >= this.options.concurrency) await this.pause(this.untilGathered());
    }
  }

  /** Releases jobs claimed but not started (their lanes forget them). */
  private async giveBack(jobs: JobRecord[]): Promise<void> {
    for (const job of jobs) {
      this.leaseEnds.delete(job.id);
      this.followers.delete(job.id);
      for (const lane of this.lanes) lane.running.delete(job.id);
      await this.store.jobs.release(job.id).catch(() => undefined);
    }
  }

  /**
   * Runs a claimed job (counted in `active` and its lane's `running` already, or here); then, of
   * an ordered kind, `followers`: the jobs after it in its queue, claimed with it (chainLane).
   */
  private launch(job: JobRecord, followers: JobRecord[] = []): void {
    this.followers.delete(job.id);
    for (const follower of followers) this.followers.add(follower.id);
    const finish = (chained: boolean) => {
      this.active.delete(job.id);
      for (const lane of this.lanes) {
        // its queue's head moved: the job behind it may be claimable now (unless this run
        // claimed it itself and runs it in its place)
        if (lane.running.delete(job.id) && !chained) this.wakeLane(lane);
      }
      if (chained) return;
      // a round already under way may have claimed before this job was recorded: the
      // next pause returns at once, as after a notify, instead of waiting a poll interval
      this.poked = true;
      this.wake?.();
    };
    this.active.set(job.id, this.run(job, followers).then(finish, () => finish(false)));
  }

  /**
   * The lane in which a finished job of an ordered kind may go on with the next job of its
   * queue: the lane and the worker have another run free besides it, so taking the next job
   * in its place never keeps a run from another queue's head (those are claimed into the free
   * run, oldest first, as before). With every run busy the job's end goes through a round of
   * claims instead, which hands the run to the oldest head of any queue.
   */
  private chainLane(job: JobRecord, handler: JobHandler | undefined): Lane | undefined {
    if (handler?.ordered !== true || this.stopping || this.active.size >= this.options.concurrency) return undefined;
    const lane = this.lanes.find((candidate) => candidate.kind === job.kind);
    return lane !== undefined && lane.running.size < lane.concurrency ? lane : undefined;
  }

  /**
   * A batch lane waiting for more jobs before its next claim: its last claim came back short
   * less than `gatherMs` ago and a run of it is still going on. An idle lane claims at once, so
   * waiting costs nothing while the kind keeps up; the jobs queued while a run goes on are taken
   * together once the gathering time is over or the lane has become idle.
   */
  private gathering(lane: Lane, now: number): boolean {
    return lane.gatherUntil > now && lane.running.size > 0;
  }

  /** The pause before the next round: the poll interval, or less when a batch lane's gathering ends sooner. */
  private untilGathered(): number {
    const now = this.now().getTime();
    let ms = this.options.pollMs;
    for (const lane of this.lanes) if (this.gathering(lane, now)) ms = Math.min(ms, lane.gatherUntil - now);
    return ms;
  }

  /** Runs a batch lane's claimed jobs of one workspace as one run (counted in `active` by its first job). */
  private launchBatch(jobs: JobRecord[], handler: JobHandler, batch: JobBatch): void {
    const key = jobs[0].id;
    this.batches.set(key, jobs);
    const finish = () => {
      this.active.delete(key);
      this.batches.delete(key);
      for (const lane of this.lanes) if (lane.running.delete(key)) this.wakeLane(lane);
      this.poked = true;
      this.wake?.();
    };
    this.active.set(key, this.runBatch(jobs, handler, batch).then(finish, finish));
  }

  /**
   * Runs a batch: the jobs whose payload does not fit their kind are dead-lettered unrun, the
   * others go to the batch's `run` together and are recorded by their own outcomes, those that
   * ended well completed in one statement.
   */
  private async runBatch(jobs: JobRecord[], handler: JobHandler, batch: JobBatch): Promise<void> {
    const items: { payload: unknown; job: JobRecord }[] = [];
    for (const job of jobs) {
      const payload: unknown = readPayload(handler, job);
      if (payload !== undefined) {
        items.push({ payload, job });
        continue;
      }
      const outcome = invalidPayload(job);
      this.options.onAttempt?.({ kind: job.kind, outcome: attemptOutcome(job, outcome), durationMs: 0 });
      await this.settle(job, outcome);
    }
    if (items.length === 0) return;
    const started = performance.now();
    const outcomes = await this.attempt(
      handler,
      items.map((item) => item.job),
      (signal) => batch.run(items, this.store, signal),
    );
    const durationMs = performance.now() - started;
    items.forEach(({ job }, index) => this.options.onAttempt?.({ kind: job.kind, outcome: attemptOutcome(job, outcomes[index]), durationMs }));
    const wentWell = items.filter((_, index) => outcomes[index].kind === 'done' || outcomes[index].kind === 'skipped').map((item) => item.job);
    if (wentWell.length > 0) {
      try {
        await this.store.jobs.completeMany(
          wentWell.map((job) => job.id),
          this.now(),
        );
      } catch (error) {
        wentWell.forEach((job) => this.recordFailed(job, { kind: 'done' }, error));
      } finally {
        for (const job of wentWell) this.leaseEnds.delete(job.id);
      }
    }
    for (const [index, { job }] of items.entries()) {
      const outcome = outcomes[index];
      if (outcome.kind === 'skipped') this.options.logger.info({ job: job.id, kind: job.kind, attempt: job.attempts, reason: outcome.reason }, 'job skipped');
      else if (outcome.kind !== 'done') await this.settle(job, outcome);
    }
  }

  /**
   * Calls `call` for `jobs` within their handler's time, their leases renewed meanwhile: past
   * it the call is told to stop (a model request is aborted) and every job failed, to be tried
   * again. The store failing under the call says nothing about the jobs: their attempts are
   * given back (interrupted); any other exception fails each of them.
   */
  private async attempt(handler: JobHandler, jobs: JobRecord[], call: (signal: AbortSignal) => Promise<JobOutcome[]>): Promise<RunOutcome[]> {
    const every = (outcome: RunOutcome) => jobs.map(() => outcome);
    let timer: NodeJS.Timeout | undefined;
    const heartbeats = jobs.map((job) => this.keepLeased(job, handler));
    const abort = new AbortController();
    const timeout = new Promise<RunOutcome[]>((resolve) => {
      timer = setTimeout(() => {
        abort.abort(new Error(`timed out after ${handler.timeoutMs} ms`));
        resolve(every({ kind: 'failed', error: `timed out after ${handler.timeoutMs} ms`, retryable: true }));
      }, handler.timeoutMs);
    });
    try {
      const outcomes = await Promise.race([call(abort.signal), timeout]);
      return outcomes.length === jobs.length ? outcomes : every({ kind: 'failed', error: `the run told ${outcomes.length} outcomes for ${jobs.length} jobs`, retryable: true });
    } catch (error) {
      if (isStoreUnavailable(error)) {
        this.outage.failed(error);
        return every({ kind: 'interrupted' });
      }
      return every({ kind: 'failed', error: error instanceof Error ? error.message : String(error), retryable: true });
    } finally {
      clearTimeout(timer);
      for (const heartbeat of heartbeats) clearInterval(heartbeat);
    }
  }

  /** Ends a lane's quiet time (see `lanes`). */
  private wakeLane(lane: Lane): void {
    lane.quietUntil = 0;
    lane.woken++;
  }

  /** Waits `ms`; a notify cuts it short unless `onlyStop` (then only stop() does). */
  private pause(ms = this.options.pollMs, onlyStop = false): Promise<void> {
    // a stop during the round found no pause to wake: the loop ends instead of sleeping a poll
    if (this.stopping || (this.poked && !onlyStop)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = onlyStop ? () => (this.stopping ? done() : undefined) : done;
    });
  }

  /**
   * Writes the outcomes the store could not take while it was down, before claiming more.
   * One whose lease has run out is dropped: the job runs again (delivery is at least once).
   */
  private async recordLeftovers(now: Date): Promise<void> {
    while (this.unrecorded.length > 0) {
      const { job, outcome, leaseEnds } = this.unrecorded[0];
      if (leaseEnds > now.getTime()) {
        try {
          await this.record(job, outcome);
        } catch (error) {
          if (isStoreUnavailable(error)) throw error;
          this.options.logger.error({ err: error, job: job.id }, 'recording a job outcome failed');
        }
      }
      this.unrecorded.shift();
    }
  }

  /** Once a minute, the cleanup of old work (jobs/cleanup.ts), beside the claims. */
  private purgeNow(now: Date): void {
    if (this.purging !== undefined || now.getTime() - this.lastPurge < 60_000) return;
    this.lastPurge = now.getTime();
    this.purging = (async () => {
      try {
        await removeOldWork(this.store, now, this.options, () => this.stopping);
      } catch (error) {
        // tried again at the next minute
        if (!isStoreUnavailable(error)) this.options.logger.error({ err: error }, 'purging finished jobs failed');
      } finally {
        this.purging = undefined;
      }
    })();
  }

  /**
   * The vector index's upkeep (VectorIndex.upkeep: on PostgreSQL, the newest message vectors
   * indexed at once, parts merged), beside the claims: one step at a time, the next at the next
   * round while steps are due, else after UPKEEP_EVERY_MS. Every worker tries; the store lets
   * one at a time work.
   */
  private upkeepNow(now: Date): void {
    const vectors = this.store.vectors;
    if (vectors.upkeep === undefined || this.upkeeping !== undefined || now.getTime() < this.nextUpkeep) return;
    const abort = new AbortController();
    const done = (async () => {
      let again = false;
      const started = performance.now();
      // counted with the job attempts (kind UPKEEP_KIND): a step done, put off (skipped), failed
      // (retried at a later round) or cancelled by a stop or an outage (interrupted); a round
      // with nothing due is not an attempt
      const counted = (outcome: AttemptOutcome) => this.options.onAttempt?.({ kind: UPKEEP_KIND, outcome, durationMs: performance.now() - started });
      try {
        const step = await vectors.upkeep!(abort.signal);
        if (step?.kind === 'busy') {
          counted('skipped');
          this.options.logger.info({ waitedMs: Math.round(step.waitedMs) }, 'vector index upkeep put off: its lock was busy');
        } else if (step !== undefined) {
          again = true;
          counted('done');
          this.options.logger.info({ part: step.part.name, rows: step.part.rows, level: step.part.level, from: step.from, ms: Math.round(step.ms), lockedMs: Math.round(step.lockedMs) }, `message vectors ${step.kind}`);
        }
      } catch (error) {
        // a stop cancels the step; an outage is the claims' to report
        const interrupted = abort.signal.aborted || isStoreUnavailable(error);
        counted(interrupted ? 'interrupted' : 'retried');
        if (!interrupted) this.options.logger.error({ err: error }, 'vector index upkeep failed');
      } finally {
        this.nextUpkeep = now.getTime() + (again ? 0 : UPKEEP_EVERY_MS);
        this.upkeeping = undefined;
      }
    })();
    this.upkeeping = { done, abort };
  }

  /**
   * Runs `job` and records its outcome; true when the next job of its queue was started in its
   * place (one of `followers`, or one claimed as its outcome was recorded).
   */
  private async run(job: JobRecord, followers: JobRecord[]): Promise<boolean> {
    // own keys only: a stored kind such as `constructor` must not find an Object.prototype member
    const handler = Object.hasOwn(this.catalog, job.kind) ? this.catalog[job.kind] : undefined;
    let outcome: RunOutcome;
    let started: number | undefined;
    // checked before the run: a payload that does not fit its kind can never succeed
    const payload: unknown = handler === undefined ? undefined : readPayload(handler, job);
    if (handler === undefined) {
      outcome = { kind: 'failed', error: `no handler for job kind ${job.kind}`, retryable: false };
    } else if (payload === undefined) {
      outcome = invalidPayload(job);
    } else {
      started = performance.now();
      [outcome] = await this.attempt(handler, [job], async (signal) => [await handler.run(payload, job, this.store, signal)]);
    }
    this.options.onAttempt?.({ kind: job.kind, outcome: attemptOutcome(job, outcome), durationMs: started === undefined ? 0 : performance.now() - started });
    if (followers.length > 0) return this.goOn(job, outcome, followers, handler);
    const chain = this.chainLane(job, handler);
    const next = await this.settle(job, outcome, chain);
    if (next.length === 0 || chain === undefined) return false;
    if (this.stopping) {
      // stop() may have counted the running jobs already: give the next ones back unrun
      await this.giveBack(next);
      return false;
    }
    chain.running.add(next[0].id);
    this.launch(next[0], next.slice(1));
    return true;
  }

  /** Records how a run ended (record), the store's failure to take it handled; the jobs claimed after it, if any. */
  private async settle(job: JobRecord, outcome: RunOutcome, chain?: Lane): Promise<JobRecord[]> {
    try {
      return await this.record(job, outcome, chain);
    } catch (error) {
      this.recordFailed(job, outcome, error);
      return [];
    } finally {
      this.leaseEnds.delete(job.id);
    }
  }

  /** A job's outcome the store did not take. */
  private recordFailed(job: JobRecord, outcome: RunOutcome, error: unknown, leaseEnds = this.leaseEnds.get(job.id) ?? 0): void {
    if (isStoreUnavailable(error)) {
      // kept and written once the store answers again (before the lease runs out)
      this.outage.failed(error);
      this.unrecorded.push({ job, outcome, leaseEnds });
    } else {
      // the lease runs out and the job is taken again: at-least-once
      this.options.logger.error({ err: error, job: job.id }, 'recording a job outcome failed');
    }
  }

  /**
   * After a job that has `followers` (claimed with it, next in its queue): the first of them
   * starts at once while the job's completion is written beside it, so an endpoint's deliveries
   * follow one another without waiting on the store between them; the last of them completes
   * with the claim of the next ones (run). A job that did not end well, a stop, or a follower
   * whose lease no longer covers a whole run ends the chain: the followers are given back unrun
   * and the job's outcome is recorded as usual, so none of them runs before the job ahead of it.
   */
  private async goOn(job: JobRecord, outcome: RunOutcome, followers: JobRecord[], handler: JobHandler | undefined): Promise<boolean> {
    const [next, ...rest] = followers;
    const lane = this.lanes.find((candidate) => candidate.kind === job.kind);
    const leaseLeft = (this.leaseEnds.get(next.id) ?? 0) - this.now().getTime();
    const wentWell = outcome.kind === 'done' || outcome.kind === 'skipped';
    // a whole lease left: once it runs, a run longer than its lease has it renewed (keepLeased)
    if (wentWell && !this.stopping && lane !== undefined && handler !== undefined && leaseLeft >= (handler.leaseMs ?? handler.timeoutMs)) {
      this.completeAside(job, outcome);
      this.leaseEnds.delete(job.id);
      lane.running.add(next.id);
      this.launch(next, rest);
      return true;
    }
    await this.giveBack(followers);
    await this.settle(job, outcome);
    return false;
  }

  /** Records a job that ended well without waiting for the store (stop() waits for these writes). */
  private completeAside(job: JobRecord, outcome: RunOutcome): void {
    const leaseEnds = this.leaseEnds.get(job.id) ?? 0;
    const writing: Promise<void> = this.record(job, outcome).then(
      () => undefined,
      (error: unknown) => this.recordFailed(job, outcome, error, leaseEnds),
    );
    this.asides.add(writing);
    void writing.finally(() => this.asides.delete(writing));
  }

  /**
   * For a handler whose lease is shorter than its timeout (model work): renews the lease every
   * third of it while the run goes on, so a run may take minutes while a crashed worker's job is
   * taken over after one short lease. A renewal the store refuses is left to the next one.
   */
  private keepLeased(job: JobRecord, handler: JobHandler): NodeJS.Timeout | undefined {
    const leaseMs = handler.leaseMs;
    if (leaseMs === undefined || leaseMs >= handler.timeoutMs) return undefined;
    const timer = setInterval(() => {
      const until = this.now().getTime() + leaseMs;
      this.store.jobs.extendLease(job.id, new Date(until)).then(
        () => this.leaseEnds.set(job.id, until),
        () => undefined,
      );
    }, Math.max(100, Math.floor(leaseMs / 3)));
    timer.unref();
    return timer;
  }

  /**
   * Records how a run ended. With `chain` (chainLane), a job that ended well is completed in
   * one step with the claim of the next job of its queue, which is returned to be run: an
   * endpoint's next delivery then costs no round of claims and one commit less.
   */
  private async record(job: JobRecord, outcome: RunOutcome, chain?: Lane): Promise<JobRecord[]> {
    const now = this.now();
    const log = { job: job.id, kind: job.kind, attempt: job.attempts };
    if (outcome.kind === 'interrupted') {
      await this.store.jobs.release(job.id);
      return [];
    }
    if (outcome.kind !== 'failed') {
      let next: JobRecord[] = [];
      if (chain === undefined) {
        await this.store.jobs.complete(job.id, now);
      } else {
        // a longer lease than one job's: each of them starts only while one run's time is left (goOn)
        const leaseEnds = now.getTime() + CHAIN_LEASE_FACTOR * chain.leaseMs;
        next = await this.store.jobs.completeAndClaimNext(job, now, new Date(leaseEnds), CHAIN_LENGTH);
        for (const claimed of next) this.leaseEnds.set(claimed.id, leaseEnds);
      }
      if (outcome.kind === 'skipped') this.options.logger.info({ ...log, reason: outcome.reason }, 'job skipped');
      return next;
    }
    if (attemptOutcome(job, outcome) === 'dead') {
      await this.store.jobs.deadLetter(job.id, now, outcome.error, outcome.payload);
      this.options.logger.warn({ ...log, error: outcome.error }, 'job dead-lettered');
      return [];
    }
    const delay = retryDelay(job.attempts, this.options.retryBaseMs, this.options.retryMaxMs, this.random);
    await this.store.jobs.retry(job.id, new Date(now.getTime() + delay), outcome.error, outcome.payload);
    this.options.logger.info({ ...log, error: outcome.error, retryInMs: delay }, 'job will be retried');
    return [];
  }

  /**
   * Stops claiming, waits up to `timeoutMs` for running jobs, and gives back the ones still
   * running so another worker can take them at once.
   */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    this.unlisten?.();
    this.wake?.();
    await this.loopDone;
    await this.purging;
    this.upkeeping?.abort.abort(new Error('the worker is stopping'));
    await this.upkeeping?.done;
    const running = [...this.active.keys()].flatMap((key) => this.batches.get(key)?.map((job) => job.id) ?? [key]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.active.values()]),
      new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
    // the runs still going, and what they claimed to run next and did not start, go back
    // (a batch's jobs while its run goes on: `release` leaves the ones already recorded alone)
    const stillRunning = new Set([...this.active.keys()].flatMap((key) => this.batches.get(key)?.map((job) => job.id) ?? [key]));
    for (const id of [...running, ...this.followers]) if (stillRunning.has(id) || this.followers.has(id)) await this.store.jobs.release(id).catch(() => undefined);
    await Promise.allSettled([...this.asides]);
  }
}

/** The outcome of a job whose payload does not fit its kind: it can never succeed. */
function invalidPayload(job: JobRecord): RunOutcome {
  return { kind: 'failed', error: `invalid ${job.kind} payload: ${JSON.stringify(job.payload).slice(0, 300)}`, retryable: false };
}

/** A batch lane's claimed jobs as runs, one a workspace (a model's usage is counted by workspace). */
function byWorkspace(jobs: JobRecord[]): JobRecord[][] {
  const runs = new Map<string | null, JobRecord[]>();
  for (const job of jobs) {
    const run = runs.get(job.workspaceId);
    if (run === undefined) runs.set(job.workspaceId, [job]);
    else run.push(job);
  }
  return [...runs.values()];
}
