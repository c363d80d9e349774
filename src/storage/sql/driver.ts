import type { DialectName } from './dialect.js';

/** Runs SQL written with `?` placeholders; rows come back as plain objects. */
export interface SqlExecutor {
  readonly dialect: DialectName;
  all<T>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  get<T>(sql: string, params?: readonly unknown[]): Promise<T | undefined>;
  run(sql: string, params?: readonly unknown[]): Promise<number>;
  /**
   * The first column of each row, without a row object per row: better-sqlite3 spends about
   * 0.4 µs making each row's object, more than SQLite spends finding a full-text match, so a
   * statement returning a thousand keys costs twice what it would. Absent where rows cost no
   * more than their values (PostgreSQL); `firstColumn` falls back to `all`.
   */
  column?<T>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /**
   * A long read-only statement (a scan of vectors), run where it holds no other work: SQLite runs
   * it on a connection in a thread of its own when this is a file database's driver outside a
   * transaction (sqlite/read-thread.ts). Absent where `all` does as well (PostgreSQL, whose
   * statements never hold the event loop; a transaction, whose own writes the read must see).
   */
  allAside?<T>(sql: string, params?: readonly unknown[]): Promise<T[]>;
}

/** The first column of each row of `sql` (a statement naming one column), through `column` where the executor has it. */
export async function firstColumn<T>(db: SqlExecutor, sql: string, params: readonly unknown[] = []): Promise<T[]> {
  if (db.column !== undefined) return db.column<T>(sql, params);
  const rows = await db.all<Record<string, T>>(sql, params);
  return rows.map((row) => {
    for (const key in row) return row[key];
    throw new Error('a statement of firstColumn names no column');
  });
}

/**
 * Work the database ended to resolve conflicting writes (PostgreSQL's deadlocks and
 * serialization failures), since the driver opened: `retried` attempts were run again,
 * `failed` pieces of work still ended so after the last attempt (their requests got a 503).
 */
export interface ConflictCounts {
  retried: number;
  failed: number;
}

/**
 * A row this transaction saw was deleted by another one's commit before it was used (possible
 * on PostgreSQL, whose statements each see the latest commits). The work, run again from the
 * start, sees the deletion and answers accordingly: PostgresDriver counts it as a conflict.
 */
export class RowVanishedError extends Error {}

/** A connection (or pool) that can also open transactions. */
export interface SqlDriver extends SqlExecutor {
  /** Conflicts so far (always none on SQLite, whose writers take turns). */
  readonly conflicts: Readonly<ConflictCounts>;
  /** SQLite: checkpoints its background thread ran, and whether it failed (undefined when there is none). */
  readonly checkpoints?: Readonly<{ done: number; failed: number }>;
  /** SQLite: statements its read thread ran, and whether it failed (undefined when there is none). */
  readonly threadReads?: Readonly<{ done: number; failed: number }>;
  /** PostgreSQL: statements it prepared by name, and those dropped when they went stale (undefined when it names none). */
  readonly preparedStatements?: Readonly<{ named: number; dropped: number }>;
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /**
   * Checks that the database answers and can commit a write; throws StoreUnavailableError
   * saying why when it cannot. Cheap enough for a readiness probe every second.
   */
  probe(): Promise<void>;
  /** Runs a multi-statement script (migrations). */
  exec(script: string): Promise<void>;
  /**
   * A value that stays the same for as long as no transaction commits to the database, from
   * any connection of any process, read without a query; undefined when the driver cannot
   * tell (then every check must query). See SqliteDriver.changeToken.
   */
  changeToken(): string | undefined;
  close(): Promise<void>;
}
