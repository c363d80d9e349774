/*
 * Filter language parser (contract-v3 §5; v2 differences in §9.1).
 *
 * Turns a `filters` object from a list/search body into a validated FilterNode tree
 * (storage/filter.ts), which the store compiles to SQL for its dialect. Every check of the filter
 * language, with the API generation's rules, is made here: an invalid filter is a DomainError
 * `invalid_input` whose message is the 422 `detail`.
 *
 * Newer rules (v3: the reference after v3.0.12, scopes.md S8; `FilterRules.newer`). v2 keeps the
 * rules below them unchanged, and v1's metadata filters keep v3.0.12's:
 * - A non-object item inside AND/OR/NOT is a 422 `Invalid filter configuration`.
 * - Every operand (bare, under an operator, each `in` item) is checked against its column: text
 *   takes strings (`level` one of its values), booleans true/false, timestamps ISO 8601 strings,
 *   numbers numbers, numeric text and booleans; `metadata` an object or a list (bare or under
 *   `contains`); the messages name the reference's internal column (`name` for `id` ...).
 *   contains/icontains need a text column; `embedding` cannot be filtered on.
 * - An object without operator keys on a plain column is a 422 naming its keys.
 * - `null` alone is a null check, `{"ne": null}` a not-null check, `null` under any other
 *   operator a 422.
 * - `ne` is IS DISTINCT FROM and `NOT` is "is not true": a row whose field is unset counts as not
 *   equal (a metadata key's own `ne` still leaves out rows without the key).
 * - gt/gte/lt/lte/ne on text compare text, in byte order on both dialects.
 * - `source_ids`: a list is containment (every id held), `{"contains": "<id>"}` keeps Engram's
 *   one-id test, other scalars are a 422.
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
 *   their keys and scalars, `in` lists count 1), or of more than 500 conditions (MAX_CONDITIONS:
 *   comparisons, `in` and containment tests, and objects or arrays inside containment arrays) ->
 *   `Filter is too large`; a v2 contains/icontains
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
 * - JavaScript cannot tell JSON `1.0` from `1`: such numbers render as Python ints (`1`, `int`)
 *   in messages and in the str() conversion used by metadata `in`/`contains`; integers beyond 2^53
 *   render as floats. Integer-like object keys are iterated first (JavaScript key order), which
 *   can change which error is reported first and the key order of dicts shown in messages.
 * - Python's int()/float() accept non-ASCII digits; only ASCII digits are recognised here.
 * - Accepted datetimes: `YYYY-MM-DD`, optionally followed by `T`/`t`/space, `HH[:MM[:SS[.f+]]]`
 *   (`.` or `,`; fraction truncated to microseconds) and an offset `Z`, `±HH`, `±HH:MM`, `±HHMM` or
 *   `±HH:MM:SS` (under 24h); surrounding whitespace ignored; naive values are UTC; years 1-9999.
 * - The Message special key `peer_perspective` (§7.4) is not handled here: callers remove it first.
 */
import { invalidInput, type DomainError } from '../errors.js';
import type { FilterComparison, FilterInstant, FilterLimits, FilterNode, FilterNumber, FilterTarget, FilterValue } from '../../storage/store.js';
import { parseDateTime } from './filter-datetime.js';
import { isObject, numberOperand, parsePyNumber, pyFloat, pyRepr, pyStr, pyTypeName } from './python-format.js';

/**
 * `id_list`: a JSON array of ids (conclusion `source_ids`); only `contains` (the list holds the id)
 * and `null` apply. `unfilterable`: a column the reference has but filters cannot use
 * (`embedding`); unknown to rules before the newer reference's.
 */
export type ColumnKind = 'text' | 'bool' | 'int' | 'timestamp' | 'id_list' | 'unfilterable';

