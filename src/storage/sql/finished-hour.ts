/**
 * Finished work is counted by the hour it finished in (migration 0027): hours since 1970, UTC,
 * as the SQLite trigger computes it from microseconds and PostgreSQL's from its timestamp.
 */
export function finishedHour(at: Date): number {
  return Math.floor(at.getTime() / 3_600_000);
}
