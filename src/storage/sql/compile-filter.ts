/*
 * Filter language compiler (contract-v3 §5; v2 differences in §9.1).
 *
 * Turns a `filters` object from a list/search body into one SQL boolean expression for SQLite or
 * PostgreSQL. Every value is bound (`?` placeholders, never inside a literal); the only text spliced
 * into the SQL is the FilterModel's (trusted) column expressions and constants of this file.
 * Invalid filters throw FilterError, whose message is the 422 `detail`.
 *
 * Deviations from the reference server (shapes where it answers 500 or behaves by accident):
 * - A non-object item inside AND/OR/NOT is a 422 `Filter conditions inside AND must be objects,
 *   got str` (same for OR/NOT; the type is the Python type name).
 * - An object without any operator key on a plain column (equality against an object, `{}` too)
 *   is a 422 `Invalid filter for column '<key>': an object value must use at least one operator
 *   (gte, lte, gt, lt, ne, in, contains, icontains)`.
 * - gt/gte/lt/lte/ne, `in` and `icontains` directly under `metadata` (`{"metadata": {"gt": 1}}`)
 *   are a 422 `Operator '<op>' cannot be applied to the whole metadata object; compare a key
 *   instead, e.g. {"metadata": {"<key>": {"<op>": ...}}}`. The reference's own 422s come first:
 *   a non-numeric string under gt/.../ne gives `Invalid numeric value: <v>. Expected a number,
 *   got str`, a non-list under `in` gives the `in` message, and `in` containing "*" is skipped.
 * - A numeric comparison on a metadata key whose value is not numeric (non-numeric text,
 *   booleans, objects, arrays) does not match that row, instead of a database error. Numeric
 *   text is ` *[+-]?(digits[.digits]|.digits)([eE][+-]?d{1,4})? *` (ASCII digits) of at most
 *   1000 characters: so "NaN"/"Infinity" texts and 5-digit exponents do not count as numbers.
 * - gt/gte/lt/lte/ne with null, a list or an object on a plain column is a 422
 *   `Invalid numeric value: None. Expected a number, got NoneType` (`[1, 2]`/list, `{'a': 1}`/dict);
 *   on created_at every non-string value is `Invalid datetime value: <v>` (contract wording).
 * - gt/gte/lt/lte/ne with a numeric value on a text column (`{"id": {"gt": 5}}`) or on a boolean
 *   column are a 422 `Operator '<op>' is not supported on column '<key>'`. Extension:
 *   `{"is_active": {"ne": true}}` works (boolean inequality).
 * - contains/icontains on a non-text column (created_at, is_active, token_count) are a 422
 *   `Operator '<op>' is not supported on column '<key>'` (on created_at a string value is first
 *   validated as a date, as the reference does for every operator).
 * - Equality with a value whose JSON type cannot match the column (`{"id": 5}`,
 *   `{"is_active": "yes"}`, `{"token_count": "5"}`, `{"created_at": 5}`) matches no row, and `in`
 *   ignores such items (a `null` item keeps SQL `IN (..., NULL)` semantics). Equality on created_at
 *   with a string that is not a date is a 422 `Invalid datetime value: <v>`.
 * - `in` with an object value is a 422 `Invalid value for 'in' operator: {'a': 1}. Expected an
 *   iterable (list, tuple, set), got dict` (the reference iterates the object's keys). `in: []`
 *   matches no row.
 * - Strings containing NUL (U+0000) wherever they would be bound are a 422 `Filter values cannot
 *   contain NUL characters`; lone UTF-16 surrogates are replaced by U+FFFD.
 * - Size guards: v2 nesting deeper than 64 logical levels -> `Filter nesting exceeds maximum depth
 *   of 64`; a containment value nested deeper than 16 levels -> `Filter value nesting exceeds
 *   maximum depth of 16`; a filter worth more than 10000 bound values (containment values count
 *   their keys and scalars, `in` lists count 1) -> `Filter is too large`; a v2 contains/icontains
 *   pattern over 50000 UTF-8 bytes on SQLite -> `Filter value for 'contains' is too long`.
 *   (SQLite limits expression depth to 1000, placeholders to 32766 and LIKE patterns to 50000 bytes.)
 * - "nan"/"inf" numeric operands (Python float() accepts them) compare as +/-Infinity; NaN is
 *   treated as +Infinity, PostgreSQL's ordering of NaN.
 * - Lexicographic comparisons of metadata text (gt/lt with a non-numeric string or a boolean) use
 *   byte order (COLLATE "C" on PostgreSQL, BINARY on SQLite), not the database collation.
 * - A top-level `filters` that is not an object (HTTP validation normally rejects it first) is a
 *   422 `Filters must be an object, got <type>`.
 *
 * Known limitations:
 * - contains/icontains are case-insensitive for ASCII letters only on SQLite (its lower() folds
 *   ASCII only). PostgreSQL uses ILIKE: Unicode-aware under a UTF-8 LC_CTYPE (e.g. C.UTF-8).
 * - Text form of metadata values on SQLite: nested objects/arrays are compact JSON in stored key
 *   order (`{"b":1,"a":[1,2]}`) where PostgreSQL prints jsonb (`{"a": [1, 2], "b": 1}`), and
 *   numbers in exponent form print differently (`1.0e-07` vs `0.0000001`).
 * - SQLite compares metadata numbers as 64-bit floats (`1e-9999` is 0, 20-digit integers are
 *   rounded); PostgreSQL compares exact numerics.
 * - JavaScript cannot tell JSON `1.0` from `1`: such numbers render as Python ints (`1`, `int`)
 *   in messages and in the str() conversion used by metadata `in`/`contains`; integers beyond 2^53
 *   render as floats. Integer-like object keys are iterated first (JavaScript key order), which
 *   can change which error is reported first and the key order of dicts shown in messages.
 * - Python's int()/float() accept non-ASCII digits; only ASCII digits are recognised here.
 * - Accepted datetimes: `YYYY-MM-DD`, optionally followed by `T`/`t`/space, `HH[:MM[:SS[.f+]]]`
 *   (`.` or `,`; fraction truncated to microseconds) and an offset `Z`, `±HH`, `±HH:MM`, `±HHMM` or
 *   `±HH:MM:SS` (under 24h); surrounding whitespace ignored; naive values are UTC; years 1-9999.
 * - PostgreSQL: the SQL assumes standard_conforming_strings = on (the default) for `ESCAPE '\'`.
 *   SQLite: keys containing `"` or `\` rely on SQLite decoding escapes in quoted JSON path labels
 *   (recent SQLite; verified with the 3.53 bundled by better-sqlite3 12).
 * - The Message special key `peer_perspective` (§7.4) is not handled here: callers remove it first.
 */
