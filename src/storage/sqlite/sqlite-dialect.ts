import type { FilterComparison, FilterNumber, FilterValue, JsonObject } from '../store.js';
import type { Dialect, FilterContext, MessageTextSearch } from '../sql/dialect.js';
import type { VectorSizeMemo } from '../vector-index.js';
import type { SqlDriver, SqlExecutor } from '../sql/driver.js';
import { jsonText } from '../sql/json-text.js';
import { bind, join, raw, sql, type Sql } from '../sql/sql.js';
import { dateOfEpochMicros, epochMicros } from '../precise-date.js';
import { SqliteVectorIndex } from './sqlite-vector-index.js';

/** SQLite limits a LIKE pattern to 50000 bytes. */
const MAX_LIKE_BYTES = 50_000;
const MAX_NUMERIC_TEXT = raw('1000');
/** Text of ASCII characters only, which SQLite's lower() folds as JavaScript would. */
const ASCII = /^[\x00-\x7f]*$/;

/** A SQLite JSON path: an optional SQL expression followed by a constant suffix. */
interface JsonPath {
  base: Sql | null;
  rest: string;
}

/**
 * `."key"` for a SQLite JSON path. Inside the quotes SQLite reads everything up to the next `"`
 * literally, and decodes JSON escapes when the label contains a backslash: so `"` is written
 * `\u0022` and `\` is doubled (which switches decoding on whenever either occurs).
 */
function jsonPathLabel(key: string): string {
  return `."${key.replace(/["\\]/g, (c) => (c === '"' ? '\\u0022' : '\\\\'))}"`;
}

/**
 * The JSON path of a top-level metadata key, bound. A key's value is read with json_type and
 * json_extract, which share SQLite's cache of parsed JSON within a statement: all the conditions
 * of a filter parse a row's metadata once between them, where a json_each per condition parsed
 * it each time (1.6 against 0.4 µs a condition for 40 fields; 1.5 against 0.56 for a number).
 */
function keyPath(key: string): Sql {
  return bind(`$${jsonPathLabel(key)}`);
}

function pathSql(path: JsonPath): Sql {
  if (path.base === null) return bind(path.rest);
  return path.rest === '' ? path.base : sql`(${path.base} || ${bind(path.rest)})`;
}

/**
 * SQLite has no containment operator, so the wanted value is unrolled into conditions on the
 * node at `path` (whose json type and SQL value are `type` and `value`): the scalar members of a
 * wanted object, or the scalar elements of a wanted array, are tested together by one subquery
 * (scalarsContained); an object member is addressed by its path, and each object or array
 * element of a wanted array needs an EXISTS over json_each. Every condition is true or false,
 * never NULL (type tests use IS), like `@>`.
 */
