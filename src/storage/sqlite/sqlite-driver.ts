import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { SqlDriver, SqlExecutor } from '../sql/driver.js';

type Statement = Database.Statement<unknown[], unknown>;

/**
 * better-sqlite3 is synchronous, so plain queries run at once on cached prepared statements.
 * A transaction spans awaits, though, and other requests must not slip their statements into
 * it: while one is open, queries from outside it wait for it to finish.
 */
export class SqliteDriver implements SqlDriver {
  readonly dialect = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Statement>();
  private openTransaction: Promise<void> | undefined;

  /**
   * `synchronous`: NORMAL (the default) makes each commit survive a crash of the process, since
   * WAL pages are in the operating system before the response is sent; FULL also survives a
   * power loss, at the cost of an fsync per commit.
   */
  constructor(path: string, synchronous: 'NORMAL' | 'FULL' = 'NORMAL') {
    if (path !== ':memory:' && !path.startsWith('file:')) mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${synchronous}`);
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 5000');
    // A 64 MiB page cache and memory-mapped reads: full-text search over a large file otherwise
    // spends half its time in read() system calls (bench/README.md, search analysis).
    this.db.pragma('cache_size = -65536');
    this.db.pragma('mmap_size = 268435456');
  }

  private statement(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private readonly direct: SqlExecutor = {
    dialect: 'sqlite',
    all: async <T>(sql: string, params: readonly unknown[] = []) => this.statement(sql).all(...params) as T[],
    get: async <T>(sql: string, params: readonly unknown[] = []) => this.statement(sql).get(...params) as T | undefined,
    run: async (sql: string, params: readonly unknown[] = []) => this.statement(sql).run(...params).changes,
  };

  private async waitForTransaction(): Promise<void> {
    while (this.openTransaction !== undefined) await this.openTransaction;
  }

  async all<T>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    if (this.openTransaction !== undefined) await this.waitForTransaction();
    return this.direct.all<T>(sql, params);
  }

  async get<T>(sql: string, params?: readonly unknown[]): Promise<T | undefined> {
    if (this.openTransaction !== undefined) await this.waitForTransaction();
    return this.direct.get<T>(sql, params);
  }

  async run(sql: string, params?: readonly unknown[]): Promise<number> {
    if (this.openTransaction !== undefined) await this.waitForTransaction();
    return this.direct.run(sql, params);
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    await this.waitForTransaction();
    let finish!: () => void;
    this.openTransaction = new Promise<void>((resolve) => (finish = resolve));
    try {
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.direct);
        this.db.exec('COMMIT');
        return result;
      } catch (error) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw error;
      }
    } finally {
      this.openTransaction = undefined;
      finish();
    }
  }

  async exec(script: string): Promise<void> {
    await this.waitForTransaction();
    this.db.exec(script);
  }

  async close(): Promise<void> {
    await this.waitForTransaction();
    this.db.close();
  }
}