import type { DialectName } from '../dialect.js';
import { jsonText } from './json-text.js';

/** `id_list`: a JSON array of ids (conclusion `source_ids`); only `contains` (the list holds the id) and `null` apply. */
export type ColumnKind = 'text' | 'bool' | 'int' | 'timestamp' | 'id_list';

type Column = { sql: string; kind: ColumnKind };

export interface FilterModel {
  /** Model name used in error messages: 'Workspace' | 'Peer' | 'Session' | 'Message'. */
  name: string;
  /** public filter key -> SQL expression and kind, e.g. { id: { sql: 'p.id', kind: 'text' } } */
  columns: Record<string, { sql: string; kind: ColumnKind }>;
  /** SQL expression of the JSON metadata column, e.g. 'p.metadata' */
  metadataSql: string;
  /** Keys that the model recognises as columns it lacks (error "Column '<k>' does not exist on <Model>"),
   *  versus other keys (error "Column '<k>' is not allowed to be filtered on or does not exist on <Model>").
   *  Per §5.1: for Workspace/Peer/Session the set is {id, created_at, is_active, workspace_id, session_id, peer_id, metadata}; for Message it is empty.
   *  'all' (Document): every key the model lacks gets the "does not exist" message. */
  knownKeys: ReadonlySet<string> | 'all';
}

/** An invalid filter; `message` is the exact 422 `detail` string. */
export class FilterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FilterError';
  }
}

const OPERATORS = new Set(['gte', 'lte', 'gt', 'lt', 'ne', 'in', 'contains', 'icontains']);
const COMPARISONS: Record<string, string> = { gte: '>=', lte: '<=', gt: '>', lt: '<', ne: '<>' };
const LOGICAL_KEYS = ['AND', 'OR', 'NOT'] as const;

const MAX_DEPTH_V3 = 5;
const MAX_DEPTH_V2 = 64;
const MAX_VALUE_DEPTH = 16;
/** Size budget, counted in values SQLite would bind (drivers allow ~32k placeholders). */
const MAX_BOUND_VALUES = 10_000;
/** Hard cap on placeholders actually emitted (PostgreSQL repeats some values). */
const MAX_PLACEHOLDERS = 30_000;
const MAX_SQLITE_LIKE_BYTES = 50_000;
const MAX_NUMERIC_TEXT = 1000;
/**
 * Text accepted as a number in metadata (PostgreSQL side; SQLite checks the same grammar).
 * Written without `?` so that no `?` -> `$n` renumbering can ever touch it.
 */
const PG_NUMERIC_TEXT = "'^ *[-+]{0,1}([0-9]+[.]{0,1}[0-9]*|[.][0-9]+)([eE][-+]{0,1}[0-9]{1,4}){0,1} *$'";

/* ------------------------------------------------------------------------------------------
 * SQL fragments: text plus the values of its `?` placeholders, in order.
 * ---------------------------------------------------------------------------------------- */

interface Sql {
  readonly text: string;
  readonly values: readonly unknown[];
}

const raw = (text: string): Sql => ({ text, values: [] });
const NEVER = raw('(1 = 0)');

