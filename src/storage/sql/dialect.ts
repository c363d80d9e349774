import type { FilterComparison, FilterInstant, FilterNumber, FilterValue, JsonObject } from '../store.js';
import type { VectorIndex, VectorSizeMemo } from '../vector-index.js';
import type { SqlDriver, SqlExecutor } from './driver.js';
import type { Sql } from './sql.js';

/** The SQL dialects Engram stores data in. */
export type DialectName = 'sqlite' | 'postgres';

/*
 * Conventions shared by every query (both dialects):
 * - placeholders are written as `?`; the PostgreSQL driver renumbers them to `$n`,
 *   so no query may use PostgreSQL's `?` jsonb operators (use the jsonb_* functions).
 * - timestamps: SQLite stores INTEGER microseconds since the Unix epoch (UTC);
 *   PostgreSQL stores timestamptz.
 * - JSON objects (metadata, configuration): SQLite TEXT holding JSON; PostgreSQL jsonb.
 * - booleans: SQLite INTEGER 0/1; PostgreSQL boolean.
 *
 * Everything the two dialects do differently is a member of `Dialect`, implemented once in
 * sqlite/sqlite-dialect.ts and once in postgres/postgres-dialect.ts; queries are written once
 * against it (docs/contributing.md, "How to add to the store").
 */

/** A message full-text search, as the store hands it to the dialect. */
export interface MessageTextSearch {
  workspaceId: string;
  sessionId?: string;
  peerId?: string;
  terms: string[];
  /** Sessions a filter confines the search to (MessageSearch.withinSessions). */
  withinSessions?: readonly string[];
  /**
   * A workspace's search whose words are rare enough that reading all their matches and sorting
   * them costs less than walking the workspace newest first (PostgreSQL: postgres/search-statistics.ts).
   */
  sparse?: boolean;
  /**
   * A workspace's search whose matches are kept to the workspace's own messages inside the
   * index's walk (its keys, read from the workspace's index), not by reading each match's row:
   * a workspace holding a small part of a database of others (SQLite; SqlMessageStore).
   */
  amongOthers?: boolean;
}

/**
 * A message search read from the full-text index alone: the matches' keys (messages' `pk`),
 * newest first, without reading each message's row (half a term's cost: docs/decisions/0021-search.md). Only for a search without conditions on the rows, as the index cannot check them.
 */
export interface MatchKeys {
  from: string;
  /** The match, holding the search's scope (see `otherWorkspaces`). */
  where: Sql;
  /** The key's expression and the newest-first order. */
  key: string;
  newestFirst: string;
  /**
   * Set for a workspace's search: the index's tokens name a session or a sender with its
   * workspace, but no workspace, so `where` holds the workspace only while this condition (a
   * statement's own: no columns) is false.
   */
  otherWorkspaces?: Sql;
  /** The match holds `withinSessions` exactly (their tokens), so a filter of those sessions alone is held too. */
  holdsWithinSessions: boolean;
}

/** Per-query aliases and metadata access for compiling a filter (storage/sql/compile-filter.ts). */
export interface FilterContext {
  /** The metadata column of the filtered table. */
  readonly metadata: Sql;
  /** A fresh table alias for a subquery. */
  alias(): string;
}

export interface Dialect {
  readonly name: DialectName;

