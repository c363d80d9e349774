import type { SqlExecutor } from './driver.js';

/**
 * Finished work is counted by the hour it finished in (migration 0027): hours since 1970, UTC,
 * as the SQLite trigger computes it from microseconds and PostgreSQL's from its timestamp.
 */
export function finishedHour(at: Date): number {
  return Math.floor(at.getTime() / 3_600_000);
}

/**
 * Deletes up to `limit` rows of a counters table (keyed by `key`, `hour` among its columns) of
 * hours before `before`'s, oldest first, through the table's index on `hour`: how many.
 */
export function purgeHoursBefore(db: SqlExecutor, table: string, key: readonly string[], before: Date, limit: number): Promise<number> {
  const columns = key.join(', ');
  return db.run(
    `DELETE FROM ${table} WHERE (${columns}) IN (SELECT ${columns} FROM ${table} WHERE hour < ? ORDER BY hour LIMIT ${Math.max(1, Math.trunc(limit))})`,
    [finishedHour(before)],
  );
}