function sql(strings: TemplateStringsArray, ...parts: Sql[]): Sql {
  let text = strings[0];
  const values: unknown[] = [];
  parts.forEach((part, i) => {
    text += part.text + strings[i + 1];
    for (const v of part.values) values.push(v);
  });
  return { text, values };
}

/** Joins conditions; long lists are grouped as a balanced tree to keep SQLite's expression depth low. */
function join(parts: Sql[], op: 'AND' | 'OR'): Sql {
  if (parts.length === 1) return parts[0];
  if (parts.length <= 8) {
    const values: unknown[] = [];
    for (const p of parts) for (const v of p.values) values.push(v);
    return { text: `(${parts.map((p) => p.text).join(` ${op} `)})`, values };
  }
  const mid = Math.ceil(parts.length / 2);
  return join([join(parts.slice(0, mid), op), join(parts.slice(mid), op)], op);
}

/* ------------------------------------------------------------------------------------------
 * Python renderings (error messages and str() conversions).
 * ---------------------------------------------------------------------------------------- */

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function pyTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'NoneType';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isSafeInteger(v) ? 'int' : 'float';
  if (typeof v === 'string') return 'str';
  if (Array.isArray(v)) return 'list';
  return 'dict';
}

function pyNumber(n: number): string {
  if (Number.isNaN(n)) return 'nan';
  if (!Number.isFinite(n)) return n > 0 ? 'inf' : '-inf';
  if (Number.isSafeInteger(n)) return String(n === 0 ? 0 : n);
  const [mantissa, exp] = n.toExponential().split('e');
  const e = Number(exp);
  if (e >= -4 && e < 16) return Number.isInteger(n) ? `${BigInt(n)}.0` : String(n);
  const digits = String(Math.abs(e)).padStart(2, '0');
  return `${mantissa}e${e < 0 ? '-' : '+'}${digits}`;
}

function pyStringRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && /[\p{C}\p{Z}]/u.test(ch)) {
      const cp = ch.codePointAt(0) ?? 0;
      if (cp <= 0xff) out += `\\x${cp.toString(16).padStart(2, '0')}`;
      else if (cp <= 0xffff) out += `\\u${cp.toString(16).padStart(4, '0')}`;
      else out += `\\U${cp.toString(16).padStart(8, '0')}`;
    } else out += ch;
  }
  return out + quote;
}

/** Python repr() of a JSON value. */
function pyRepr(v: unknown, depth = 0): string {
  if (depth > 100) return '...';
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return pyNumber(v);
  if (typeof v === 'string') return pyStringRepr(v);
  if (Array.isArray(v)) return `[${v.map((x) => pyRepr(x, depth + 1)).join(', ')}]`;
  if (isObject(v)) {
    const items = Object.entries(v).map(([k, x]) => `${pyStringRepr(k)}: ${pyRepr(x, depth + 1)}`);
    return `{${items.join(', ')}}`;
  }
  return String(v);
}

/** Python str() of a JSON value. */
function pyStr(v: unknown): string {
  return typeof v === 'string' ? v : pyRepr(v);
}

/* ------------------------------------------------------------------------------------------
 * Python number parsing (float() and int() of strings).
 * ---------------------------------------------------------------------------------------- */

/** A number operand: `value` for SQLite, `text` for a PostgreSQL numeric. NaN is mapped to +Infinity. */
interface NumberOperand {
  value: number;
  text: string;
}

const PY_INT = /^[+-]?\d(?:_?\d)*$/;
const PY_FLOAT = /^[+-]?(?:\d(?:_?\d)*\.?(?:\d(?:_?\d)*)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?$/;
const PY_SPECIAL = /^([+-]?)(inf|infinity|nan)$/i;

function numberOperand(value: number): NumberOperand {
  if (Number.isNaN(value) || value === Infinity) return { value: Infinity, text: 'Infinity' };
  if (value === -Infinity) return { value: -Infinity, text: '-Infinity' };
  return { value, text: String(value) };
}

/** Python float(s)/int(s) of a string, or null when Python would raise ValueError. */
function parsePyNumber(s: string): NumberOperand | null {
  const t = s.trim();
  const special = PY_SPECIAL.exec(t);
  if (special) {
    if (special[2].toLowerCase() === 'nan') return numberOperand(NaN);
    return numberOperand(special[1] === '-' ? -Infinity : Infinity);
  }
  if (!PY_FLOAT.test(t)) return null;
  const plain = t.replace(/_/g, '');
  const value = Number(plain);
  // Python int(): exact digits, kept as text so PostgreSQL compares them without rounding.
  if (PY_INT.test(t)) return { value, text: plain.replace(/^\+/, '') };
  return numberOperand(value);
}

/** Python float(v) for any JSON value; null for TypeError/ValueError. */
function pyFloat(v: unknown): NumberOperand | null {
  if (typeof v === 'boolean') return numberOperand(v ? 1 : 0);
  if (typeof v === 'number') return numberOperand(v);
  if (typeof v === 'string') return parsePyNumber(v);
  return null;
}

/* ------------------------------------------------------------------------------------------
 * Datetimes.
 * ---------------------------------------------------------------------------------------- */

interface Instant {
  /** microseconds since the Unix epoch, UTC */
  micros: bigint;
}

const DATETIME_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?(Z|z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)?)?$/;

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