function containsAt(f: FilterContext, path: JsonPath, type: Sql, value: Sql, wanted: unknown): Sql {
  if (wanted === null) return sql`(${type} IS 'null')`;
  if (typeof wanted === 'boolean') return sql`(${type} IS ${raw(wanted ? "'true'" : "'false'")})`;
  if (typeof wanted === 'number') {
    if (!Number.isFinite(wanted)) return raw('(1 = 0)');
    return sql`(coalesce(${type}, '') IN ('integer', 'real') AND ${value} = ${bind(wanted)})`;
  }
  if (typeof wanted === 'string') return sql`(${type} IS 'text' AND ${value} = ${bind(wanted)})`;
  if (Array.isArray(wanted)) {
    if (wanted.some((element) => typeof element === 'number' && !Number.isFinite(element))) return raw('(1 = 0)');
    const parts: Sql[] = [sql`(${type} IS 'array')`];
    // the scalar elements in one subquery, however many: each must equal an element of the node
    const scalars = distinctScalars(wanted);
    if (scalars.length > 0) parts.push(scalarsContained(f, path, scalars, 'element'));
    for (const element of wanted) {
      if (element === null || typeof element !== 'object') continue;
      const a = f.alias();
      // json_each reports each element's path (`fullkey`: the path given to it plus `[i]`).
      const elementPath: JsonPath = { base: raw(`${a}.fullkey`), rest: '' };
      const inner = containsAt(f, elementPath, raw(`${a}.type`), raw(`${a}.value`), element);
      parts.push(sql`EXISTS (SELECT 1 FROM json_each(${f.metadata}, ${pathSql(path)}) AS ${raw(a)} WHERE ${inner})`);
    }
    return join(parts, 'AND');
  }
  const parts: Sql[] = [sql`(${type} IS 'object')`];
  const members = Object.entries(wanted as Record<string, unknown>);
  if (members.some(([, member]) => typeof member === 'number' && !Number.isFinite(member))) return raw('(1 = 0)');
  // the scalar members in one subquery, however many: each must be a member of the node, equal
  const scalars = members.filter(([, member]) => member === null || typeof member !== 'object');
  if (scalars.length > 0) parts.push(scalarsContained(f, path, Object.fromEntries(scalars), 'key'));
  for (const [key, member] of members) {
    if (member === null || typeof member !== 'object') continue;
    const memberPath: JsonPath = { base: path.base, rest: path.rest + jsonPathLabel(key) };
    parts.push(containsAt(f, memberPath, sql`json_type(${f.metadata}, ${pathSql(memberPath)})`, sql`json_extract(${f.metadata}, ${pathSql(memberPath)})`, member));
  }
  return join(parts, 'AND');
}

/**
 * Every one of the wanted scalars (a JSON array of distinct elements, or an object of scalar
 * members) is in the node at `path`: as an element anywhere in it, or as the member of the same
 * key. One subquery whatever their number: an EXISTS per scalar made a filter of thousands of
 * them take SQLite seconds to prepare. Numbers compare by value (integer or real), text by bytes,
 * true, false and null by their JSON type. Members are looked up by path (json_type and
 * json_extract, which share the statement's cache of parsed JSON: 0.5 against 2.5 µs a
 * condition for 40 fields when each walked the node with json_each): the wanted object is bound
 * with each key written as its path label, appended to `path` in the statement.
 */
function scalarsContained(f: FilterContext, path: JsonPath, scalars: unknown[] | Record<string, unknown>, by: 'element' | 'key'): Sql {
  const w = f.alias();
  const equal = (type: Sql, value: Sql) =>
    sql`(CASE WHEN ${raw(w)}.type IN ('integer', 'real') THEN ${type} IN ('integer', 'real') AND ${value} = ${raw(w)}.value
    WHEN ${raw(w)}.type = 'text' THEN ${type} = 'text' AND ${value} = ${raw(w)}.value ELSE ${type} = ${raw(w)}.type END)`;
  if (by === 'key') {
    const members = Object.entries(scalars as Record<string, unknown>);
    const labelled = jsonText(Object.fromEntries(members.map(([key, value]) => [jsonPathLabel(key), value])));
    const at = sql`(${pathSql(path)} || ${raw(w)}.key)`;
    const found = equal(sql`json_type(${f.metadata}, ${at})`, sql`json_extract(${f.metadata}, ${at})`);
    return sql`((SELECT COUNT(*) FROM json_each(${bind(labelled)}) AS ${raw(w)} WHERE ${found}) = ${bind(members.length)})`;
  }
  const elements = scalars as unknown[];
  const e = f.alias();
  const found = equal(raw(`${e}.type`), raw(`${e}.value`));
  return sql`((SELECT COUNT(*) FROM json_each(${bind(jsonText(elements))}) AS ${raw(w)}
    WHERE EXISTS (SELECT 1 FROM json_each(${f.metadata}, ${pathSql(path)}) AS ${raw(e)} WHERE ${found})) = ${bind(elements.length)})`;
}

/**
 * The scalar elements of a wanted array, each once (containment ignores repeats): numbers by
 * value (1 and 1.0 are one), text, true, false and null.
 */
