/**
 * A validated filter (contract-v3 §5): the tree the domain parses a request's `filters` object
 * into (domain/filters/parse-filter.ts, where every check and every 422 message lives) and the
 * store compiles to SQL for its dialect (storage/sql/compile-filter.ts). Nothing in it depends
 * on the API generation or on the dialect: strings are already cleaned (no NUL, no lone
 * surrogate), numbers and datetimes already read.
 */

/** A number operand: `value` for float comparison, `text` for an exact numeric (NaN is +Infinity). */
export interface FilterNumber {
  value: number;
  text: string;
}

/** A datetime: microseconds since the Unix epoch, UTC. */
export interface FilterInstant {
  micros: bigint;
}

/** A value compared with a column, typed as the column. */
export type FilterValue =
  | { type: 'text'; value: string }
  | { type: 'bool'; value: boolean }
  | { type: 'number'; value: FilterNumber }
  | { type: 'time'; value: FilterInstant };

export type FilterComparison = '=' | '>=' | '<=' | '>' | '<' | '<>';

/** A public column key (`id`, `created_at` ...) or a top-level metadata key. */
export type FilterTarget = { column: string } | { metadataKey: string };

export type FilterNode =
  /** Every item holds (an empty list is never produced). */
  | { kind: 'and'; items: FilterNode[] }
  | { kind: 'or'; items: FilterNode[] }
  /** `unsetAsFalse`: "is not true" (a NULL outcome, from an unset field, counts as false), else SQL `NOT`. */
  | { kind: 'not'; item: FilterNode; unsetAsFalse?: boolean }
  /** Matches no row. */
  | { kind: 'never' }
  | { kind: 'is-null'; column: string }
  | { kind: 'not-null'; column: string }
  /** Text values are ordered by byte (code point) order on every dialect. */
  | { kind: 'compare'; column: string; op: FilterComparison; value: FilterValue }
  /** The column is not `value`, or is unset (IS DISTINCT FROM). */
  | { kind: 'distinct'; column: string; value: FilterValue }
  /** The column is one of `values` (none: no row); `orNull` keeps SQL `IN (..., NULL)` semantics. */
  | { kind: 'in'; column: string; values: FilterValue[]; orNull: boolean }
  /** The JSON id list in the column holds `id`. */
  | { kind: 'holds'; column: string; id: string }
  /**
   * Case-insensitive substring test of the target's text: `needle` taken literally, or (v2
   * `pattern`) with `%` and `_` as wildcards and `\` escaping them.
   */
  | { kind: 'like'; target: FilterTarget; needle: string; wildcards: boolean }
  /** The metadata value under `key`, when it is a number (or numeric text), compared with `value`. */
  | { kind: 'key-number'; key: string; op: FilterComparison; value: FilterNumber }
  /** The text form of the metadata value under `key` compared in byte order with `value`. */
  | { kind: 'key-text'; key: string; op: FilterComparison; value: string }
  /** The text form of the metadata value under `key` is one of `values` (never empty). */
  | { kind: 'key-in'; key: string; values: string[] }
  /** Metadata contains `value` (PostgreSQL `@>` semantics). */
  | { kind: 'contains'; value: unknown };
