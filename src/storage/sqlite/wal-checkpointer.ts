import { HelperThread, resolvePackage } from './helper-thread.js';

/** Frames of the WAL not yet copied into the database at which a checkpoint is asked for (SQLite's own default). */
export const CHECKPOINT_FRAMES = 1000;
/** Frames at which the connection checkpoints by itself all the same: only if the thread cannot keep up. */
export const BACKSTOP_FRAMES = 10 * CHECKPOINT_FRAMES;
/** Least time between two checkpoints asked for: readers may keep one from copying everything. */
const MIN_INTERVAL_MS = 50;

/*
 * The thread's code (helper-thread.ts): it opens its own connection to the file and runs a
 * PASSIVE checkpoint each time it is asked (one that never waits for a reader or a writer), with
 * the server connection's `synchronous`, which decides the checkpoint's fsyncs.
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
 * Checkpoints of one WAL database file in a thread of its own (docs/decisions/0012-checkpoints-off-event-loop.md). SQLite otherwise checkpoints inside the commit that takes the WAL past
 * 1,000 frames: that commit copies the pages into the database and waits for two fsyncs on the
 * event loop, which holds every request of the process (tens of milliseconds on a slow disk).
 * The thread starts the first time a checkpoint is asked for, so a process that writes little
 * never has it (a thread costs about 9 MB). If it fails, `onFailure` is told once and nothing
 * more is asked of it: the connection goes back to checkpointing by itself.
 */
export class WalCheckpointer extends HelperThread<Answer> {
  private inFlight = false;
  private lastAsked = -Infinity;

  constructor(
    private readonly path: string,
    private readonly synchronous: string,
    onFailure: (message: string) => void,
  ) {
    super('checkpoint thread', onFailure);
  }

  /** After a commit: `pending` frames of the WAL are not yet in the database. */
  afterCommit(pending: number): void {
    if (pending < CHECKPOINT_FRAMES || this.inFlight || !this.usable) return;
    const now = performance.now();
    if (now - this.lastAsked < MIN_INTERVAL_MS) return;
    this.lastAsked = now;
    // called after a commit: whatever happens here must not look like the commit failing
    const thread = this.started(THREAD_CODE, () => ({ driver: resolvePackage('better-sqlite3'), path: this.path, synchronous: this.synchronous }));
    if (thread === undefined) return;
    this.inFlight = true;
    thread.postMessage('checkpoint');
  }

  protected answered(answer: Answer): void {
    this.inFlight = false;
    if (answer.ok) this.counts.done++;
    else this.fail(`the checkpoint failed: ${answer.error}`);
  }

  protected giveBack(): void {
    this.inFlight = false;
  }
}