  // ---- values in and out of columns
  time(value: Date): unknown;
  readTime(value: unknown): Date;
  json(value: JsonObject): string;
  readJson(value: unknown): JsonObject;
  bool(value: boolean): unknown;
  readBool(value: unknown): boolean;
  /** A `?` placeholder taking JSON text into a JSON column (`?` or `?::jsonb`). */
  readonly jsonParam: string;
  /** `<expression> IN` the text elements of a JSON array bound at one `?`. */
  inJsonArray(expression: string): string;
  /** A FROM item: the text elements of the JSON array `expression`, as `<alias>.value`. */
  jsonArrayElements(expression: string, alias: string): string;
  /**
   * An aggregate of `expression` over a statement's rows into a JSON array as JSON text (`[]`
   * for no rows; `filter` keeps only the rows it holds for), in no promised order: in practice
   * the rows', which the reader checks when it needs one (an ORDER BY inside the aggregate sorts
   * each array apart, which cost more than the arrays saved). Where it is defined, search
   * candidates are read as arrays, not rows (SQLite: about 20 % of a search; PostgreSQL, whose
   * rows cost its driver less, was about 9 % slower with json_agg, so it reads rows).
   */
  arrayOf?(expression: string, filter?: string): string;
  /** An aggregate of `expression` into a JSON array in `order` (`[]` for no rows): JSON text, or the array where the driver parses it. */
  orderedArrayOf(expression: string, order: string): string;
  /**
   * The rows of `table` (as `alias`) whose `id` is in a JSON array bound at one `?` (the first
   * parameter of the statement's FROM and WHERE): a FROM clause and a condition for WHERE. Each
   * id is looked up through the table's unique index on `id`, never by walking another index of
   * the scope and checking every row against the ids (which planners pick without statistics,
   * or from the 100 rows they assume a set-returning function gives).
   */
  rowsByJsonIds(table: string, alias: string): { from: string; where: string };
  /**
   * Rows whose `column` is `value`, read in `key` order through an index that starts
   * (workspace_id, column, key): the condition with its parameters, and the ORDER BY columns
   * (sql/session-messages.ts). PostgreSQL names the value as a range of one, so that `column`
   * stays in the order and only that index gives it; SQLite's planner takes the index for `=`,
   * and as a range could not seek to a bound on `key`.
   */
  orderedWithin(column: string, key: string, value: string): { where: string; params: unknown[]; order: readonly string[] };
  /**
   * A list's ORDER BY column as read back to be bound again in a comparison with it, value for
   * value (seek-points.ts): as it is on SQLite; as text on PostgreSQL, where node-postgres would
   * make a timestamptz a Date and lose its microseconds.
   */
  orderKey(column: string): string;
  /**
   * The indexed key of a conclusion's text for exact-repeat lookups (migration 0022): its
   * space-trimmed, lower-cased form (an MD5 of it on PostgreSQL, whose B-tree entries are limited
   * to about 2,700 bytes).
   */
  contentKey(expression: string): string;
  /**
   * `<expression>` is one of the values of `subquery`, written so that PostgreSQL estimates the
   * values as few (an array) and reaches for an index on the expression, not as the 100 rows it
   * assumes a set-returning function gives.
   */
  inSubquery(expression: string, subquery: string): string;
  /** The column type of `schema_migrations.applied_at`. */
  readonly migrationTimeType: string;
  /** Holds the migration lock until `tx` ends (a no-op where transactions are serialised already). */
  lockMigrations(tx: SqlExecutor): Promise<void>;
  /**
   * Appended to a SELECT of rows about to be written in the same transaction: locks them until it
   * ends, and a row a concurrent writer changes is read as that writer committed it
   * (`FOR NO KEY UPDATE`; empty on SQLite, whose writers take turns).
   */
  readonly forWrite: string;
  /** As `forWrite`, for rows about to be deleted (`FOR UPDATE`, which also waits for foreign key checks). */
  readonly forDelete: string;
  /**
   * Appended to a SELECT of a parent row that the transaction writes children of but does not
   * change itself: keeps it from being deleted (or its key changed) until the transaction ends,
   * as a foreign key check does, without waiting for or holding back its writers (`FOR KEY SHARE`;
   * empty on SQLite).
   */
  readonly forKeyShare: string;
  /**
   * For the rest of `tx`'s transaction, a lock not granted within `ms` ends it as a conflict
   * (run again by the driver) instead of waiting on (a no-op where writers take turns).
   */
  yieldLocksAfter(tx: SqlExecutor, ms: number): Promise<void>;

  // ---- the job queue
  /** Appended to the claim's head selection: skip heads another worker is claiming. */
  readonly claimLocking: string;
  /** The claim's FROM item that reads each queue's head (`pk` = `headPk`, an expression of `q`) as `head`, one index probe per queue. */
  claimHead(headPk: string): string;

