import { TIME_LIMITED } from '../filter-time-limit.js';
import type { FilterComparison, FilterInstant, FilterNumber, FilterValue, JsonObject } from '../store.js';
import type { Dialect, FilterContext } from '../sql/dialect.js';
import type { VectorSizeMemo } from '../vector-index.js';
import type { SqlDriver, SqlExecutor } from '../sql/driver.js';
import { jsonText } from '../sql/json-text.js';
import { orderBy } from '../sql/session-messages.js';
import { bind, raw, sql, type Sql } from '../sql/sql.js';
import { epochMicros, PreciseDate } from '../precise-date.js';
import { PostgresVectorIndex } from './postgres-vector-index.js';
import { PostgresDriver } from './postgres-driver.js';

// Any constant works; it only has to be the same in every Engram process on one database.
const MIGRATION_LOCK_KEY = 0x656e6772;

/**
 * Text accepted as a number in metadata (SQLite checks the same grammar).
 * Written without `?` so that no `?` -> `$n` renumbering can ever touch it.
 */
const NUMERIC_TEXT = raw("'^ *[-+]{0,1}([0-9]+[.]{0,1}[0-9]*|[.][0-9]+)([eE][-+]{0,1}[0-9]{1,4}){0,1} *$'");
const MAX_NUMERIC_TEXT = raw('1000');

/** `expression` is one of `subquery`'s values, as an array: estimated at its length (a set-returning function at 100 rows). */
const anyOf = (expression: string, subquery: string) => `${expression} = ANY (ARRAY(${subquery}))`;

/** Dialect.orderedWithin: one value as a range of one, so that `column` stays in the order. */
const orderedWithin = (column: string, key: string, value: string) => ({ where: `${column} >= ? AND ${column} <= ?`, params: [value, value], order: [column, key] });