/** What a model lets a filter name: its columns by public key, and how unknown keys are refused. */
export interface FilterSchema {
  /** Model name used in error messages: 'Workspace' | 'Peer' | 'Session' | 'Message' | 'Document'. */
  name: string;
  columns: Readonly<Record<string, ColumnKind>>;
  /** Keys that the model recognises as columns it lacks (error "Column '<k>' does not exist on <Model>"),
   *  versus other keys (error "Column '<k>' is not allowed to be filtered on or does not exist on <Model>").
   *  Per §5.1: for Workspace/Peer/Session the set is {id, created_at, is_active, workspace_id, session_id, peer_id, metadata}; for Message it is empty.
   *  'all' (Document): every key the model lacks gets the "does not exist" message. */
  knownKeys: ReadonlySet<string> | 'all';
  /** Newer rules: the reference's internal column names, which its messages use (`name` for `id` ...); the key itself when absent. */
  internal?: Readonly<Record<string, string>>;
  /** Newer rules: the metadata column's internal name in messages (`h_metadata` when absent). */
  metadataName?: string;
  /** Newer rules: columns whose values come from a closed set. */
  closedSets?: Readonly<Record<string, readonly string[]>>;
}

/** How filters are read: the API generation that receives a request chooses its rules (contract §9.1). */
export interface FilterRules {
  /** Deepest nesting of AND/OR/NOT. */
  maxDepth: number;
  /** A list as a column's value means `in` (v3); in v2 the column is compared with the list itself, which never matches. */
  listSugar: boolean;
  /** contains/icontains values are LIKE patterns (`%`, `_` wildcards) rather than literal text (v2). */
  wildcards: boolean;
  /**
   * The reference's filter rules after v3.0.12 (scopes.md S8): every operand typed by its column,
   * 422s for malformed shapes with its messages, `NOT` and `ne` counting an unset field as "not
   * equal", text comparisons, `null` as a null check. See "Newer rules" at the top of this file.
   */
  newer: boolean;
}

/** The current interface's rules: typed operands (the newer reference's v3). */
export const CURRENT_FILTER_RULES: FilterRules = { maxDepth: 5, listSugar: true, wildcards: false, newer: true };
/** Untyped operands (v3.0.12's rules, with Engram's 422s for its 500s): v1's metadata filters keep them. */
export const UNTYPED_FILTER_RULES: FilterRules = { maxDepth: 5, listSugar: true, wildcards: false, newer: false };
/** LIKE wildcards, deep nesting, a list compared as a value (the v2 interface's rules). */
export const WILDCARD_FILTER_RULES: FilterRules = { maxDepth: 64, listSugar: false, wildcards: true, newer: false };

const OPERATORS = new Set(['gte', 'lte', 'gt', 'lt', 'ne', 'in', 'contains', 'icontains']);
const COMPARISONS: Record<string, FilterComparison> = { gte: '>=', lte: '<=', gt: '>', lt: '<', ne: '<>' };
const LOGICAL_KEYS = ['AND', 'OR', 'NOT'] as const;

const MAX_VALUE_DEPTH = 16;
/** Size budget, counted in values SQLite would bind (drivers allow ~32k placeholders). */
const MAX_BOUND_VALUES = 10_000;

const NEVER: FilterNode = { kind: 'never' };

/** The Python type of a column kind, as the newer reference names it in messages. */
const PYTHON_TYPE: Record<ColumnKind, string> = { text: 'str', bool: 'bool', int: 'int', timestamp: 'datetime', id_list: 'list', unfilterable: 'NoneType' };

function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function nullOperand(op: string): DomainError {
  return invalidInput(`Operator '${op}' does not accept null. Use {"ne": null} for a not-null check, or null on its own for a null check.`);
}

function inNotAList(value: unknown): DomainError {
  return invalidInput(`Invalid value for 'in' operator: ${pyStr(value)}. Expected an iterable (list, tuple, set), got ${pyTypeName(value)}`);
}

function and(parts: FilterNode[]): FilterNode | null {
  if (parts.length === 0) return null;
  return parts.length === 1 ? parts[0] : { kind: 'and', items: parts };
}

class FilterParser {
  private cost = 0;