/** Days from 1970-01-01 to a proleptic Gregorian date. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function parseDateTime(input: string): Instant | null {
  const m = DATETIME_RE.exec(input.trim());
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  const monthDays = [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > monthDays[month - 1]) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  const fraction = Number((m[7] ?? '').slice(0, 6).padEnd(6, '0'));
  let offsetSeconds = 0;
  const tz = m[8];
  if (tz && tz !== 'Z' && tz !== 'z') {
    const digits = tz.slice(1).replace(/:/g, '');
    const [oh, om, os] = [Number(digits.slice(0, 2)), Number(digits.slice(2, 4) || 0), Number(digits.slice(4, 6) || 0)];
    if (oh > 23 || om > 59 || os > 59) return null;
    offsetSeconds = (tz[0] === '-' ? -1 : 1) * (oh * 3600 + om * 60 + os);
  }
  const seconds = daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offsetSeconds;
  return { micros: BigInt(seconds) * 1_000_000n + BigInt(fraction) };
}

/** PostgreSQL timestamptz input for an instant (UTC; BC years and 5-digit years included). */
function pgTimestamp(instant: Instant): string {
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

/* ------------------------------------------------------------------------------------------
 * The compiler.
 * ---------------------------------------------------------------------------------------- */

class FilterCompiler {
  private aliases = 0;
  private cost = 0;
  private readonly maxDepth: number;
  private readonly pg: boolean;
  private readonly metadata: Sql;

  constructor(
    private readonly model: FilterModel,
    dialect: DialectName,
    private readonly generation: 'v2' | 'v3',
  ) {
    this.pg = dialect === 'postgres';
    this.maxDepth = generation === 'v2' ? MAX_DEPTH_V2 : MAX_DEPTH_V3;
    this.metadata = raw(model.metadataSql);
  }

  /* ---- binding ---- */

  /** Counts against the size budget (in values SQLite binds, so the same for both dialects). */
  private spend(cost: number): void {
    this.cost += cost;
    if (this.cost > MAX_BOUND_VALUES) throw new FilterError('Filter is too large');
  }

  private bind(value: unknown, cost = 1): Sql {
    this.spend(cost);
    return { text: '?', values: [value] };
  }

  private text(s: string): Sql {
    return this.bind(cleanString(s));
  }

  private json(value: unknown): Sql {
    return this.bind(jsonText(cleanJson(value, 0)));
  }

  private number(n: NumberOperand): Sql {
    return this.pg ? sql`${this.bind(n.text)}::numeric` : this.bind(n.value);
  }

  private boolean(b: boolean): Sql {
    return this.bind(this.pg ? b : b ? 1 : 0);
  }

  private timestamp(instant: Instant): Sql {
    if (this.pg) return sql`${this.bind(pgTimestamp(instant))}::timestamptz`;
    const n = Number(instant.micros);
    return this.bind(Number.isSafeInteger(n) ? n : instant.micros);
  }

  private alias(): string {
    return `mf_${++this.aliases}`;
  }

  /* ---- structure (§5.2) ---- */

  filter(filter: Record<string, unknown>, depth: number): Sql | null {
    const conditions: Sql[] = [];
    for (const op of LOGICAL_KEYS) {
      if (!Object.hasOwn(filter, op)) continue;
      const items = filter[op];
      if (op === 'NOT' && (items === null || items === undefined)) throw new FilterError('NOT operator cannot be None');
      if (!Array.isArray(items)) throw new FilterError(`${op} operator must contain a list, got ${pyTypeName(items)}`);
      const subs: Sql[] = [];
      for (const item of items) {
        if (depth + 1 > this.maxDepth) throw new FilterError(`Filter nesting exceeds maximum depth of ${this.maxDepth}`);
        if (!isObject(item)) throw new FilterError(`Filter conditions inside ${op} must be objects, got ${pyTypeName(item)}`);
        const sub = this.filter(item, depth + 1);
        if (sub) subs.push(op === 'NOT' ? sql`(NOT ${sub})` : sub);
      }
      if (subs.length > 0) conditions.push(join(subs, op === 'OR' ? 'OR' : 'AND'));
    }
    for (const [key, value] of Object.entries(filter)) {
      if ((LOGICAL_KEYS as readonly string[]).includes(key)) continue;
      const condition = this.field(key, value);
      if (condition) conditions.push(condition);
    }
    return conditions.length > 0 ? join(conditions, 'AND') : null;
  }

  private field(key: string, value: unknown): Sql | null {
    if (key === 'metadata') return this.metadataFilter(value);
    const column = Object.hasOwn(this.model.columns, key) ? this.model.columns[key] : undefined;
    if (!column) {
      if (this.model.knownKeys === 'all' || this.model.knownKeys.has(key)) throw new FilterError(`Column '${key}' does not exist on ${this.model.name}`);
      throw new FilterError(`Column '${key}' is not allowed to be filtered on or does not exist on ${this.model.name}`);
    }
    return this.columnFilter(key, column, value);
  }

  /* ---- plain columns (§5.3) ---- */

  private columnFilter(key: string, column: Column, value: unknown): Sql | null {
    if (value === '*') return null;
    if (Array.isArray(value)) {
      // v2 compares the column to the list itself, which never matches.
      if (this.generation === 'v2') return NEVER;
      return this.columnOperators(key, column, { in: value });
    }
    if (isObject(value)) {
      if (!Object.keys(value).some((k) => OPERATORS.has(k))) {
        throw new FilterError(
          `Invalid filter for column '${key}': an object value must use at least one operator (gte, lte, gt, lt, ne, in, contains, icontains)`,
        );
      }
      return this.columnOperators(key, column, value);
    }
    return this.columnEquals(column, value);
  }

  private columnEquals(column: Column, value: unknown): Sql {
    const col = raw(column.sql);
    if (value === null || value === undefined) return sql`(${col} IS NULL)`;
    switch (column.kind) {
      case 'text':
        return typeof value === 'string' ? sql`(${col} = ${this.text(value)})` : NEVER;
      case 'bool':
        return typeof value === 'boolean' ? sql`(${col} = ${this.boolean(value)})` : NEVER;
      case 'int':
        return typeof value === 'number' && Number.isFinite(value)
          ? sql`(${col} = ${this.number(numberOperand(value))})`
          : NEVER;
      case 'id_list':
        return NEVER;
      case 'timestamp': {
        if (typeof value !== 'string') return NEVER;
        const instant = parseDateTime(value);
        if (!instant) throw new FilterError(`Invalid datetime value: ${value}`);
        return sql`(${col} = ${this.timestamp(instant)})`;
      }
    }
  }

  private columnOperators(key: string, column: Column, ops: Record<string, unknown>): Sql | null {
    const parts: Sql[] = [];
    for (const [op, value] of Object.entries(ops)) {
      if (!OPERATORS.has(op)) throw new FilterError(`Unsupported comparison operator: ${op}`);
      if (value === '*') continue;
      const condition = this.columnOperator(key, column, op, value);
      if (condition) parts.push(condition);
    }
    return parts.length > 0 ? join(parts, 'AND') : null;
  }

  private columnOperator(key: string, column: Column, op: string, value: unknown): Sql | null {
    const col = raw(column.sql);
    let instant: Instant | null = null;
    if (column.kind === 'timestamp' && typeof value === 'string') {
      instant = parseDateTime(value);
      if (!instant) throw new FilterError(`Invalid datetime value: ${value}`);
    }

    if (Object.hasOwn(COMPARISONS, op)) {
      const cmp = raw(COMPARISONS[op]);
      if (column.kind === 'timestamp') {
        if (!instant) throw new FilterError(`Invalid datetime value: ${pyStr(value)}`);
        return sql`(${col} ${cmp} ${this.timestamp(instant)})`;
      }
      const n = pyFloat(value);
      if (!n) throw new FilterError(`Invalid numeric value: ${pyStr(value)}. Expected a number, got ${pyTypeName(value)}`);
      if (column.kind === 'int') return sql`(${col} ${cmp} ${this.number(n)})`;
      if (column.kind === 'bool' && op === 'ne' && typeof value === 'boolean') {
        return sql`(${col} <> ${this.boolean(value)})`;
      }
      throw new FilterError(`Operator '${op}' is not supported on column '${key}'`);
    }

    if (column.kind === 'id_list') {
      if (op !== 'contains') throw new FilterError(`Operator '${op}' is not supported on column '${key}'`);
      if (value === null || typeof value === 'object') throw new FilterError(`Operator 'contains' on column '${key}' takes one id, got ${pyTypeName(value)}`);
      return this.listHolds(col, pyStr(value));
    }
    if (op === 'in') return this.columnIn(column, value);

    // contains / icontains: case-insensitive substring on text columns only.
    if (column.kind !== 'text') throw new FilterError(`Operator '${op}' is not supported on column '${key}'`);
    return this.substring(col, pyStr(value));
  }

  private columnIn(column: Column, value: unknown): Sql | null {
    if (!Array.isArray(value)) {
      throw new FilterError(
        `Invalid value for 'in' operator: ${pyStr(value)}. Expected an iterable (list, tuple, set), got ${pyTypeName(value)}`,
      );
    }
    if (value.includes('*')) return null;
    const col = raw(column.sql);
    const accepted: unknown[] = [];
    let hasNull = false;
    for (const item of value) {
      if (item === null) hasNull = true;
      else if (column.kind === 'text' && typeof item === 'string') accepted.push(cleanString(item));
      else if (column.kind === 'bool' && typeof item === 'boolean') accepted.push(this.pg ? item : item ? 1 : 0);
      else if (column.kind === 'int' && typeof item === 'number' && Number.isFinite(item)) accepted.push(item);
      else if (column.kind === 'timestamp' && typeof item === 'string') {
        const instant = parseDateTime(item);
        if (!instant) throw new FilterError(`Invalid datetime value in list: ${item}`);
        accepted.push(this.pg ? pgTimestamp(instant) : instant.micros);
      }
    }
    let condition = NEVER;
    if (accepted.length > 0) {
      // One JSON array parameter whatever the list length.
      const list = this.bind(
        `[${accepted.map((v) => (typeof v === 'bigint' ? v.toString() : JSON.stringify(v))).join(',')}]`,
      );
      if (!this.pg) condition = sql`(${col} IN (SELECT value FROM json_each(${list})))`;
      else {
        const cast = { text: '', bool: '::boolean', int: '::numeric', timestamp: '::timestamptz', id_list: '' }[column.kind];
        condition = sql`(${col} IN (SELECT e${raw(cast)} FROM jsonb_array_elements_text(${list}::jsonb) AS e))`;
      }
    }
    // `x IN (..., NULL)` is NULL rather than false when x is not listed.
    return hasNull ? sql`(${condition} OR NULL)` : condition;
  }

  /** The JSON array `list` holds the string `id`. */
  private listHolds(list: Sql, id: string): Sql {
    if (this.pg) return sql`(${list} @> jsonb_build_array(${this.text(id)}::text))`;
    return sql`(EXISTS (SELECT 1 FROM json_each(${list}) WHERE value = ${this.text(id)}))`;
  }

  /** Case-insensitive substring test of `target` (text) against Python str() of the value. */
  private substring(target: Sql, needle: string): Sql {
    if (this.generation === 'v3') {
      if (this.pg) return sql`(${target} ILIKE ${this.text(`%${escapeLike(needle)}%`)} ESCAPE '\\')`;
      return sql`(instr(lower(${target}), lower(${this.text(needle)})) > 0)`;
    }
    // v2: `%` and `_` in the value act as wildcards (and `\` escapes, as in PostgreSQL's default).
    const pattern = `%${needle}%`;
    if (!this.pg && Buffer.byteLength(pattern, 'utf8') > MAX_SQLITE_LIKE_BYTES) {
      throw new FilterError("Filter value for 'contains' is too long");
    }
    if (this.pg) return sql`(${target} ILIKE ${this.text(pattern)} ESCAPE '\\')`;
    return sql`(lower(${target}) LIKE lower(${this.text(pattern)}) ESCAPE '\\')`;
  }

  /* ---- metadata (§5.4) ---- */

  private metadataFilter(value: unknown): Sql | null {
    if (value === '*') return null;
    if (!isObject(value)) return this.contains(value);
    if (Object.keys(value).some((k) => OPERATORS.has(k))) return this.wholeMetadataOperators(value);
    const parts: Sql[] = [];
    for (const [key, wanted] of Object.entries(value)) {
      const condition = this.metadataKey(key, wanted);
      if (condition) parts.push(condition);
    }
    return parts.length > 0 ? join(parts, 'AND') : null;
  }

  /** `{"metadata": {"contains": {...}}}`: an operator set applied to the whole metadata column. */
  private wholeMetadataOperators(ops: Record<string, unknown>): Sql | null {
    const parts: Sql[] = [];
    for (const [op, value] of Object.entries(ops)) {
      if (!OPERATORS.has(op)) throw new FilterError(`Unsupported comparison operator: ${op}`);
      if (value === '*') continue;
      if (op === 'contains') {
        parts.push(this.contains(value));
        continue;
      }
      if (Object.hasOwn(COMPARISONS, op) && typeof value === 'string' && !parsePyNumber(value)) {
        throw new FilterError(`Invalid numeric value: ${value}. Expected a number, got str`);
      }
      if (op === 'in') {
        if (!Array.isArray(value)) {
          throw new FilterError(
            `Invalid value for 'in' operator: ${pyStr(value)}. Expected an iterable (list, tuple, set), got ${pyTypeName(value)}`,
          );
        }
        if (value.includes('*')) continue;
      }
      throw new FilterError(
        `Operator '${op}' cannot be applied to the whole metadata object; compare a key instead, e.g. {"metadata": {"<key>": {"${op}": ...}}}`,
      );
    }
    return parts.length > 0 ? join(parts, 'AND') : null;
  }

  private metadataKey(key: string, wanted: unknown): Sql | null {
    if (isObject(wanted) && Object.keys(wanted).some((k) => OPERATORS.has(k))) {
      const parts: Sql[] = [];
      for (const [op, value] of Object.entries(wanted)) {
        if (!OPERATORS.has(op)) throw new FilterError(`Unsupported comparison operator: ${op}`);
        if (value === '*') continue;
        const condition = this.metadataKeyOperator(key, op, value);
        if (condition) parts.push(condition);
      }
      return parts.length > 0 ? join(parts, 'AND') : null;
    }
    if (wanted === '*') return null;
    return this.contains(Object.fromEntries([[key, wanted]]));
  }

  private metadataKeyOperator(key: string, op: string, value: unknown): Sql | null {
    if (Object.hasOwn(COMPARISONS, op)) {
      const cmp = raw(COMPARISONS[op]);
      if (typeof value === 'boolean') return this.textCompare(key, cmp, value ? 'true' : 'false');
      const n = typeof value === 'number' ? numberOperand(value) : typeof value === 'string' ? parsePyNumber(value) : null;
      if (n) return sql`(${this.numericForm(key)} ${cmp} ${this.number(n)})`;
      if (typeof value === 'string') return this.textCompare(key, cmp, value);
      const shown = pyStr(value);
      throw new FilterError(
        `Failed to build numeric comparison condition for operator '${op}' with value '${shown}': ` +
          `Failed to process numeric cast for value '${shown}': ` +
          `Invalid value for numeric operator: ${shown}. Expected a number, got ${pyTypeName(value)}`,
      );
    }
    if (op === 'in') {
      if (!Array.isArray(value)) {
        throw new FilterError(
          `Invalid value for 'in' operator: ${pyStr(value)}. Expected an iterable (list, tuple, set), got ${pyTypeName(value)}`,
        );
      }
      if (value.includes('*')) return null;
      if (value.length === 0) return NEVER;
      const list = this.json(value.map((v) => pyStr(v)));
      const source = this.pg ? sql`SELECT jsonb_array_elements_text(${list}::jsonb)` : sql`SELECT value FROM json_each(${list})`;
      return sql`(${this.textForm(key)} IN (${source}))`;
    }
    return this.substring(this.textForm(key), pyStr(value));
  }

  private textCompare(key: string, cmp: Sql, value: string): Sql {
    const collate = raw(this.pg ? ' COLLATE "C"' : '');
    return sql`(${this.textForm(key)}${collate} ${cmp} ${this.text(value)})`;
  }

  /** Text of the top-level metadata value under `key`, as PostgreSQL's `metadata->>key` gives it. */
  private textForm(key: string): Sql {
    if (this.pg) return sql`(${this.metadata} ->> ${this.text(key)}::text)`;
    const a = raw(this.alias());
    const text = sql`CASE ${a}.type WHEN 'null' THEN NULL WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE CAST(${a}.value AS TEXT) END`;
    return sql`(SELECT ${text} FROM json_each(${this.metadata}) AS ${a} WHERE ${a}.key = ${this.text(key)})`;
  }

  /** Numeric value of the metadata value under `key`; NULL when missing, empty or not numeric. */
  private numericForm(key: string): Sql {
    const maxLength = raw(String(MAX_NUMERIC_TEXT));
    if (this.pg) {
      const t = this.textForm(key);
      return sql`(CASE WHEN ${t} ~ ${raw(PG_NUMERIC_TEXT)} AND length(${t}) <= ${maxLength} THEN CAST(${t} AS numeric) END)`;
    }
    const a = raw(this.alias());
    const v = sql`${a}.value`;
    // Comparing the text with its NUMERIC cast applies numeric affinity to it, which succeeds only
    // for a well-formed number; the GLOBs narrow that grammar to the PostgreSQL one above.
    const numericText = join(
      [
        sql`${a}.type = 'text'`,
        sql`length(${v}) <= ${maxLength}`,
        sql`${v} = CAST(${v} AS NUMERIC)`,
        sql`${v} NOT GLOB '*[^ 0-9.eE+-]*'`,
        sql`${v} NOT GLOB '*[eE]*[0-9][0-9][0-9][0-9][0-9]*'`,
      ],
      'AND',
    );
    const number = sql`CASE WHEN ${a}.type IN ('integer', 'real') THEN ${v} WHEN ${numericText} THEN CAST(${v} AS NUMERIC) END`;
    return sql`(SELECT ${number} FROM json_each(${this.metadata}) AS ${a} WHERE ${a}.key = ${this.text(key)})`;
  }

  /** JSON containment: metadata ⊇ wanted (PostgreSQL `@>` semantics). */
  private contains(wanted: unknown): Sql {
    const cleaned = cleanJson(wanted, 0);
    // Charged by size so that the budget does not depend on the dialect; the binds below are free.
    this.spend(jsonNodeCount(cleaned));
    if (this.pg) return sql`(${this.metadata} @> ${this.bind(jsonText(cleaned), 0)}::jsonb)`;
    const root: JsonPath = { base: null, rest: '$' };
    return this.sqliteContains(root, this.pathType(root), this.pathValue(root), cleaned);
  }

  /*
   * SQLite has no containment operator, so the wanted value is unrolled into conditions on the
   * node at `path` (whose json type and SQL value are `type` and `value`): object members are
   * addressed by path (no nesting), and each wanted array element needs an EXISTS over json_each.
   * Every condition is true or false, never NULL (type tests use IS), like `@>`.
   */
  private sqliteContains(path: JsonPath, type: Sql, value: Sql, wanted: unknown): Sql {
    if (wanted === null) return sql`(${type} IS 'null')`;
    if (typeof wanted === 'boolean') return sql`(${type} IS ${raw(wanted ? "'true'" : "'false'")})`;
    if (typeof wanted === 'number') {
      if (!Number.isFinite(wanted)) return NEVER;
      return sql`(coalesce(${type}, '') IN ('integer', 'real') AND ${value} = ${this.bind(wanted, 0)})`;
    }
    if (typeof wanted === 'string') return sql`(${type} IS 'text' AND ${value} = ${this.bind(wanted, 0)})`;
    if (Array.isArray(wanted)) {
      const parts: Sql[] = [sql`(${type} IS 'array')`];
      for (const element of wanted) {
        const a = this.alias();
        // json_each reports each element's path (`fullkey`: the path given to it plus `[i]`).
        const elementPath: JsonPath = { base: raw(`${a}.fullkey`), rest: '' };
        const inner = this.sqliteContains(elementPath, raw(`${a}.type`), raw(`${a}.value`), element);
        parts.push(sql`EXISTS (SELECT 1 FROM json_each(${this.metadata}, ${this.pathSql(path)}) AS ${raw(a)} WHERE ${inner})`);
      }
      return join(parts, 'AND');
    }
    const parts: Sql[] = [sql`(${type} IS 'object')`];
    for (const [key, member] of Object.entries(wanted as Record<string, unknown>)) {
      const memberPath: JsonPath = { base: path.base, rest: path.rest + jsonPathLabel(key) };
      parts.push(this.sqliteContains(memberPath, this.pathType(memberPath), this.pathValue(memberPath), member));
    }
    return join(parts, 'AND');
  }

  private pathSql(path: JsonPath): Sql {
    if (path.base === null) return this.bind(path.rest, 0);
    return path.rest === '' ? path.base : sql`(${path.base} || ${this.bind(path.rest, 0)})`;
  }

  private pathType(path: JsonPath): Sql {
    return sql`json_type(${this.metadata}, ${this.pathSql(path)})`;
  }

  private pathValue(path: JsonPath): Sql {
    return sql`json_extract(${this.metadata}, ${this.pathSql(path)})`;
  }
}

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

/* ------------------------------------------------------------------------------------------
 * Value hygiene.
 * ---------------------------------------------------------------------------------------- */

function cleanString(s: string): string {
  if (s.includes('\u0000')) throw new FilterError('Filter values cannot contain NUL characters');
  // Lone surrogates cannot be encoded (PostgreSQL rejects them inside jsonb).
  return s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

/** Checks NUL characters and nesting depth, and fixes lone surrogates, in a JSON value. */
function cleanJson(value: unknown, depth: number): unknown {
  if (depth > MAX_VALUE_DEPTH) throw new FilterError(`Filter value nesting exceeds maximum depth of ${MAX_VALUE_DEPTH}`);
  if (typeof value === 'string') return cleanString(value);
  if (Array.isArray(value)) return value.map((v) => cleanJson(v, depth + 1));
  if (isObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [cleanString(k), cleanJson(v, depth + 1)]));
  }
  return value === undefined ? null : value;
}

