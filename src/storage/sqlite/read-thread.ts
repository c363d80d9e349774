import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/*
 * The thread's code, run as CommonJS from text (`eval`), as the checkpoint thread's
 * (wal-checkpointer.ts): a file of its own would have to be found as TypeScript under tsx and
 * vitest and as JavaScript once built. Its connection is the server connection's twin for reads:
 * the same file, sqlite-vec loaded, `query_only` so that nothing sent here can write. Statements
 * are prepared once and kept (the callers send a handful of texts). A blob comes back from
 * structured cloning as a plain Uint8Array, which better-sqlite3 binds only as a Buffer.
 */
const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma('query_only = 1');
db.pragma('cache_size = -' + workerData.cacheKb);
db.pragma('mmap_size = ' + workerData.mmapBytes);
require(workerData.vec).load(db);
const statements = new Map();
const bindable = (value) => (value instanceof Uint8Array && !Buffer.isBuffer(value) ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : value);
parentPort.on('message', ({ id, sql, params }) => {
  try {
    let statement = statements.get(sql);
    if (statement === undefined) {
      if (statements.size >= 64) statements.clear();
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    parentPort.postMessage({ id, ok: true, rows: statement.all(...params.map(bindable)) });
  } catch (error) {
    parentPort.postMessage({ id, ok: false, message: String((error && error.message) || error), code: error && error.code });
  }
});
`;

type Answer = { id: number; ok: true; rows: unknown[] } | { id: number; ok: false; message: string; code: unknown };

interface Waiting {
  resolve(rows: unknown[]): void;
  reject(error: Error): void;
}

/** An error of a statement the thread ran, with SQLite's code, as better-sqlite3 reports one inline. */
export class ReadThreadError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'SqliteError';
  }
}

/**
 * Reads of one SQLite database file on a connection in a thread of its own (docs/decisions.md,
 * "Vector scans off the event loop"). better-sqlite3 runs a statement on the calling thread, so a
 * scan of a workspace's vectors (tens of milliseconds at 100,000 chunks) held every request of
 * the process; sent here it holds only this thread, and the event loop (and the other core) go on.
 * What it reads is the last commit, as a statement on the server connection outside a transaction
 * does. The thread starts with the first read (about 10 MB resident, 20 to 25 MB once it has served
 * thousands of reads, as any node:worker_threads thread that exchanges messages), so a process that
 * never searches vectors never has it. If it cannot start or dies, `onFailure` is told once, and the reads
 * waiting for it and every later one are rejected with ReadThreadUnavailable: the caller reads inline.
 */
export class ReadThread {
  private thread: Worker | undefined;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 0;
  private failed = false;
  private closing = false;
  /** Statements the thread ran (with an answer or an SQL error), and whether it failed. */
  readonly counts = { done: 0, failed: 0 };

  constructor(
    private readonly path: string,
    private readonly settings: { cacheMb: number; mmapMb: number },
    private readonly onFailure: (message: string) => void,
  ) {}

  /** Whether reads can be sent (the thread has not failed and the driver is open). */
  get available(): boolean {
    return !this.failed && !this.closing;
  }

  /**
   * The rows of a read-only statement, from the thread; rejects with the statement's error (a
   * ReadThreadError), or with ReadThreadUnavailable when the thread failed before answering.
   */
  all<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
    if (!this.available) return Promise.reject(new ReadThreadUnavailable('the read thread is not available'));
    let thread: Worker;
    try {
      thread = this.started();
    } catch (error) {
      this.fail(`the read thread could not be started: ${error instanceof Error ? error.message : String(error)}`);
      return Promise.reject(new ReadThreadUnavailable('the read thread could not be started'));
    }
    const id = this.nextId++;
    return new Promise<T[]>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (rows: unknown[]) => void, reject });
      // keeps the process alive only while a read is waiting for its answer
      if (this.waiting.size === 1) thread.ref();
      thread.postMessage({ id, sql, params });
    });
  }

  private started(): Worker {
    if (this.thread !== undefined) return this.thread;
    const require = createRequire(import.meta.url);
    const thread = new Worker(THREAD_CODE, {
      eval: true,
      workerData: {
        driver: require.resolve('better-sqlite3'),
        vec: require.resolve('sqlite-vec'),
        path: this.path,
        cacheKb: Math.round(this.settings.cacheMb * 1024),
        mmapBytes: Math.round(this.settings.mmapMb * 1024 * 1024),
      },
    });
    thread.unref();
    thread.on('message', (answer: Answer) => {
      const waiting = this.waiting.get(answer.id);
      if (waiting === undefined) return;
      this.waiting.delete(answer.id);
      if (this.waiting.size === 0) thread.unref();
      this.counts.done++;
      if (answer.ok) waiting.resolve(answer.rows);
      else waiting.reject(new ReadThreadError(answer.message, typeof answer.code === 'string' ? answer.code : undefined));
    });
    thread.on('error', (error) => this.fail(`the read thread failed: ${error.message}`));
    thread.on('exit', (code) => {
      if (!this.closing) this.fail(`the read thread exited (code ${code})`);
    });
    this.thread = thread;
    return thread;
  }

  private fail(message: string): void {
    if (this.failed || this.closing) return;
    this.failed = true;
    this.counts.failed++;
    this.dropWaiting(new ReadThreadUnavailable(message));
    void this.thread?.terminate();
    this.onFailure(message);
  }

  private dropWaiting(error: Error): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const read of waiting) read.reject(error);
  }

  async close(): Promise<void> {
    this.closing = true;
    this.dropWaiting(new ReadThreadUnavailable('the database is closing'));
    await this.thread?.terminate();
    this.thread = undefined;
  }
}

/** The thread could not answer (it failed, or the driver closed): the read may be run inline. */
export class ReadThreadUnavailable extends Error {}