  constructor(
    private readonly schema: FilterSchema,
    private readonly rules: FilterRules,
    private readonly limits: FilterLimits,
  ) {}

  /* ---- the size budget ---- */

  /**
   * Counts against the size budget, in values bound (the same for both dialects; SQLite binds a
   * metadata key's path twice, at most MAX_CONDITIONS more).
   */
  private spend(cost: number): void {
    this.cost += cost;
    if (this.cost > MAX_BOUND_VALUES) throw invalidInput('Filter is too large');
  }

  /** A string that will be bound: cleaned, and counted. */
  private text(s: string): string {
    const cleaned = cleanString(s);
    this.spend(1);
    return cleaned;
  }

  /* ---- operator objects ---- */

  /**
   * An object of operators (`{"gte": 1, "lt": 5}`), each in its key order: an unknown operator is
   * a 422, a `*` value imposes nothing, the conditions of the others are ANDed.
   */
  private operators(ops: Record<string, unknown>, condition: (op: string, value: unknown) => FilterNode | null): FilterNode | null {
    const parts: FilterNode[] = [];
    for (const [op, value] of Object.entries(ops)) {
      if (!OPERATORS.has(op)) throw invalidInput(`Unsupported comparison operator: ${op}`);
      if (value === '*') continue;
      const part = condition(op, value);
      if (part) parts.push(part);
    }
    return and(parts);
  }

  /**
   * The newer rules' operators: `null` only under `ne` (`notNull`, the not-null check: null for
   * none), `in` takes a list (a `*` in it imposes nothing, an empty one matches nothing, the
   * others go to `inList`); every other operator and value goes to `condition`.
   */
  private typedOperators(
    ops: Record<string, unknown>,
    notNull: FilterNode | null,
    inList: (values: unknown[]) => FilterNode,
    condition: (op: string, value: unknown) => FilterNode,
  ): FilterNode | null {
    return this.operators(ops, (op, value) => {
      if (value === null || value === undefined) {
        if (op !== 'ne') throw nullOperand(op);
        return notNull;
      }
      if (op !== 'in') return condition(op, value);
      if (!Array.isArray(value)) throw inNotAList(value);
      if (value.includes('*')) return null;
      return value.length === 0 ? NEVER : inList(value);
    });
  }

  /* ---- structure (§5.2) ---- */

  filter(filter: Record<string, unknown>, depth: number): FilterNode | null {
    const conditions: FilterNode[] = [];
    for (const op of LOGICAL_KEYS) {
      if (!Object.hasOwn(filter, op)) continue;
      const items = filter[op];
      if (op === 'NOT' && (items === null || items === undefined)) throw invalidInput('NOT operator cannot be None');
      if (!Array.isArray(items)) throw invalidInput(`${op} operator must contain a list, got ${pyTypeName(items)}`);
      const subs: FilterNode[] = [];
      for (const item of items) {
        if (depth + 1 > this.rules.maxDepth) throw invalidInput(`Filter nesting exceeds maximum depth of ${this.rules.maxDepth}`);
        if (!isObject(item)) {
          if (this.rules.newer) throw invalidInput('Invalid filter configuration');
          throw invalidInput(`Filter conditions inside ${op} must be objects, got ${pyTypeName(item)}`);
        }
        const sub = this.filter(item, depth + 1);
        // newer rules: "is not true", so that a row whose field is unset is not the excluded value
        if (sub) subs.push(op === 'NOT' ? { kind: 'not', item: sub, unsetAsFalse: this.rules.newer } : sub);
      }
      if (subs.length > 0) conditions.push(subs.length === 1 ? subs[0] : { kind: op === 'OR' ? 'or' : 'and', items: subs });
    }
    for (const [key, value] of Object.entries(filter)) {
      if ((LOGICAL_KEYS as readonly string[]).includes(key)) continue;
      const condition = this.field(key, value);
      if (condition) conditions.push(condition);
    }
    return and(conditions);
  }

