import { HelperThread, resolvePackage } from './helper-thread.js';

/*
 * The thread's code (helper-thread.ts). Its connection is the server connection's twin for reads:
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
 * Reads of one SQLite database file on a connection in a thread of its own (docs/decisions/0013-vector-scans-off-event-loop.md). better-sqlite3 runs a statement on the calling thread, so a
 * scan of a workspace's vectors (tens of milliseconds at 100,000 chunks) held every request of
 * the process; sent here it holds only this thread, and the event loop (and the other core) go on.
 * What it reads is the last commit, as a statement on the server connection outside a transaction
 * does. The thread starts with the first read (about 10 MB resident, 20 to 25 MB once it has served
 * thousands of reads, as any node:worker_threads thread that exchanges messages), so a process that
 * never searches vectors never has it. If it cannot start or dies, `onFailure` is told once, and the reads
 * waiting for it and every later one are rejected with ReadThreadUnavailable: the caller reads inline.
 */
export class ReadThread extends HelperThread<Answer> {
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 0;

  constructor(
    private readonly path: string,
    /** The server connection's page cache (`cache_size`, KiB) and memory map (`mmap_size`, bytes). */
    private readonly pages: { cacheKb: number; mmapBytes: number },
    onFailure: (message: string) => void,
  ) {
    super('read thread', onFailure);
  }

  /**
   * The rows of a read-only statement, from the thread; rejects with the statement's error (a
   * ReadThreadError), or with ReadThreadUnavailable when the thread failed before answering.
   */
  all<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
    const thread = this.usable ? this.started(THREAD_CODE, () => this.workerData()) : undefined;
    if (thread === undefined) return Promise.reject(new ReadThreadUnavailable('the read thread is not available'));
    const id = this.nextId++;
    return new Promise<T[]>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (rows: unknown[]) => void, reject });
      // keeps the process alive only while a read is waiting for its answer
      if (this.waiting.size === 1) this.hold(true);
      thread.postMessage({ id, sql, params });
    });
  }

  private workerData() {
    return {
      driver: resolvePackage('better-sqlite3'),
      vec: resolvePackage('sqlite-vec'),
      path: this.path,
      ...this.pages,
    };
  }

  protected answered(answer: Answer): void {
    const waiting = this.waiting.get(answer.id);
    if (waiting === undefined) return;
    this.waiting.delete(answer.id);
    if (this.waiting.size === 0) this.hold(false);
    this.counts.done++;
    if (answer.ok) waiting.resolve(answer.rows);
    else waiting.reject(new ReadThreadError(answer.message, typeof answer.code === 'string' ? answer.code : undefined));
  }

  protected giveBack(reason: string): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const read of waiting) read.reject(new ReadThreadUnavailable(reason));
  }
}

/** The thread could not answer (it failed, or the driver closed): the read may be run inline. */
export class ReadThreadUnavailable extends Error {}
