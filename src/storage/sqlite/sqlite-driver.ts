import { closeSync, mkdirSync, openSync, readSync, statfsSync } from 'node:fs';
import { endianness } from 'node:os';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { DEFAULT_FILTER_TIME_LIMIT_MS, FilterTimeLimitError } from '../filter-time-limit.js';
import type { SqlDriver, SqlExecutor } from '../sql/driver.js';
import { STATEMENT_CACHE_CHARS, statementCache } from '../sql/statement-cache.js';
import { StoreUnavailableError } from '../unavailable.js';
import { rowBuilder, type RowBuilder } from './row-builder.js';
import { SQLITE_DEFAULTS, type SqliteOptions } from './sqlite-settings.js';
import { ReadThread, ReadThreadUnavailable } from './read-thread.js';
import { BACKSTOP_FRAMES, CHECKPOINT_FRAMES, WalCheckpointer } from './wal-checkpointer.js';

type Statement = Database.Statement<unknown[], unknown>;

/**
 * A prepared statement and, when it returns rows, the maker of its row objects: such statements
 * are kept in raw mode (arrays of values) and their objects made in JavaScript (row-builder.ts).
 */
interface Prepared {
  statement: Statement;
  /** The column names `build` was made for (a statement re-prepared after a schema change may have others). */
  names: readonly string[];
  build: RowBuilder | undefined;
}

/**
 * SQLite result codes that say the file cannot be used right now rather than that the query is
 * wrong: the condition is outside the process (permissions, a read-only mount, a full disk,
 * another process holding the lock past the busy timeout) and may clear by itself.
 */
const UNAVAILABLE: [prefix: string, message: string][] = [
  ['SQLITE_READONLY', 'The database file cannot be written (read-only); try again later'],
  ['SQLITE_CANTOPEN', 'The database file cannot be opened; try again later'],
  ['SQLITE_IOERR', 'The database file cannot be read or written (I/O error); try again later'],
  ['SQLITE_FULL', 'The disk holding the database is full; try again later'],
  ['SQLITE_BUSY', 'The database is locked by another process; try again shortly'],
];

/** Rows between two readings of the clock by the filter guard (engram_filter_guard). */
const GUARD_STRIDE = 64;

/** Free space under which the readiness probe reports the database's disk as full. */
export const MIN_FREE_BYTES = 1024 * 1024;

/** The error to throw for `error`: StoreUnavailableError for the codes above, else itself. */
export function classifySqliteError(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || error instanceof StoreUnavailableError) return error;
  for (const [prefix, message] of UNAVAILABLE) {
    if (code === prefix || code.startsWith(`${prefix}_`)) return new StoreUnavailableError(message, code, { cause: error });
  }
  return error;
}

function guarded<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw classifySqliteError(error);
  }
}


/**
 * better-sqlite3 is synchronous, so plain queries run at once on cached prepared statements.
 * A transaction spans awaits, though, and other requests must not slip their statements into
 * it: while one is open, queries from outside it wait for it to finish.
 */
/** Size of one copy of SQLite's wal-index header (WalIndexHdr), which the `-shm` file begins with, twice. */
const WAL_INDEX_HEADER_BYTES = 48;
/**
 * `engram_lower(text)`: the text folded to lower case by JavaScript (Unicode), for contains and
 * icontains with a needle beyond ASCII (sqlite-dialect.ts, `containsText`); SQLite's own lower()
 * folds ASCII letters only.
 */
export function addCaseFolding(db: Database.Database): void {
  db.function('engram_lower', { deterministic: true, directOnly: true }, (text: unknown) => (typeof text === 'string' ? text.toLowerCase() : text));
}

/** In the `-shm` file: the WAL's last valid frame (WalIndexHdr.mxFrame), and the frames already copied into the database (WalCkptInfo.nBackfill, after the two headers); native byte order. */
const MX_FRAME_AT = 16;
const N_BACKFILL_AT = 2 * WAL_INDEX_HEADER_BYTES;
const readU32 = endianness() === 'LE' ? (b: Buffer, at: number) => b.readUInt32LE(at) : (b: Buffer, at: number) => b.readUInt32BE(at);