  private field(key: string, value: unknown): FilterNode | null {
    if (key === 'metadata') return this.rules.newer ? this.typedMetadataFilter(value) : this.metadataFilter(value);
    const kind = Object.hasOwn(this.schema.columns, key) ? this.schema.columns[key] : undefined;
    if (!kind || (kind === 'unfilterable' && !this.rules.newer)) {
      if (this.schema.knownKeys === 'all' || this.schema.knownKeys.has(key)) throw invalidInput(`Column '${key}' does not exist on ${this.schema.name}`);
      throw invalidInput(`Column '${key}' is not allowed to be filtered on or does not exist on ${this.schema.name}`);
    }
    if (this.rules.newer) return kind === 'id_list' ? this.typedIdListFilter(key, value) : this.typedColumnFilter(key, kind, value);
    return this.columnFilter(key, kind, value);
  }

  /* ---- plain columns (§5.3) ---- */

  private columnFilter(key: string, kind: ColumnKind, value: unknown): FilterNode | null {
    if (value === '*') return null;
    if (Array.isArray(value)) {
      if (!this.rules.listSugar) return NEVER;
      return this.columnOperators(key, kind, { in: value });
    }
    if (isObject(value)) {
      if (!Object.keys(value).some((k) => OPERATORS.has(k))) {
        throw invalidInput(
          `Invalid filter for column '${key}': an object value must use at least one operator (gte, lte, gt, lt, ne, in, contains, icontains)`,
        );
      }
      return this.columnOperators(key, kind, value);
    }
    return this.columnEquals(key, kind, value);
  }

  private compare(column: string, op: FilterComparison, value: FilterValue): FilterNode {
    this.spend(1);
    return { kind: 'compare', column, op, value };
  }

  private columnEquals(column: string, kind: ColumnKind, value: unknown): FilterNode {
    if (value === null || value === undefined) return { kind: 'is-null', column };
    switch (kind) {
      case 'text':
        return typeof value === 'string' ? { kind: 'compare', column, op: '=', value: { type: 'text', value: this.text(value) } } : NEVER;
      case 'bool':
        return typeof value === 'boolean' ? this.compare(column, '=', { type: 'bool', value }) : NEVER;
      case 'int':
        return typeof value === 'number' && Number.isFinite(value) ? this.compare(column, '=', { type: 'number', value: numberOperand(value) }) : NEVER;
      case 'id_list':
      case 'unfilterable':
        return NEVER;
      case 'timestamp': {
        if (typeof value !== 'string') return NEVER;
        const instant = parseDateTime(value);
        if (!instant) throw invalidInput(`Invalid datetime value: ${value}`);
        return this.compare(column, '=', { type: 'time', value: instant });
      }
    }
  }

  private columnOperators(key: string, kind: ColumnKind, ops: Record<string, unknown>): FilterNode | null {
    return this.operators(ops, (op, value) => this.columnOperator(key, kind, op, value));
  }

  private columnOperator(key: string, kind: ColumnKind, op: string, value: unknown): FilterNode | null {
    let instant: FilterInstant | null = null;
    if (kind === 'timestamp' && typeof value === 'string') {
      instant = parseDateTime(value);
      if (!instant) throw invalidInput(`Invalid datetime value: ${value}`);
    }

    if (Object.hasOwn(COMPARISONS, op)) {
      const cmp = COMPARISONS[op];
      if (kind === 'timestamp') {
        if (!instant) throw invalidInput(`Invalid datetime value: ${pyStr(value)}`);
        return this.compare(key, cmp, { type: 'time', value: instant });
      }
      const n = pyFloat(value);
      if (!n) throw invalidInput(`Invalid numeric value: ${pyStr(value)}. Expected a number, got ${pyTypeName(value)}`);
      if (kind === 'int') return this.compare(key, cmp, { type: 'number', value: n });
      if (kind === 'bool' && op === 'ne' && typeof value === 'boolean') return this.compare(key, '<>', { type: 'bool', value });
      throw invalidInput(`Operator '${op}' is not supported on column '${key}'`);
    }

    if (kind === 'id_list') {
      if (op !== 'contains') throw invalidInput(`Operator '${op}' is not supported on column '${key}'`);
      if (value === null || typeof value === 'object') throw invalidInput(`Operator 'contains' on column '${key}' takes one id, got ${pyTypeName(value)}`);
      return { kind: 'holds', column: key, id: this.text(pyStr(value)) };
    }
    if (op === 'in') return this.columnIn(key, kind, value);

    // contains / icontains: case-insensitive substring on text columns only.
    if (kind !== 'text') throw invalidInput(`Operator '${op}' is not supported on column '${key}'`);
    return this.like({ column: key }, pyStr(value));
  }

