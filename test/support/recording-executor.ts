import type { SqlExecutor } from '../../src/storage/sql/driver.js';

/** A statement an executor was given, with its parameters. */
export interface IssuedStatement {
  sql: string;
  params: readonly unknown[];
}

/**
 * An executor that runs every statement on `inner` and records it in `issued` (in order), for
 * tests that read the plans of the statements a store sends.
 */
export function recordingExecutor(inner: SqlExecutor): { executor: SqlExecutor; issued: IssuedStatement[] } {
  const issued: IssuedStatement[] = [];
  const executor: SqlExecutor = {
    dialect: inner.dialect,
    all: (sql, params = []) => (issued.push({ sql, params }), inner.all(sql, params)),
    get: (sql, params = []) => (issued.push({ sql, params }), inner.get(sql, params)),
    run: (sql, params = []) => (issued.push({ sql, params }), inner.run(sql, params)),
  };
  return { executor, issued };
}
