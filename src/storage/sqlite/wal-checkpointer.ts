import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Frames of the WAL not yet copied into the database at which a checkpoint is asked for (SQLite's own default). */
export const CHECKPOINT_FRAMES = 1000;
/** Frames at which the connection checkpoints by itself all the same: only if the thread cannot keep up. */
export const BACKSTOP_FRAMES = 10 * CHECKPOINT_FRAMES;
/** Least time between two checkpoints asked for: readers may keep one from copying everything. */
const MIN_INTERVAL_MS = 50;

/*
 * The thread's code, run as CommonJS from text (`eval`): a file of its own would have to be found
 * as TypeScript under tsx and vitest and as JavaScript once built. It opens its own connection to
 * the file and runs a PASSIVE checkpoint each time it is asked (one that never waits for a reader
 * or a writer), with the server connection's `synchronous`, which decides the checkpoint's fsyncs.
 */
const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('synchronous = ' + workerData.synchronous);
parentPort.on('message', () => {
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, busy: result.busy, log: result.log, checkpointed: result.checkpointed });
  } catch (error) {
    parentPort.postMessage({ ok: false, error: String((error && error.message) || error) });
  }
});
`;

type Answer = { ok: true; busy: number; log: number; checkpointed: number } | { ok: false; error: string };

/**
 * Checkpoints of one WAL database file in a thread of its own (docs/decisions.md, "Checkpoints
 * off the event loop"). SQLite otherwise checkpoints inside the commit that takes the WAL past
 * 1,000 frames: that commit copies the pages into the database and waits for two fsyncs on the
 * event loop, which holds every request of the process (tens of milliseconds on a slow disk).
 * The thread starts the first time a checkpoint is asked for, so a process that writes little
 * never has it (a thread costs about 9 MB). If it fails, `onFailure` is told once and nothing
 * more is asked of it: the connection goes back to checkpointing by itself.
 */
export class WalCheckpointer {
  private thread: Worker | undefined;
  private inFlight = false;
  private lastAsked = -Infinity;
  private failed = false;
  private closing = false;
  /** Checkpoints the thread ran, and whether it failed. */
  readonly counts = { done: 0, failed: 0 };

  constructor(
    private readonly path: string,
    private readonly synchronous: string,
    private readonly onFailure: (message: string) => void,
  ) {}

  /** After a commit: `pending` frames of the WAL are not yet in the database. */
  afterCommit(pending: number): void {
    if (pending < CHECKPOINT_FRAMES || this.inFlight || this.failed || this.closing) return;
    const now = performance.now();
    if (now - this.lastAsked < MIN_INTERVAL_MS) return;
    this.lastAsked = now;
    this.inFlight = true;
    try {
      this.started().postMessage('checkpoint');
    } catch (error) {
      // called after a commit: whatever happens here must not look like the commit failing
      this.fail(`the checkpoint thread could not be started: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private started(): Worker {
    if (this.thread !== undefined) return this.thread;
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const thread = new Worker(THREAD_CODE, { eval: true, workerData: { driver, path: this.path, synchronous: this.synchronous } });
    // never what keeps the process alive
    thread.unref();
    thread.on('message', (answer: Answer) => {
      this.inFlight = false;
      if (answer.ok) this.counts.done++;
      else this.fail(`the checkpoint failed: ${answer.error}`);
    });
    thread.on('error', (error) => this.fail(`the checkpoint thread failed: ${error.message}`));
    thread.on('exit', (code) => {
      if (!this.closing) this.fail(`the checkpoint thread exited (code ${code})`);
    });
    this.thread = thread;
    return thread;
  }

  private fail(message: string): void {
    if (this.failed || this.closing) return;
    this.failed = true;
    this.counts.failed++;
    this.inFlight = false;
    void this.thread?.terminate();
    this.onFailure(message);
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.thread?.terminate();
    this.thread = undefined;
  }
}