  private columnIn(column: string, kind: ColumnKind, value: unknown): FilterNode | null {
    if (!Array.isArray(value)) throw inNotAList(value);
    if (value.includes('*')) return null;
    const values: FilterValue[] = [];
    let orNull = false;
    for (const item of value) {
      if (item === null) orNull = true;
      else if (kind === 'text' && typeof item === 'string') values.push({ type: 'text', value: cleanString(item) });
      else if (kind === 'bool' && typeof item === 'boolean') values.push({ type: 'bool', value: item });
      else if (kind === 'int' && typeof item === 'number' && Number.isFinite(item)) values.push({ type: 'number', value: numberOperand(item) });
      else if (kind === 'timestamp' && typeof item === 'string') {
        const instant = parseDateTime(item);
        if (!instant) throw invalidInput(`Invalid datetime value in list: ${item}`);
        values.push({ type: 'time', value: instant });
      }
    }
    // One JSON array parameter whatever the list length.
    if (values.length > 0) this.spend(1);
    return { kind: 'in', column, values, orNull };
  }

  /** Case-insensitive substring test of the target's text against Python str() of the value. */
  private like(target: FilterTarget, needle: string): FilterNode {
    // v2: `%` and `_` in the value act as wildcards (and `\` escapes, as in PostgreSQL's default).
    // measured as sent and folded to lower case (SQLite's dialect folds a pattern beyond ASCII itself)
    if (this.rules.wildcards && Math.max(Buffer.byteLength(needle, 'utf8'), Buffer.byteLength(needle.toLowerCase(), 'utf8')) + 2 > this.limits.likePatternBytes) {
      throw invalidInput("Filter value for 'contains' is too long");
    }
    return { kind: 'like', target, needle: this.text(needle), wildcards: this.rules.wildcards };
  }

  /* ---- newer rules (scopes.md S8): plain columns ---- */

  /** The column's name in the reference's messages. */
  private internal(key: string): string {
    return this.schema.internal !== undefined && Object.hasOwn(this.schema.internal, key) ? this.schema.internal[key] : key;
  }

  private typedColumnFilter(key: string, kind: ColumnKind, value: unknown): FilterNode | null {
    if (value === '*') return null;
    if (kind === 'unfilterable') throw invalidInput(`Column '${this.internal(key)}' cannot be filtered on`);
    if (value === null || value === undefined) return { kind: 'is-null', column: key };
    if (Array.isArray(value)) return this.typedColumnOperators(key, kind, { in: value });
    if (isObject(value)) {
      const keys = Object.keys(value);
      if (!keys.some((k) => OPERATORS.has(k))) {
        throw invalidInput(
          `Invalid filter for column '${key}': unsupported operator(s) ${pyRepr([...keys].sort(byCodePoint))}. ` +
            `Expected one of ${pyRepr([...OPERATORS].sort(byCodePoint))} or a scalar value.`,
        );
      }
      return this.typedColumnOperators(key, kind, value);
    }
    return this.compare(key, '=', this.operand(key, kind, value));
  }