function distinctScalars(elements: readonly unknown[]): unknown[] {
  const seen = new Set<string>();
  const out: unknown[] = [];
  for (const element of elements) {
    if (element !== null && typeof element === 'object') continue;
    const key = typeof element === 'string' ? `s${element}` : typeof element === 'number' ? `n${element === 0 ? 0 : element}` : String(element);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(element);
  }
  return out;
}

/**
 * Most sessions a filter may name for the full-text index to narrow to them (a hundred still
 * gained a little: 27.2 -> 24.2 ms a search at 200,000 messages, against 10.9 -> 1.4 ms for one
 * session and 13.8 -> 3.0 ms for five); past that the filter alone decides, row by row.
 */
const MAX_SESSION_TOKENS = 100;

/** An id as one token of a scope column: its UTF-8 bytes in hex, as SQL's `hex()` writes them (FTS5 folds the case). */
const hex = (id: string) => Buffer.from(id, 'utf8').toString('hex');

/**
 * The FTS5 query of a message search: every word quoted (FTS5 syntax in user text is matched
 * literally) and required in `content`, plus the session's or sender's token in `search_scope`
 * (migration 0007) when the search is scoped to one, or any of the tokens of the sessions a
 * filter confines it to (a chat's tools search the sessions their observer may see): the index
 * then walks the matches in those sessions, instead of the word's matches in the whole store
 * with each row's session checked. The filter is still applied to the rows found, so the answer
 * is the same (test/storage/search.test.ts). `scoped`: a token names the scope (each token holds
 * its workspace); `withinSessions`: the sessions' tokens are in the query.
 */
function ftsMatch(search: MessageTextSearch): { query: string; scoped: boolean; withinSessions: boolean } {
  const parts = search.terms.map((term) => `content : "${term.replace(/"/g, '""')}"`);
  const workspace = hex(search.workspaceId);
  const session = (id: string) => `s${workspace}x${hex(id)}`;
  let withinSessions = false;
  if (search.sessionId !== undefined) {
    parts.push(`search_scope : ${session(search.sessionId)}`);
  } else if (search.withinSessions !== undefined && search.withinSessions.length > 0 && search.withinSessions.length <= MAX_SESSION_TOKENS) {
    parts.push(`search_scope : (${search.withinSessions.map(session).join(' OR ')})`);
    withinSessions = true;
  }
  if (search.peerId !== undefined) parts.push(`search_scope : p${workspace}x${hex(search.peerId)}`);
  return { query: parts.join(' AND '), scoped: search.sessionId !== undefined || search.peerId !== undefined || withinSessions, withinSessions };
}

/** Whether a workspace other than `workspaceId` holds messages: two seeks of the sender index. */
const otherWorkspaces = (workspaceId: string) =>
  sql`(EXISTS (SELECT 1 FROM messages o WHERE o.workspace_id < ${bind(workspaceId)}) OR EXISTS (SELECT 1 FROM messages o WHERE o.workspace_id > ${bind(workspaceId)}))`;

