import type { DialectName } from './dialect.js';

/** Runs SQL written with `?` placeholders; rows come back as plain objects. */
export interface SqlExecutor {
  readonly dialect: DialectName;
  all<T>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  get<T>(sql: string, params?: readonly unknown[]): Promise<T | undefined>;
  run(sql: string, params?: readonly unknown[]): Promise<number>;
}

/** A connection (or pool) that can also open transactions. */
export interface SqlDriver extends SqlExecutor {
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