  private typedColumnOperators(key: string, kind: ColumnKind, ops: Record<string, unknown>): FilterNode | null {
    const inList = (list: unknown[]): FilterNode => {
      const values = list.map((item) => this.operand(key, kind, item));
      // One JSON array parameter whatever the list length.
      this.spend(1);
      return { kind: 'in', column: key, values, orNull: false };
    };
    return this.typedOperators(ops, { kind: 'not-null', column: key }, inList, (op, value) => {
      if (op === 'contains' || op === 'icontains') {
        if (kind !== 'text') throw invalidInput(`Operator '${op}' requires a text column, but '${this.internal(key)}' is ${PYTHON_TYPE[kind]}`);
        return this.like({ column: key }, pyStr(value));
      }
      const operand = this.operand(key, kind, value);
      if (op !== 'ne') return this.compare(key, COMPARISONS[op], operand);
      this.spend(1);
      return { kind: 'distinct', column: key, value: operand };
    });
  }

  /** An operand typed by its column (the reference's `_coerce_operand`); a 422 when it does not fit. */
  private operand(key: string, kind: ColumnKind, value: unknown): FilterValue {
    const column = this.internal(key);
    switch (kind) {
      case 'text': {
        if (typeof value !== 'string') throw invalidInput(`Invalid value for column '${column}': expected a string, got ${pyTypeName(value)}`);
        const allowed = this.schema.closedSets !== undefined && Object.hasOwn(this.schema.closedSets, key) ? this.schema.closedSets[key] : undefined;
        if (allowed !== undefined && !allowed.includes(value)) {
          throw invalidInput(`Invalid value for column '${column}': ${pyRepr(value)}. Expected one of ${pyRepr([...allowed].sort(byCodePoint))}`);
        }
        return { type: 'text', value: cleanString(value) };
      }
      case 'bool':
        if (typeof value !== 'boolean') throw invalidInput(`Invalid value for column '${column}': expected true or false, got ${pyTypeName(value)}`);
        return { type: 'bool', value };
      case 'int': {
        const n = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? pyFloat(value) : null;
        if (!n) throw invalidInput(`Invalid numeric value: ${pyStr(value)}. Expected a number, got ${pyTypeName(value)}`);
        return { type: 'number', value: n };
      }
      case 'timestamp': {
        if (typeof value !== 'string') throw invalidInput(`Invalid value for column '${column}': expected a datetime, got ${pyTypeName(value)}`);
        const instant = parseDateTime(value);
        if (!instant) throw invalidInput(`Invalid datetime value: ${value}`);
        return { type: 'time', value: instant };
      }
      case 'id_list':
      case 'unfilterable':
        throw new Error(`no scalar operand for a column of kind ${kind}`);
    }
  }

  /* ---- newer rules: JSON columns (metadata, source_ids) ---- */

  private jsonColumnError(column: string): DomainError {
    return invalidInput(`Invalid filter for column '${column}': a JSONB column takes an object, optionally under 'contains'`);
  }

  /**
   * `metadata`: an object is per-key conditions (as before) unless it holds an operator key; a
   * list is containment; `null` is a null check (metadata is never unset: nothing); any other
   * scalar is a 422. Operators on the whole column: `contains` with an object or a list, `ne: null`.
   */
  private typedMetadataFilter(value: unknown): FilterNode | null {
    const column = this.schema.metadataName ?? 'h_metadata';
    if (value === '*') return null;
    if (value === null || value === undefined) return NEVER;
    if (Array.isArray(value)) return this.contains(value);
    if (!isObject(value)) throw this.jsonColumnError(column);
    if (!Object.keys(value).some((k) => OPERATORS.has(k))) return this.metadataFilter(value);
    // `ne: null`: metadata is always set, no condition
    return this.typedOperators(value, null, () => { throw this.jsonColumnError(column); }, (op, operand) => {
      if (op !== 'contains' || !(Array.isArray(operand) || isObject(operand))) throw this.jsonColumnError(column);
      return this.contains(operand);
    });
  }