  // ---- full text and vectors
  /**
   * FROM, match condition and newest-first order of a message search (columns of `m`); `holds`
   * names the scope condition the match already holds (the caller adds the others; `workspace`:
   * the match names the workspace too, and the caller adds no condition on it). `keys`, where
   * the database has a full-text index apart from the messages, reads the matches' keys from the
   * index alone.
   */
  messageSearch(search: MessageTextSearch): { from: string; where: Sql; newestFirst: string; holds?: 'session' | 'sender' | 'workspace'; keys?: MatchKeys };
  /**
   * Most sessions a workspace's message search gives the index as `withinSessions` (their scope
   * tokens) when the workspace holds a small part of the database's messages (0: no such tokens).
   */
  readonly searchSessionTokens: number;
  /**
   * FROM, match condition and newest-first order of the conclusions of one collection holding a
   * word (by its stem; columns of `c`). The match may hold the collection (the caller still adds it).
   */
  conclusionTermMatch(word: string, collection: { workspaceId: string; observerId: string; observedId: string }): { from: string; where: Sql; newestFirst: string };
  /**
   * `known`: the size read, shared by a store and its transactions (VectorDimensions); `driver`:
   * the store's connections when it is not bound to a transaction (it fills `known`; upkeep).
   */
  vectorIndex(db: SqlExecutor, known?: VectorSizeMemo, driver?: SqlDriver): VectorIndex;

  // ---- filters (compile-filter.ts)
  /** Longest LIKE pattern, in UTF-8 bytes, the database takes. */
  readonly likePatternBytes: number;
  /**
   * A condition true for every row, put ahead of a filter, by which the statement ends with
   * FilterTimeLimitError once it has run past its time limit (storage/filter-time-limit.ts).
   * `key` is the filtered table's row key.
   */
  filterGuard(key: string): string;
  /** A bound value for a column of the value's type. */
  filterValue(value: FilterValue): Sql;
  /** A value as an element of the JSON list bound for `in`. */
  listElement(value: FilterValue): unknown;
  /** `column IN` the elements of the JSON list `list` (of values of `type`). */
  inList(column: Sql, list: Sql, type: FilterValue['type']): Sql;
  /** The JSON id list in `list` holds `id`. */
  listHolds(list: Sql, id: Sql): Sql;
  /** Case-insensitive: `target` holds `needle` literally. */
  containsText(target: Sql, needle: string): Sql;
  /** Case-insensitive LIKE of `target` against `pattern` (`\` escapes). */
  likePattern(target: Sql, pattern: string): Sql;
  /** Text of the top-level metadata value under `key`, as PostgreSQL's `metadata->>key` gives it. */
  metadataText(f: FilterContext, key: string): Sql;
  /** Numeric value of the metadata value under `key`; NULL when missing, empty or not numeric. */
  metadataNumber(f: FilterContext, key: string): Sql;
  /** Byte-order comparison of metadata text with a bound string. */
  textCompare(text: Sql, op: FilterComparison, value: string): Sql;
  numberCompare(number: Sql, op: FilterComparison, value: FilterNumber): Sql;
  /** `text` is one of the strings of the JSON list bound at `list`. */
  textInList(text: Sql, list: Sql): Sql;
  /** Metadata contains `wanted` (PostgreSQL `@>` semantics); `wanted` is cleaned JSON. */
  metadataContains(f: FilterContext, wanted: unknown): Sql;
}

/**
 * `column` (a row key) is one of the keys of the JSON array bound as the next parameter: looked
 * up through the primary key on PostgreSQL at any table size. As a plain `IN (SELECT ...)`
 * PostgreSQL took the array for 100 rows and read a table of up to some 15,000 rows whole instead
 * (5 conclusions' look-up among 10,000: 1.06 ms, against 0.14 ms so; bench/key-lookups.ts).
 */
export function keyIn(dialect: Pick<Dialect, 'inSubquery' | 'jsonArrayElements'>, column: string): string {
  return dialect.inSubquery(column, `SELECT CAST(j.value AS BIGINT) FROM ${dialect.jsonArrayElements('?', 'j')}`);
}

export type { FilterInstant };