/** SQLite (better-sqlite3): INTEGER microseconds, TEXT JSON, INTEGER 0/1, FTS5, sqlite-vec. */
export const sqliteDialect: Dialect = {
  name: 'sqlite',

  time: (value: Date) => epochMicros(value),
  readTime: (value: unknown) => dateOfEpochMicros(Number(value)),
  json: (value: JsonObject) => jsonText(value),
  // most stored objects are empty: skip the parser for them (every list row has one or two)
  readJson: (value: unknown) => (value === '{}' || typeof value !== 'string' ? {} : (JSON.parse(value) as JsonObject)),
  bool: (value: boolean) => (value ? 1 : 0),
  readBool: (value: unknown) => value === 1,
  jsonParam: '?',
  inJsonArray: (expression) => `${expression} IN (SELECT value FROM json_each(?))`,
  jsonArrayElements: (expression, alias) => `json_each(${expression}) ${alias}`,
  orderedArrayOf: (expression, order) => `json_group_array(${expression} ORDER BY ${order})`,
  arrayOf: (expression, filter) => `json_group_array(${expression})${filter === undefined ? '' : ` FILTER (WHERE ${filter})`}`,
  // CROSS JOIN fixes the join order: the ids outside, the table inside by its index on id
  orderKey: (column) => column,
  contentKey: (expression) => `lower(trim(${expression}))`,
  inSubquery: (expression, subquery) => `${expression} IN (${subquery})`,
  rowsByJsonIds: (table, alias) => ({ from: `json_each(?) ${alias}_ids CROSS JOIN ${table} ${alias}`, where: `${alias}.id = ${alias}_ids.value` }),
  // as a range, a session's message before a pk walked the session's index from its newest
  // message down to it (13 ms for one near the start of a session of 60,000; 2.7 ms with `=`)
  orderedWithin: (column, key, value) => ({ where: `${column} = ?`, params: [value], order: [key] }),
  migrationTimeType: 'TEXT',
  // better-sqlite3 transactions are IMMEDIATE: one process migrates at a time already
  lockMigrations: async () => {},
  // one writer at a time: there is no lock order to keep
  forWrite: '',
  forDelete: '',
  forKeyShare: '',
  yieldLocksAfter: async () => {},

  // claims run in an IMMEDIATE transaction, which already serialises them
  claimLocking: '',
  claimHead: (headPk) => `JOIN jobs head ON head.pk = (${headPk})`,

  messageSearch: (search) => {
    const fts = ftsMatch(search);
    // Among other workspaces, a workspace's matches are its keys' (a list SQLite builds once per
    // statement from messages_peer, about 0.15 µs a message, tested through a Bloom filter
    // first): about 0.1 µs a match walked, against 0.5 to 1.3 µs reading each match's row
    // (`+` keeps SQLite from looking each key of the list up in the index instead)
    const match = search.amongOthers === true && !fts.scoped
      ? sql`messages_fts MATCH ${bind(fts.query)} AND +messages_fts.rowid IN (SELECT w.pk FROM messages w WHERE w.workspace_id = ${bind(search.workspaceId)})`
      : sql`messages_fts MATCH ${bind(fts.query)}`;
    // the index's keys alone: a workspace's search holds its workspace while no other holds
    // messages, or through its keys
    const others = fts.scoped || search.amongOthers === true ? undefined : otherWorkspaces(search.workspaceId);
    return {
      from: 'messages_fts JOIN messages m ON m.pk = messages_fts.rowid',
      where: match,
      // FTS5 hands out matches in rowid order and stops at the LIMIT: no sort, no full scan
      newestFirst: 'messages_fts.rowid DESC',
      keys: { from: 'messages_fts', where: match, key: 'messages_fts.rowid', newestFirst: 'messages_fts.rowid DESC', otherWorkspaces: others, holdsWithinSessions: fts.withinSessions },
    };
  },
  // measured (docs/decisions/0021-search.md): past this the tokens ORed cost more than they save
  searchSessionTokens: 16,
  conclusionTermMatch: (word, collection) => {
    // the word quoted, so FTS5 syntax in user text is matched literally (the porter tokenizer
    // stems it as it stemmed the content, migration 0043); the collection's scope token
    // (migration 0031) keeps the matches to its conclusions
    const scope = `c${hex(collection.workspaceId)}x${hex(collection.observerId)}x${hex(collection.observedId)}`;
    return {
      from: 'conclusions_fts JOIN conclusions c ON c.pk = conclusions_fts.rowid',
      where: sql`conclusions_fts MATCH ${bind(`search_scope : ${scope} AND content : "${word.replaceAll('"', '""')}"`)}`,
      // FTS5 hands out matches in rowid order and stops at the LIMIT
      newestFirst: 'conclusions_fts.rowid DESC',
    };
  },
  vectorIndex: (db: SqlExecutor, known?: VectorSizeMemo, driver?: SqlDriver) => new SqliteVectorIndex(db, known, driver !== undefined),

  likePatternBytes: MAX_LIKE_BYTES,
  // a function of the connection (SqliteDriver); its argument keeps SQLite from calling it once
  // per statement, and being covered by every index of the table, it is tested first
  filterGuard: (key) => `engram_filter_guard(${key})`,
  filterValue(value: FilterValue): Sql {
    switch (value.type) {
      case 'text':
        return bind(value.value);
      case 'bool':
        return bind(value.value ? 1 : 0);
      case 'number':
        return bind(value.value.value);
      case 'time': {
        const n = Number(value.value.micros);
        return bind(Number.isSafeInteger(n) ? n : value.value.micros);
      }
    }
  },
  listElement(value: FilterValue): unknown {
    switch (value.type) {
      case 'text':
        return value.value;
      case 'bool':
        return value.value ? 1 : 0;
      case 'number':
        return value.value.value;
      case 'time':
        return value.value.micros;
    }
  },
  inList: (column, list) => sql`(${column} IN (SELECT value FROM json_each(${list})))`,
  listHolds: (list, id) => sql`(EXISTS (SELECT 1 FROM json_each(${list}) WHERE value = ${id}))`,
  // SQLite's lower() folds ASCII letters only: a needle beyond ASCII is folded here and the text
  // by engram_lower (SqliteDriver, String.prototype.toLowerCase), a call into JavaScript per row
  // that an ASCII needle does without
  containsText: (target, needle) =>
    ASCII.test(needle)
      ? sql`(instr(lower(${target}), lower(${bind(needle)})) > 0)`
      : sql`(instr(engram_lower(${target}), ${bind(needle.toLowerCase())}) > 0)`,
  likePattern: (target, pattern) =>
    ASCII.test(pattern)
      ? sql`(lower(${target}) LIKE lower(${bind(pattern)}) ESCAPE '\\')`
      : sql`(engram_lower(${target}) LIKE ${bind(pattern.toLowerCase())} ESCAPE '\\')`,
  metadataText(f: FilterContext, key: string): Sql {
    const path = keyPath(key);
    return sql`(CASE json_type(${f.metadata}, ${path}) WHEN 'null' THEN NULL WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
      ELSE CAST(json_extract(${f.metadata}, ${path}) AS TEXT) END)`;
  },
  metadataNumber(f: FilterContext, key: string): Sql {
    const a = raw(f.alias());
    const path = keyPath(key);
    const v = sql`${a}.value`;
    // Comparing the text with its NUMERIC cast applies numeric affinity to it, which succeeds only
    // for a well-formed number; the GLOBs narrow that grammar to the PostgreSQL one.
    const numericText = join(
      [
        sql`${a}.type = 'text'`,
        sql`length(${v}) <= ${MAX_NUMERIC_TEXT}`,
        sql`${v} = CAST(${v} AS NUMERIC)`,
        sql`${v} NOT GLOB '*[^ 0-9.eE+-]*'`,
        sql`${v} NOT GLOB '*[eE]*[0-9][0-9][0-9][0-9][0-9]*'`,
      ],
      'AND',
    );
    const number = sql`CASE WHEN ${a}.type IN ('integer', 'real') THEN ${v} WHEN ${numericText} THEN CAST(${v} AS NUMERIC) END`;
    return sql`(SELECT ${number} FROM (SELECT json_type(${f.metadata}, ${path}) AS type, json_extract(${f.metadata}, ${path}) AS value) AS ${a})`;
  },
  // BINARY collation: byte order already
  textCompare: (text: Sql, op: FilterComparison, value: string) => sql`(${text} ${raw(op)} ${bind(value)})`,
  numberCompare: (number: Sql, op: FilterComparison, value: FilterNumber) => sql`(${number} ${raw(op)} ${bind(value.value)})`,
  textInList: (text, list) => sql`(${text} IN (SELECT value FROM json_each(${list})))`,
  metadataContains(f: FilterContext, wanted: unknown): Sql {
    const root: JsonPath = { base: null, rest: '$' };
    return containsAt(f, root, sql`json_type(${f.metadata}, ${pathSql(root)})`, sql`json_extract(${f.metadata}, ${pathSql(root)})`, wanted);
  },
};