  /**
   * `source_ids`, a JSON list of ids: a list holds every listed id (containment), an object
   * without operators is compared by equality (a list never equals one), `null` is a null check;
   * under `contains` one id (the list holds it: what `@honcho-ai/sdk` 2.5.0's
   * `conclusions.derived()` sends) or a list of them; other scalars are a 422.
   */
  private typedIdListFilter(key: string, value: unknown): FilterNode | null {
    const column = this.internal(key);
    if (value === '*') return null;
    if (value === null || value === undefined) return { kind: 'is-null', column: key };
    if (Array.isArray(value)) return this.holdsAll(key, value);
    if (!isObject(value)) throw this.jsonColumnError(column);
    if (!Object.keys(value).some((k) => OPERATORS.has(k))) return NEVER;
    return this.typedOperators(value, { kind: 'not-null', column: key }, () => { throw this.jsonColumnError(column); }, (op, operand) => {
      if (op !== 'contains') throw this.jsonColumnError(column);
      if (typeof operand === 'string') return { kind: 'holds', column: key, id: this.text(operand) };
      if (Array.isArray(operand)) return this.holdsAll(key, operand);
      if (isObject(operand)) return NEVER;
      throw this.jsonColumnError(column);
    });
  }

  /** The id list holds every string of `ids` (JSON containment); a list holds no non-string. */
  private holdsAll(key: string, ids: unknown[]): FilterNode {
    if (ids.some((id) => typeof id !== 'string')) return NEVER;
    if (ids.length === 0) return { kind: 'not-null', column: key };
    const unique = [...new Set(ids as string[])];
    return and(unique.map((id): FilterNode => ({ kind: 'holds', column: key, id: this.text(id) }))) ?? NEVER;
  }

  /* ---- metadata (§5.4) ---- */

  private metadataFilter(value: unknown): FilterNode | null {
    if (value === '*') return null;
    if (!isObject(value)) return this.contains(value);
    if (Object.keys(value).some((k) => OPERATORS.has(k))) return this.wholeMetadataOperators(value);
    const parts: FilterNode[] = [];
    for (const [key, wanted] of Object.entries(value)) {
      const condition = this.metadataKey(key, wanted);
      if (condition) parts.push(condition);
    }
    return and(parts);
  }

  /** `{"metadata": {"contains": {...}}}`: an operator set applied to the whole metadata column. */
  private wholeMetadataOperators(ops: Record<string, unknown>): FilterNode | null {
    return this.operators(ops, (op, value) => {
      if (op === 'contains') return this.contains(value);
      if (Object.hasOwn(COMPARISONS, op) && typeof value === 'string' && !parsePyNumber(value)) {
        throw invalidInput(`Invalid numeric value: ${value}. Expected a number, got str`);
      }
      if (op === 'in') {
        if (!Array.isArray(value)) throw inNotAList(value);
        if (value.includes('*')) return null;
      }
      throw invalidInput(
        `Operator '${op}' cannot be applied to the whole metadata object; compare a key instead, e.g. {"metadata": {"<key>": {"${op}": ...}}}`,
      );
    });
  }

  private metadataKey(key: string, wanted: unknown): FilterNode | null {
    if (isObject(wanted) && Object.keys(wanted).some((k) => OPERATORS.has(k))) {
      return this.operators(wanted, (op, value) => this.metadataKeyOperator(key, op, value));
    }
    if (wanted === '*') return null;
    return this.contains(Object.fromEntries([[key, wanted]]));
  }

  private metadataKeyOperator(key: string, op: string, value: unknown): FilterNode | null {
    if (Object.hasOwn(COMPARISONS, op)) {
      const cmp = COMPARISONS[op];
      if (typeof value === 'boolean') return this.keyText(key, cmp, value ? 'true' : 'false');
      const n = typeof value === 'number' ? numberOperand(value) : typeof value === 'string' ? parsePyNumber(value) : null;
      if (n) return this.keyNumber(key, cmp, n);
      if (typeof value === 'string') return this.keyText(key, cmp, value);
      const shown = pyStr(value);
      throw invalidInput(
        `Failed to build numeric comparison condition for operator '${op}' with value '${shown}': ` +
          `Failed to process numeric cast for value '${shown}': ` +
          `Invalid value for numeric operator: ${shown}. Expected a number, got ${pyTypeName(value)}`,
      );
    }
    if (op === 'in') {
      if (!Array.isArray(value)) throw inNotAList(value);
      if (value.includes('*')) return null;
      if (value.length === 0) return NEVER;
      const values = value.map((v) => cleanString(pyStr(v)));
      this.spend(1);
      return { kind: 'key-in', key: this.text(key), values };
    }
    const metadataKey = this.text(key);
    return this.like({ metadataKey }, pyStr(value));
  }

