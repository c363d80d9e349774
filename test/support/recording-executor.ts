import type { SqlExecutor } from '../../src/storage/sql/driver.js';

/** A statement an executor was given, with its parameters. */
export interface IssuedStatement {
  sql: string;
  params: readonly unknown[];
}

/**
 * An executor that runs every statement on `inner` and records it in `issued` (in order; a new
 * list unless one is given), for tests that read the plans of the statements a store sends.
 */
export function recordingExecutor(inner: SqlExecutor, issued: IssuedStatement[] = []): { executor: SqlExecutor; issued: IssuedStatement[] } {
  const executor: SqlExecutor = {
    dialect: inner.dialect,
    all: (sql, params = []) => (issued.push({ sql, params }), inner.all(sql, params)),
    get: (sql, params = []) => (issued.push({ sql, params }), inner.get(sql, params)),
    run: (sql, params = []) => (issued.push({ sql, params }), inner.run(sql, params)),
  };
  return { executor, issued };
}

/**
 * The plan of a statement as lines: SQLite's `EXPLAIN QUERY PLAN` details, PostgreSQL's `EXPLAIN`
 * text, one per line.
 */
export async function planLines(executor: SqlExecutor, { sql, params }: IssuedStatement): Promise<string[]> {
  if (executor.dialect === 'postgres') {
    const rows = await executor.all<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params);
    return rows.map((row) => row['QUERY PLAN']);
  }
  const rows = await executor.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params);
  return rows.map((row) => row.detail);
}