export class SqliteDriver implements SqlDriver {
  readonly dialect = 'sqlite' as const;
  readonly conflicts = { retried: 0, failed: 0 };
  private readonly db: Database.Database;
  private readonly statements = statementCache<Prepared>((sql) => this.dropped(sql));
  /** Text of the statements dropped from the cache since the last collection was asked for. */
  private droppedChars = 0;
  private openTransaction: Promise<void> | undefined;

  /** The folder of the database file, whose free space the probe checks (none in memory). */
  private readonly folder: string | undefined;
  /** The wal-index file (`-shm`) of a database file, open for changeToken; undefined in memory. */
  private walIndex: number | undefined;
  /** The wal-index header's two copies and the checkpoint's nBackfill after them, as read last. */
  private readonly walIndexHeader = Buffer.alloc(N_BACKFILL_AT + 4);
  /** Checkpoints in a thread of their own; undefined in memory or with `checkpoints: 'inline'`. */
  private readonly checkpointer: WalCheckpointer | undefined;
  /** Vector scans on a connection in a thread of its own; undefined in memory or with `vectorScans: 'inline'`. */
  private readonly reader: ReadThread | undefined;
  /** When the statement running now began (performance.now()), for engram_filter_guard. */
  private statementStarted = 0;

  constructor(path: string, options: SqliteOptions = {}) {
    this.folder = path !== ':memory:' && !path.startsWith('file:') ? dirname(path) : undefined;
    if (this.folder !== undefined) mkdirSync(this.folder, { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${options.synchronous ?? 'NORMAL'}`);
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 5000');
    // the same page cache for the read thread's connection (without the memory map: below)
    const pages = { cacheKb: Math.round((options.cacheMb ?? SQLITE_DEFAULTS.cacheMb) * 1024), mmapBytes: Math.round((options.mmapMb ?? SQLITE_DEFAULTS.mmapMb) * 1024 * 1024) };
    this.db.pragma(`cache_size = -${pages.cacheKb}`);
    this.db.pragma(`mmap_size = ${pages.mmapBytes}`);
    // vec0 tables for conclusion and message vectors (sqlite-vector-index.ts)
    sqliteVec.load(this.db);
    // Called with the row key of every row a filtered statement tests (storage/sql/compile-filter.ts):
    // better-sqlite3 cannot interrupt a statement, so the statement checks the clock itself, and
    // the exception thrown here ends it (better-sqlite3 rethrows it from the statement's call).
    // Not deterministic, or SQLite would call it once per statement. The clock is read every
    // GUARD_STRIDE rows: the guard adds about 90 ns to a row, where reading the clock on each
    // added 150 (to a filtered scan of 115 ns a row); 64 rows of the slowest filter take 30 ms.
    const limitMs = options.filterTimeLimitMs ?? DEFAULT_FILTER_TIME_LIMIT_MS;
    let calls = 0;
    this.db.function('engram_filter_guard', { deterministic: false, directOnly: true }, (_key: unknown) => {
      if (++calls % GUARD_STRIDE === 0 && performance.now() - this.statementStarted > limitMs) throw new FilterTimeLimitError(limitMs);
      return 1;
    });
    addCaseFolding(this.db);
    // a first read transaction makes sure the wal-index exists (a new file gets it lazily);
    // without it changeToken cannot tell
    if (this.folder !== undefined) {
      try {
        this.db.prepare('SELECT COUNT(*) FROM sqlite_master').get();
        this.walIndex = openSync(`${path}-shm`, 'r');
      } catch {
        this.walIndex = undefined;
      }
    }
    if (this.walIndex !== undefined && options.checkpoints !== 'inline') {
      const synchronous = options.synchronous ?? 'NORMAL';
      this.checkpointer = new WalCheckpointer(path, synchronous, (message) => {
        // back to SQLite's own checkpoints in the commits, and said where an operator sees it
        try {
          this.db.pragma(`wal_autocheckpoint = ${CHECKPOINT_FRAMES}`);
        } catch {
          // the connection is closed or broken: its next statement reports that
        }
        process.emitWarning(`${message}; checkpoints are made by the commits again`, { code: 'ENGRAM_SQLITE_CHECKPOINT' });
      });
      this.db.pragma(`wal_autocheckpoint = ${BACKSTOP_FRAMES}`);
    }
    if (this.walIndex !== undefined && options.vectorScans !== 'inline') {
      // the thread's connection reads without a memory map: a connection that finds the file
      // changed by another one (here, every commit of the server connection) drops its map with
      // its page cache, and maps and faults the pages in again, which doubled a workspace's
      // vector search under a steady write load (bench/README.md, "The read thread's map")
      this.reader = new ReadThread(path, { cacheKb: pages.cacheKb, mmapBytes: 0 }, (message) => {
        process.emitWarning(`${message}; vector scans run on the server connection again`, { code: 'ENGRAM_SQLITE_READ_THREAD' });
      });
    }
  }

  /** Statements the read thread ran (and whether it failed); undefined when there is none. */
  get threadReads(): { done: number; failed: number } | undefined {
    return this.reader?.counts;
  }

  /** Checkpoints the background thread ran (and whether it failed); undefined when there is none. */
  get checkpoints(): { done: number; failed: number } | undefined {
    return this.checkpointer?.counts;
  }

  /**
   * After a write committed: frames of the WAL not yet in the database, read from the wal-index
   * (one `pread`, as changeToken), handed to the checkpointer, which asks its thread for a
   * checkpoint past CHECKPOINT_FRAMES.
   */
  private committed(): void {
    if (this.checkpointer === undefined) return;
    // a header being rewritten is read again after the next commit
    const header = this.readWalIndex();
    if (header !== undefined) this.checkpointer.afterCommit(readU32(header, MX_FRAME_AT) - readU32(header, N_BACKFILL_AT));
  }

  /**
   * The start of the `-shm` file in one `pread`: the wal-index header (twice) and the
   * checkpoint's nBackfill; undefined when it cannot be read, is not built yet, or is being
   * rewritten (SQLite writes the second copy first, so the two differ during a commit).
   */
  private readWalIndex(): Buffer | undefined {
    if (this.walIndex === undefined) return undefined;
    const header = this.walIndexHeader;
    try {
      if (readSync(this.walIndex, header, 0, header.length, 0) !== header.length) return undefined;
    } catch {
      return undefined;
    }
    // isInit (byte 12) is 1 once a connection has built the index
    if (header[12] !== 1 || header.compare(header, WAL_INDEX_HEADER_BYTES, 2 * WAL_INDEX_HEADER_BYTES, 0, WAL_INDEX_HEADER_BYTES) !== 0) return undefined;
    return header;
  }

  private statement(sql: string): Prepared {
    let prepared = this.statements.get(sql);
    if (prepared === undefined) {
      const statement = this.db.prepare(sql);
      prepared = { statement, names: [], build: undefined };
      if (statement.reader) {
        statement.raw(true);
        prepared.names = statement.columns().map((column) => column.name);
        prepared.build = rowBuilder(prepared.names);
      }
      this.statements.set(sql, prepared);
    }
    return prepared;
  }

  /** The objects of a reader's raw rows (each row's values in column order). */
  private objects<T>(prepared: Prepared, rows: unknown[][]): T[] {
    if (rows.length > 0 && rows[0].length !== prepared.names.length) {
      // SQLite prepared the statement again after a schema change, and `*` now has other columns
      prepared.names = prepared.statement.columns().map((column) => column.name);
      prepared.build = rowBuilder(prepared.names);
    }
    const build = prepared.build!;
    const objects = new Array<T>(rows.length);
    for (let i = 0; i < rows.length; i++) objects[i] = build(rows[i]) as T;
    return objects;
  }

  /**
   * better-sqlite3 finalizes a statement only when V8 collects its object, and V8 does not count
   * the statement's native memory (about 7 times its text), so statements dropped from the cache
   * piled up between collections: with 40,000 filters of distinct shapes, a server stayed at
   * about 520 MB. When the dropped statements add up to a cache's worth, a full collection is
   * asked for, if the process exposes one (`npm start` runs node with --expose-gc).
   */
  private dropped(sql: string): void {
    this.droppedChars += sql.length;
    if (this.droppedChars < STATEMENT_CACHE_CHARS) return;
    this.droppedChars = 0;
    const collect = (globalThis as { gc?: () => void }).gc;
    if (collect !== undefined) setImmediate(collect);
  }

  /** Prepares `sql` (or takes it from the cache) and starts the filter guard's clock. */
  private starting(sql: string): Prepared {
    const prepared = this.statement(sql);
    this.statementStarted = performance.now();
    return prepared;
  }

  /** After `statement` ran: a write outside a transaction has committed (transaction() tells of its own commit). */
  private ran(statement: Statement): void {
    if (this.checkpointer !== undefined && !statement.readonly && !this.db.inTransaction) this.committed();
  }

  private readonly direct: SqlExecutor = {
    dialect: 'sqlite',
    all: async <T>(sql: string, params: readonly unknown[] = []) =>
      guarded(() => {
        const prepared = this.starting(sql);
        const { statement } = prepared;
        // a statement that returns no rows throws here, as better-sqlite3's all() does
        const rows = statement.all(...params) as unknown[][];
        this.ran(statement);
        return this.objects<T>(prepared, rows);
      }),
    column: async <T>(sql: string, params: readonly unknown[] = []) =>
      guarded(() => {
        const { statement } = this.starting(sql);
        // the cached statement serves `all` too: plucking is its state for this call only
        statement.pluck(true);
        try {
          const values = statement.all(...params) as T[];
          this.ran(statement);
          return values;
        } finally {
          statement.raw(true);
        }
      }),
    get: async <T>(sql: string, params: readonly unknown[] = []) =>
      guarded(() => {
        const prepared = this.starting(sql);
        const { statement } = prepared;
        // A write (INSERT ... RETURNING) is run to completion: get() stops after the first row,
        // and outside a transaction SQLite then commits in a reset whose error better-sqlite3
        // drops, so a commit refused by a full or read-only disk would look like a success.
        if (statement.readonly) {
          const row = statement.get(...params) as unknown[] | undefined;
          return row === undefined ? undefined : this.objects<T>(prepared, [row])[0];
        }
        const rows = statement.all(...params) as unknown[][];
        this.ran(statement);
        return rows.length === 0 ? undefined : this.objects<T>(prepared, rows.slice(0, 1))[0];
      }),
    run: async (sql: string, params: readonly unknown[] = []) =>
      guarded(() => {
        const { statement } = this.starting(sql);
        const { changes } = statement.run(...params);
        this.ran(statement);
        return changes;
      }),
  };

  /**
   * A transaction whose ROLLBACK failed (disk gone) is still open on the connection: discard it,
   * or the next statements would join it and never be committed.
   */
  private discardBrokenTransaction(): void {
    if (this.openTransaction === undefined && this.db.inTransaction) guarded(() => this.db.exec('ROLLBACK'));
  }

  async all<T>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    while (this.openTransaction !== undefined) await this.openTransaction;
    this.discardBrokenTransaction();
    return this.direct.all<T>(sql, params);
  }

  async column<T>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    while (this.openTransaction !== undefined) await this.openTransaction;
    this.discardBrokenTransaction();
    return this.direct.column!<T>(sql, params);
  }

  /**
   * `all`, on the read thread's connection while it works (see SqlExecutor.allAside): it reads
   * the last commit, as `all` does outside a transaction, without waiting for a transaction open
   * on this connection. A statement's own error is thrown as `all` would throw it; a thread that
   * failed leaves the read (and the next ones) to `all`.
   */
  async allAside<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    if (this.reader?.usable === true) {
      try {
        return await this.reader.all<T>(sql, params);
      } catch (error) {
        if (!(error instanceof ReadThreadUnavailable)) throw classifySqliteError(error);
      }
    }
    return this.all<T>(sql, params);
  }

  async get<T>(sql: string, params?: readonly unknown[]): Promise<T | undefined> {
    while (this.openTransaction !== undefined) await this.openTransaction;
    this.discardBrokenTransaction();
    return this.direct.get<T>(sql, params);
  }

  async run(sql: string, params?: readonly unknown[]): Promise<number> {
    while (this.openTransaction !== undefined) await this.openTransaction;
    this.discardBrokenTransaction();
    return this.direct.run(sql, params);
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    // Checked again after every wake-up, and taken with no await in between: several callers
    // woken by one commit must not all find the connection free and begin at once.
    while (this.openTransaction !== undefined) await this.openTransaction;
    this.discardBrokenTransaction();
    let finish!: () => void;
    this.openTransaction = new Promise<void>((resolve) => (finish = resolve));
    try {
      guarded(() => this.db.exec('BEGIN IMMEDIATE'));
      try {
        const result = await fn(this.direct);
        guarded(() => this.db.exec('COMMIT'));
        this.committed();
        return result;
      } catch (error) {
        // SQLite may have rolled back already (a failed write, a full disk); a failing ROLLBACK
        // leaves nothing committed either, and the first error is the one to report
        if (this.db.inTransaction) {
          try {
            this.db.exec('ROLLBACK');
          } catch {
            // retried before the next statement runs (discardBrokenTransaction); nothing is committed
          }
        }
        throw error;
      }
    } finally {
      this.openTransaction = undefined;
      finish();
    }
  }

  async exec(script: string): Promise<void> {
    while (this.openTransaction !== undefined) await this.openTransaction;
    this.discardBrokenTransaction();
    guarded(() => this.db.exec(script));
  }

  /**
   * Commits a real write: rewrites the header's user_version with its own value. A rolled-back
   * write would never reach the disk, so it could not tell a read-only file or a full disk;
   * this one appends one page to the WAL (a few microseconds) and changes no data. A disk with
   * less than MIN_FREE_BYTES left also counts as full: the probe's page may still fit where a
   * request's batch no longer does.
   */
  async probe(): Promise<void> {
    await this.transaction(async () => {
      guarded(() => {
        const version = this.db.pragma('user_version', { simple: true }) as number;
        this.db.pragma(`user_version = ${Number(version)}`);
      });
    });
    if (this.folder === undefined) return;
    const { bavail, bsize } = statfsSync(this.folder);
    const free = bavail * bsize;
    if (free < MIN_FREE_BYTES) {
      throw new StoreUnavailableError(`The disk holding the database is full (${free} bytes free); try again later`, 'disk full');
    }
  }

  /**
   * The wal-index header of the database, as text: SQLite keeps it in the `-shm` file that every
   * connection to a WAL database maps, and rewrites it on every commit (its `iChange` counter,
   * the WAL's last frame, salts and checksums; https://www.sqlite.org/walformat.html). One
   * `pread` of it tells whether anything committed since it was last read, where a query costs
   * a read transaction: two `fcntl` locks, an `fstat` and the B-tree walk (a cached peers page
   * went from about 26 to 23 µs of CPU). SQLite writes the header twice, the second copy first;
   * the two copies differ while a commit is writing them, and then, or if the file could not be
   * opened with the connection, this answers undefined.
   * Our own connection keeps the file in place (SQLite removes it only when the last connection
   * closes), so the descriptor always reads the live header.
   */
  changeToken(): string | undefined {
    return this.readWalIndex()?.toString('latin1', 0, WAL_INDEX_HEADER_BYTES);
  }

  async close(): Promise<void> {
    while (this.openTransaction !== undefined) await this.openTransaction;
    await this.checkpointer?.close();
    await this.reader?.close();
    if (this.walIndex !== undefined) closeSync(this.walIndex);
    this.walIndex = undefined;
    this.db.close();
  }
}
