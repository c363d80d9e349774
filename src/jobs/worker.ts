import type { JobRecord, Store } from '../storage/store.js';
import type { JobCatalog, JobOutcome } from './catalog.js';

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
}

/** Delay before attempt `attempts + 1`: doubling from the base, capped, with jitter (50-100%). */
export function retryDelay(attempts: number, baseMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(ceiling * (0.5 + random() / 2));
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
  private readonly now: () => Date;
  private readonly random: () => number;
  private readonly leaseMs: number;

  constructor(
    private readonly store: Store,
    private readonly catalog: JobCatalog,
    private readonly options: WorkerOptions,
  ) {
    this.now = options.now ?? (() => new Date());
    this.random = options.random ?? Math.random;
    this.leaseMs = Math.max(...Object.values(catalog).map((h) => h.timeoutMs), 1000);
  }

  /**
   * Starts the loop. Jobs queued through the same store (by this process's requests) wake it
   * at once; jobs queued by other processes are found at the next poll.
   */
  start(): void {
    this.unlisten ??= this.store.onJobsQueued(() => this.notify());
    this.loopDone ??= this.loop();
  }

  /** Polls at once instead of after the idle pause (e.g. right after enqueuing). */
  notify(): void {
    this.poked = true;
    this.wake?.();
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      // a notify from here on (during the claim) cancels the next pause
      this.poked = false;
      let claimed: JobRecord[] = [];
      const free = this.options.concurrency - this.active.size;
      if (free > 0) {
        try {
          const now = this.now();
          claimed = await this.store.jobs.claim(free, now, new Date(now.getTime() + this.leaseMs));
          await this.purgeNow(now);
        } catch (error) {
          this.options.logger.error({ err: error }, 'claiming jobs failed');
        }
        for (const job of claimed) {
          const run = this.run(job).finally(() => {
            this.active.delete(job.id);
            this.wake?.();
          });
          this.active.set(job.id, run);
        }
      }
      if (claimed.length === 0 || this.active.size >= this.options.concurrency) await this.pause();
    }
  }

  private pause(): Promise<void> {
    if (this.poked) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, this.options.pollMs);
      this.wake = done;
    });
  }

  private async purgeNow(now: Date): Promise<void> {
    if (now.getTime() - this.lastPurge < 60_000) return;
    this.lastPurge = now.getTime();
    await this.store.jobs.purgeFinished(new Date(now.getTime() - (this.options.keepFinishedMs ?? 86_400_000)));
  }

  private async run(job: JobRecord): Promise<void> {
    // own keys only: a stored kind such as `constructor` must not find an Object.prototype member
    const handler = Object.hasOwn(this.catalog, job.kind) ? this.catalog[job.kind] : undefined;
    let outcome: JobOutcome;
    if (handler === undefined) {
      outcome = { kind: 'failed', error: `no handler for job kind ${job.kind}`, retryable: false };
    } else {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<JobOutcome>((resolve) => {
        timer = setTimeout(() => resolve({ kind: 'failed', error: `timed out after ${handler.timeoutMs} ms`, retryable: true }), handler.timeoutMs);
      });
      try {
        outcome = await Promise.race([handler.run(job, this.store), timeout]);
      } catch (error) {
        outcome = { kind: 'failed', error: error instanceof Error ? error.message : String(error), retryable: true };
      } finally {
        clearTimeout(timer);
      }
    }
    await this.record(job, outcome).catch((error: unknown) =>
      // the lease runs out and the job is taken again: at-least-once
      this.options.logger.error({ err: error, job: job.id }, 'recording a job outcome failed'),
    );
  }

  private async record(job: JobRecord, outcome: JobOutcome): Promise<void> {
    const now = this.now();
    const log = { job: job.id, kind: job.kind, attempt: job.attempts };
    if (outcome.kind !== 'failed') {
      await this.store.jobs.complete(job.id, now);
      if (outcome.kind === 'skipped') this.options.logger.info({ ...log, reason: outcome.reason }, 'job skipped');
      return;
    }
    if (!outcome.retryable || job.attempts >= job.maxAttempts) {
      await this.store.jobs.deadLetter(job.id, now, outcome.error);
      this.options.logger.warn({ ...log, error: outcome.error }, 'job dead-lettered');
      return;
    }
    const delay = retryDelay(job.attempts, this.options.retryBaseMs, this.options.retryMaxMs, this.random);
    await this.store.jobs.retry(job.id, new Date(now.getTime() + delay), outcome.error);
    this.options.logger.info({ ...log, error: outcome.error, retryInMs: delay }, 'job will be retried');
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
    const running = [...this.active.keys()];
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.active.values()]),
      new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
    for (const id of running) if (this.active.has(id)) await this.store.jobs.release(id).catch(() => undefined);
  }
}