const LIST_CAST: Record<FilterValue['type'], string> = { text: '', bool: '::boolean', number: '::numeric', time: '::timestamptz' };

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** PostgreSQL timestamptz input for an instant (UTC; BC years and 5-digit years included). */
function timestampText(instant: FilterInstant): string {
  const micros = instant.micros;
  let ms = micros / 1000n;
  let rest = micros % 1000n;
  if (rest < 0n) {
    rest += 1000n;
    ms -= 1n;
  }
  const d = new Date(Number(ms));
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const year = d.getUTCFullYear();
  const shownYear = year <= 0 ? 1 - year : year;
  const fraction = pad(d.getUTCMilliseconds(), 3) + pad(Number(rest), 3);
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${fraction}`;
  return `${pad(shownYear, 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${time}+00${year <= 0 ? ' BC' : ''}`;
}

/** PostgreSQL (pg): timestamptz, jsonb, boolean, tsvector with the engram_porter stemmer, pgvector. */
export const postgresDialect: Dialect = {
  name: 'postgres',

  // pg sends a Date to the millisecond: a finer time goes as text (timestamptz keeps microseconds)
  time: (value: Date) => (value instanceof PreciseDate ? timestampText({ micros: BigInt(epochMicros(value)) }) : value),
  readTime: (value: unknown) => (value instanceof Date ? value : new Date(String(value))),
  // jsonb rejects \u0000; the wire layer strips NULs before values reach the store (contract §1.7)
  json: (value: JsonObject) => jsonText(value),
  readJson: (value: unknown) => (value ?? {}) as JsonObject,
  bool: (value: boolean) => value,
  readBool: (value: unknown) => value === true,
  jsonParam: '?::jsonb',
  inJsonArray: (expression) => `${expression} IN (SELECT jsonb_array_elements_text(?::jsonb))`,
  jsonArrayElements: (expression, alias) => `jsonb_array_elements_text(${expression}) ${alias} (value)`,
  orderKey: (column) => `(${column})::text`,
  contentKey: (expression) => `md5(lower(trim(${expression})))`,
  inSubquery: anyOf,
  orderedArrayOf: (expression, order) => `COALESCE(json_agg(${expression} ORDER BY ${order}), '[]')`,
  rowsByJsonIds: (table, alias) => ({ from: `${table} ${alias}`, where: anyOf(`${alias}.id`, 'SELECT jsonb_array_elements_text(?::jsonb)') }),
  orderedWithin,
  migrationTimeType: 'TIMESTAMPTZ',
  // an advisory lock keeps several starting processes from migrating at once
  lockMigrations: async (tx: SqlExecutor) => {
    await tx.get('SELECT pg_advisory_xact_lock(?)', [MIGRATION_LOCK_KEY]);
  },
  forWrite: ' FOR NO KEY UPDATE',
  forDelete: ' FOR UPDATE',
  forKeyShare: ' FOR KEY SHARE',
  yieldLocksAfter: async (tx: SqlExecutor, ms: number) => {
    await tx.run(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(ms))}`);
  },

  // heads another worker is claiming are skipped, not waited for
  claimLocking: ' FOR UPDATE OF head SKIP LOCKED',
  // a lateral subquery kept apart (OFFSET 0): joined plainly, the planner read every open job
  // of the kind into a hash table (2.8 ms with 12,000 deliveries waiting) instead of one probe
  // per queue (0.9 ms)
  claimHead: (headPk) => `CROSS JOIN LATERAL (SELECT h.* FROM jobs h WHERE h.pk = (${headPk}) OFFSET 0) head`,

  messageSearch: (search) => {
    // engram_porter: the words stemmed as the stored search_vector (migration 0010)
    const match = sql`m.search_vector @@ plainto_tsquery('engram_porter', ${bind(search.terms.join(' '))})`;
    // A search reads its scope's own index newest first: the session, the sender or the
    // workspace as a range of one value, first in the order (sql/session-messages.ts). As
    // `session_id = ?`, a common word's search in a session of 60,000 messages behind 40,000
    // newer ones walked the primary key past those (24.7 ms; 0.9 ms through the session's index).
    // A workspace's range is its only condition on the workspace (`holds`), through the index of
    // migration 0037: an equality beside it would let the planner order by the primary key again,
    // which walked a word in most messages of a workspace of 20,000 past 150,000 newer messages of
    // another (99 to 109 ms).
    const scope = search.sessionId !== undefined ? { holds: 'session' as const, column: 'm.session_id', value: search.sessionId }
      : search.peerId !== undefined ? { holds: 'sender' as const, column: 'm.peer_id', value: search.peerId }
      : { holds: 'workspace' as const, column: 'm.workspace_id', value: search.workspaceId };
    if (search.sparse === true && scope.holds === 'workspace') {
      // every match through the words' index, then sorted: `+ 0` keeps the primary key's order
      // (a walk of every message) out of the planner's choices
      return { from: 'messages m', where: sql`${match} AND m.workspace_id = ${bind(scope.value)}`, newestFirst: 'm.pk + 0 DESC', holds: scope.holds };
    }
    const within = orderedWithin(scope.column, 'm.pk', scope.value);
    return {
      from: 'messages m',
      where: sql`${match} AND ${{ text: within.where, values: within.params }}`,
      newestFirst: orderBy(within.order, 'DESC'),
      holds: scope.holds,
    };
  },
  // the workspace is a condition on each message's row, which the search reads anyway
  searchSessionTokens: 0,
  conclusionTermMatch: (word) => ({
    // the collection is in the statement's conditions; the planner picks its index or the words'
    // (engram_porter: stemmed as SQLite's porter tokenizer, migration 0045)
    from: 'conclusions c',
    where: sql`to_tsvector('engram_porter', c.content) @@ plainto_tsquery('engram_porter', ${bind(word)})`,
    newestFirst: 'c.pk DESC',
  }),
  vectorIndex: (db: SqlExecutor, known?: VectorSizeMemo, driver?: SqlDriver) =>
    new PostgresVectorIndex(db, known, driver, driver instanceof PostgresDriver && driver.vectorBuildMemoryMb !== undefined ? { buildMemoryMb: driver.vectorBuildMemoryMb } : undefined),

  likePatternBytes: Infinity,
  // no test in the statement: the driver runs it under statement_timeout (storage/filter-time-limit.ts)
  filterGuard: () => `${TIME_LIMITED} TRUE`,
  filterValue(value: FilterValue): Sql {
    switch (value.type) {
      case 'text':
        return bind(value.value);
      case 'bool':
        return bind(value.value);
      case 'number':
        return sql`${bind(value.value.text)}::numeric`;
      case 'time':
        return sql`${bind(timestampText(value.value))}::timestamptz`;
    }
  },
  listElement(value: FilterValue): unknown {
    switch (value.type) {
      case 'text':
      case 'bool':
        return value.value;
      case 'number':
        return value.value.value;
      case 'time':
        return timestampText(value.value);
    }
  },
  inList: (column, list, type) => sql`(${column} IN (SELECT e${raw(LIST_CAST[type])} FROM jsonb_array_elements_text(${list}::jsonb) AS e))`,
  listHolds: (list, id) => sql`(${list} @> jsonb_build_array(${id}::text))`,
  containsText: (target, needle) => sql`(${target} ILIKE ${bind(`%${escapeLike(needle)}%`)} ESCAPE '\\')`,
  likePattern: (target, pattern) => sql`(${target} ILIKE ${bind(pattern)} ESCAPE '\\')`,
  metadataText: (f: FilterContext, key: string) => sql`(${f.metadata} ->> ${bind(key)}::text)`,
  metadataNumber(f: FilterContext, key: string): Sql {
    const t = postgresDialect.metadataText(f, key);
    return sql`(CASE WHEN ${t} ~ ${NUMERIC_TEXT} AND length(${t}) <= ${MAX_NUMERIC_TEXT} THEN CAST(${t} AS numeric) END)`;
  },
  // byte order, not the database collation
  textCompare: (text: Sql, op: FilterComparison, value: string) => sql`(${text} COLLATE "C" ${raw(op)} ${bind(value)})`,
  numberCompare: (number: Sql, op: FilterComparison, value: FilterNumber) => sql`(${number} ${raw(op)} ${bind(value.text)}::numeric)`,
  textInList: (text, list) => sql`(${text} IN (SELECT jsonb_array_elements_text(${list}::jsonb)))`,
  metadataContains: (f: FilterContext, wanted: unknown) => sql`(${f.metadata} @> ${bind(jsonText(wanted))}::jsonb)`,
};
