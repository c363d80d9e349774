/**
 * How long one statement may spend on rows it tests against a request's filter. A filter is
 * tested on every row of its scope until a page is full, and its conditions can be many (up to
 * 500) and each cost a walk through a row's metadata: one that matches nothing in a large scope
 * would otherwise run for minutes, on SQLite holding its whole process. Both dialects check the
 * clock once per row scanned (SqliteDriver's `engram_filter_guard`, PostgreSQL migration 0027)
 * and end the statement past the limit, with FilterTimeLimitError.
 */
export const DEFAULT_FILTER_TIME_LIMIT_MS = 5000;

/** A filtered statement ran past its time limit; nothing it was part of was committed. */
export class FilterTimeLimitError extends Error {
  constructor(readonly limitMs: number) {
    super(`The filter took longer than ${limitMs} ms to evaluate; narrow the query's scope or simplify the filter`);
    this.name = 'FilterTimeLimitError';
  }
}