/** Number of keys and values in a JSON value (the size of a containment test). */
function jsonNodeCount(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + jsonNodeCount(v), 1);
  if (isObject(value)) return Object.values(value).reduce((n: number, v) => n + 1 + jsonNodeCount(v), 1);
  return 1;
}

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * Compiles a filters object to a SQL boolean expression, pushing bound values onto `params`
 * (placeholders are `?`). Returns null when the filter imposes no condition (null, {}, wildcards...).
 * `generation` 'v2' applies the v2 differences (no depth limit, no list sugar, contains wildcards
 * not escaped). Throws FilterError (422) for invalid filters; `params` is untouched then.
 */
export function compileFilter(
  filter: unknown,
  model: FilterModel,
  dialect: DialectName,
  params: unknown[],
  generation: 'v2' | 'v3' = 'v3',
): string | null {
  if (filter === null || filter === undefined) return null;
  if (!isObject(filter)) throw new FilterError(`Filters must be an object, got ${pyTypeName(filter)}`);
  const compiled = new FilterCompiler(model, dialect, generation).filter(filter, 0);
  if (!compiled) return null;
  if (compiled.values.length > MAX_PLACEHOLDERS) throw new FilterError('Filter is too large');
  for (const v of compiled.values) params.push(v);
  return compiled.text;
}