  private keyText(key: string, op: FilterComparison, value: string): FilterNode {
    const metadataKey = this.text(key);
    return { kind: 'key-text', key: metadataKey, op, value: this.text(value) };
  }

  private keyNumber(key: string, op: FilterComparison, value: FilterNumber): FilterNode {
    const metadataKey = this.text(key);
    this.spend(1);
    return { kind: 'key-number', key: metadataKey, op, value };
  }

  /** JSON containment: metadata ⊇ wanted (PostgreSQL `@>` semantics). */
  private contains(wanted: unknown): FilterNode {
    const cleaned = cleanJson(wanted, 0);
    // Charged by size so that the budget does not depend on the dialect.
    this.spend(jsonNodeCount(cleaned));
    return { kind: 'contains', value: cleaned };
  }
}

/* ------------------------------------------------------------------------------------------
 * Value hygiene.
 * ---------------------------------------------------------------------------------------- */

function cleanString(s: string): string {
  if (s.includes('\u0000')) throw invalidInput('Filter values cannot contain NUL characters');
  // Lone surrogates cannot be encoded (PostgreSQL rejects them inside jsonb).
  return s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

/** Checks NUL characters and nesting depth, and fixes lone surrogates, in a JSON value. */
function cleanJson(value: unknown, depth: number): unknown {
  if (depth > MAX_VALUE_DEPTH) throw invalidInput(`Filter value nesting exceeds maximum depth of ${MAX_VALUE_DEPTH}`);
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

/**
 * Most conditions a filter may hold: comparisons, `in` and containment tests, and each object or
 * array inside a containment array (a subquery of its own on SQLite). SQLite's planner takes time
 * that grows faster than the conditions to prepare a statement: 500 ORed id comparisons took
 * 6 ms, 2,000 took 85 ms and 4,900 took 313 ms, 4,900 metadata comparisons 0.8 s, each time
 * holding the process (a request at this limit: about 30 ms, measured through HTTP).
 */
export const MAX_CONDITIONS = 500;

/** The conditions of a parsed filter (MAX_CONDITIONS). */
function conditionCount(node: FilterNode): number {
  switch (node.kind) {
    case 'and':
    case 'or':
      return node.items.reduce((n, item) => n + conditionCount(item), 0);
    case 'not':
      return conditionCount(node.item);
    case 'never':
      return 0;
    case 'contains':
      return 1 + containedContainers(node.value);
    default:
      return 1;
  }
}

/** Objects and arrays that are elements of arrays, anywhere in a containment value. */
function containedContainers(value: unknown): number {
  const container = (v: unknown) => Array.isArray(v) || isObject(v);
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + containedContainers(v) + (container(v) ? 1 : 0), 0);
  if (isObject(value)) return Object.values(value).reduce((n: number, v) => n + containedContainers(v), 0);
  return 0;
}

/**
 * Parses a filters object. Returns null when the filter imposes no condition (null, {},
 * wildcards...). Throws DomainError `invalid_input` (422) for invalid filters.
 */
export function parseFilter(filter: unknown, schema: FilterSchema, rules: FilterRules, limits: FilterLimits): FilterNode | null {
  if (filter === null || filter === undefined) return null;
  if (!isObject(filter)) throw invalidInput(`Filters must be an object, got ${pyTypeName(filter)}`);
  const node = new FilterParser(schema, rules, limits).filter(filter, 0);
  if (node !== null && conditionCount(node) > MAX_CONDITIONS) throw invalidInput('Filter is too large');
  return node;
}
