import { SETTINGS } from '../config/settings.js';

/**
 * How long one statement may spend on rows it tests against a request's filter. A filter is
 * tested on every row of its scope until a page is full, and its conditions can be many (up to
 * 500) and each cost a walk through a row's metadata: one that matches nothing in a large scope
 * would otherwise run for minutes, on SQLite holding its whole process. Every filtered statement
 * carries Dialect.filterGuard ahead of the filter:
 * - SQLite: a function of the connection (SqliteDriver's `engram_filter_guard`) called on each
 *   row scanned, which reads the clock every 64 rows; better-sqlite3 has no way to interrupt a
 *   statement.
 * - PostgreSQL: TIME_LIMITED, a comment by which the driver knows to run the statement under
 *   `statement_timeout`. A test in the statement cannot do it there: the planner evaluates a
 *   row's conditions cheapest first, and a clock test costs two operators, so conditions of one
 *   or two (an ILIKE, a containment, a metadata key) would run before it.
 * Past the limit the statement ends with FilterTimeLimitError.
 */
export const DEFAULT_FILTER_TIME_LIMIT_MS: number = SETTINGS.FILTER_TIME_LIMIT_MS.default;

/** Marks a PostgreSQL statement that tests a request's filter. */
export const TIME_LIMITED = '/* engram: time-limited filter */';

/** A filtered statement ran past its time limit; nothing it was part of was committed. */
export class FilterTimeLimitError extends Error {
  constructor(readonly limitMs: number) {
    super(`The filter took longer than ${limitMs} ms to evaluate; narrow the query's scope or simplify the filter`);
    this.name = 'FilterTimeLimitError';
  }
}
