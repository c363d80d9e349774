/*
 * Request validation that reports errors exactly as FastAPI with pydantic v2 does (contract §6):
 * same `type`, `loc`, `msg`, `input` and `ctx`, in the same order, with pydantic's lax coercions.
 * No validation library produces pydantic's error bodies, and translating another library's
 * errors loses the input values and ordering, so the few validators the API needs live here.
 * Each schema also describes itself as JSON Schema for the served OpenAPI document.
 */

import { daysInMonth, readDateTime } from '../../domain/iso-datetime.js';
import { dateOfEpochMicros, PreciseDate } from '../../storage/precise-date.js';

export type Loc = (string | number)[];

export interface ValidationItem {
  type: string;
  loc: Loc;
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

export const INVALID: unique symbol = Symbol('invalid');
export type Parsed<T> = T | typeof INVALID;

export interface Schema<T> {
  /** Validates `input`, appending problems to `errors`; INVALID when any were found. */
  parse(input: unknown, loc: Loc, errors: ValidationItem[]): Parsed<T>;
  jsonSchema(): Record<string, unknown>;
}

export type Infer<S> = S extends Schema<infer T> ? T : never;

type JsonObject = Record<string, unknown>;

export function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Stores `value` under `key` as an own property. `target[key] = value` with the key
 * `__proto__` would replace the object's prototype instead, losing the key; JSON.parse (and
 * Python) keep it as ordinary data, so objects built from client data must too.
 */
export function setOwn(target: JsonObject, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

function item(type: string, loc: Loc, msg: string, input: unknown, ctx?: Record<string, unknown>): ValidationItem {
  return ctx === undefined ? { type, loc, msg, input } : { type, loc, msg, input, ctx };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Length in Unicode code points, as Python counts characters. */
function codePointLength(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0xd800 || c > 0xdbff) n++;
  }
  return n;
}

// ---------------------------------------------------------------- strings

export interface StringRules {
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  description?: string;
}

interface WellFormed {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/**
 * The text with U+FFFD in place of each unpaired UTF-16 surrogate. JSON can spell one
 * (`"\ud83d"`: what `JSON.stringify` writes for a string cut inside an emoji), UTF-8 cannot, so
 * the store would keep U+FFFD (or worse, one per byte of its encoding); reading it so here makes
 * the answer to a write the same as what is read back later.
 */
export function wellFormed(text: string): string {
  return (text as unknown as WellFormed).isWellFormed() ? text : (text as unknown as WellFormed).toWellFormed();
}

export function str(rules: StringRules = {}): Schema<string> {
  const regex = rules.pattern === undefined ? undefined : new RegExp(rules.pattern);
  return {
    parse(raw, loc, errors) {
      if (typeof raw !== 'string') {
        errors.push(item('string_type', loc, 'Input should be a valid string', raw));
        return INVALID;
      }
      const input = wellFormed(raw);
      if (rules.minLength !== undefined || rules.maxLength !== undefined) {
        const length = codePointLength(input);
        if (rules.minLength !== undefined && length < rules.minLength) {
          errors.push(
            item('string_too_short', loc, `String should have at least ${plural(rules.minLength, 'character')}`, raw, {
              min_length: rules.minLength,
            }),
          );
          return INVALID;
        }
        if (rules.maxLength !== undefined && length > rules.maxLength) {
          errors.push(
            item('string_too_long', loc, `String should have at most ${plural(rules.maxLength, 'character')}`, raw, {
              max_length: rules.maxLength,
            }),
          );
          return INVALID;
        }
      }
      if (regex !== undefined && !regex.test(input)) {
        errors.push(
          item('string_pattern_mismatch', loc, `String should match pattern '${rules.pattern}'`, raw, {
            pattern: rules.pattern,
          }),
        );
        return INVALID;
      }
      return input;
    },
    jsonSchema() {
      const schema: JsonObject = { type: 'string' };
      if (rules.minLength !== undefined) schema.minLength = rules.minLength;
      if (rules.maxLength !== undefined) schema.maxLength = rules.maxLength;
      if (rules.pattern !== undefined) schema.pattern = rules.pattern;
      if (rules.description !== undefined) schema.description = rules.description;
      return schema;
    },
  };
}

// ---------------------------------------------------------------- booleans and numbers

const TRUE_WORDS = new Set(['1', 'on', 't', 'true', 'y', 'yes']);
const FALSE_WORDS = new Set(['0', 'off', 'f', 'false', 'n', 'no']);

export function bool(): Schema<boolean> {
  return {
    parse(input, loc, errors) {
      if (typeof input === 'boolean') return input;
      if (typeof input === 'string') {
        const lowered = input.toLowerCase();
        if (TRUE_WORDS.has(lowered)) return true;
        if (FALSE_WORDS.has(lowered)) return false;
        errors.push(item('bool_parsing', loc, 'Input should be a valid boolean, unable to interpret input', input));
        return INVALID;
      }
      if (typeof input === 'number' && (input === 0 || input === 1)) return input === 1;
      // a whole number other than 0 and 1 (2, -1, 2.0) cannot be read as one; a fraction is not a boolean at all
      if (typeof input === 'number' && Number.isInteger(input)) {
        errors.push(item('bool_parsing', loc, 'Input should be a valid boolean, unable to interpret input', input));
        return INVALID;
      }
      errors.push(item('bool_type', loc, 'Input should be a valid boolean', input));
      return INVALID;
    },
    jsonSchema: () => ({ type: 'boolean' }),
  };
}

export interface IntRules {
  ge?: number;
  le?: number;
  description?: string;
}

export function int(rules: IntRules = {}): Schema<number> {
  return {
    parse(input, loc, errors) {
      let value: number;
      if (typeof input === 'number') {
        if (!Number.isFinite(input)) {
          errors.push(item('finite_number', loc, 'Input should be a finite number', input));
          return INVALID;
        }
        if (!Number.isInteger(input)) {
          errors.push(item('int_from_float', loc, 'Input should be a valid integer, got a number with a fractional part', input));
          return INVALID;
        }
        value = input;
      } else if (typeof input === 'boolean') {
        value = input ? 1 : 0;
      } else if (typeof input === 'string') {
        // pydantic's own forms: digits with single underscores between them, and an all-zero fraction ("2.0", not "2.")
        const match = /^([+-]?\d+(?:_\d+)*)(?:\.0+)?$/.exec(input.trim());
        if (match === null) {
          errors.push(item('int_parsing', loc, 'Input should be a valid integer, unable to parse string as an integer', input));
          return INVALID;
        }
        // `-0` is 0 (a -0 would be written `0` on the wire anyway, but compares apart in code)
        value = Number(match[1].replace(/_/g, '')) || 0;
      } else {
        errors.push(item('int_type', loc, 'Input should be a valid integer', input));
        return INVALID;
      }
      if (rules.ge !== undefined && value < rules.ge) {
        errors.push(
          item('greater_than_equal', loc, `Input should be greater than or equal to ${rules.ge}`, input, { ge: rules.ge }),
        );
        return INVALID;
      }
      if (rules.le !== undefined && value > rules.le) {
        errors.push(item('less_than_equal', loc, `Input should be less than or equal to ${rules.le}`, input, { le: rules.le }));
        return INVALID;
      }
      return value;
    },
    jsonSchema() {
      const schema: JsonObject = { type: 'integer' };
      if (rules.ge !== undefined) schema.minimum = rules.ge;
      if (rules.le !== undefined) schema.maximum = rules.le;
      if (rules.description !== undefined) schema.description = rules.description;
      return schema;
    },
  };
}

/**
 * A number written as pydantic reads a float from text: spaces around it, a sign, digits with a
 * point and an exponent, single underscores inside (`1_000.5`, not `_1` or `1_`), or `inf`,
 * `infinity` and `nan` in any case. Undefined for anything else (`0x10`, `1e`, `١`).
 */
function floatOfText(text: string): number | undefined {
  const trimmed = text.trim();
  const special = /^([+-]?)(inf|infinity|nan)$/i.exec(trimmed);
  if (special !== null) return special[2].toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity;
  if (trimmed.startsWith('_') || trimmed.endsWith('_') || trimmed.includes('__')) return undefined;
  const plain = trimmed.replace(/_/g, '');
  return /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(plain) ? Number(plain) : undefined;
}

/** A float (pydantic `float`); bounds render as pydantic 2.13 writes them (`1` for 1.0). */
export function float(rules: { ge?: number; le?: number } = {}): Schema<number> {
  return {
    parse(input, loc, errors) {
      let value: number;
      if (typeof input === 'number') value = input;
      else if (typeof input === 'boolean') value = input ? 1 : 0;
      else if (typeof input === 'string') {
        const read = floatOfText(input);
        if (read === undefined) {
          errors.push(item('float_parsing', loc, 'Input should be a valid number, unable to parse string as a number', input));
          return INVALID;
        }
        value = read;
      } else {
        errors.push(item('float_type', loc, 'Input should be a valid number', input));
        return INVALID;
      }
      // the upper bound first, and each as "not within" so that nan fails it, as in pydantic
      if (rules.le !== undefined && !(value <= rules.le)) {
        errors.push(item('less_than_equal', loc, `Input should be less than or equal to ${rules.le}`, input, { le: rules.le }));
        return INVALID;
      }
      if (rules.ge !== undefined && !(value >= rules.ge)) {
        errors.push(item('greater_than_equal', loc, `Input should be greater than or equal to ${rules.ge}`, input, { ge: rules.ge }));
        return INVALID;
      }
      return value;
    },
    jsonSchema() {
      const schema: JsonObject = { type: 'number' };
      if (rules.ge !== undefined) schema.minimum = rules.ge;
      if (rules.le !== undefined) schema.maximum = rules.le;
      return schema;
    },
  };
}

/** One of fixed strings: pydantic's `literal_error` (Literal) or `enum` (Enum) error. */
export function choice<T extends string>(values: readonly T[], kind: 'literal_error' | 'enum' = 'literal_error'): Schema<T> {
  const quoted = values.map((v) => `'${v}'`);
  const expected = quoted.length > 1 ? `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}` : quoted[0];
  return {
    parse(input, loc, errors) {
      if (typeof input === 'string' && (values as readonly string[]).includes(input)) return input as T;
      errors.push(item(kind, loc, `Input should be ${expected}`, input, { expected }));
      return INVALID;
    },
    jsonSchema: () => ({ type: 'string', enum: [...values] }),
  };
}

// ---------------------------------------------------------------- dates

/** The reason pydantic gives for year 0, which it reports as `datetime_parsing` (not `..._from_date_...`). */
export const YEAR_0_REASON = 'year 0 is out of range';

/**
 * What is wrong with the date that starts `text`, as pydantic says it: the first of its ten
 * characters that is wrong, the month or day out of range, year 0; undefined when it is a date.
 */
function dateFault(text: string): string | undefined {
  if (text.length < 10) return 'input is too short';
  const digits = (from: number, to: number) => /^\d+$/.test(text.slice(from, to));
  if (!digits(0, 4)) return 'invalid character in year';
  if (text[4] !== '-') return 'invalid date separator, expected `-`';
  if (!digits(5, 7)) return 'invalid character in month';
  if (text[7] !== '-') return 'invalid date separator, expected `-`';
  if (!digits(8, 10)) return 'invalid character in day';
  const [year, month, day] = [Number(text.slice(0, 4)), Number(text.slice(5, 7)), Number(text.slice(8, 10))];
  if (month < 1 || month > 12) return 'month value is outside expected range of 1-12';
  if (day < 1 || day > daysInMonth(year, month)) return 'day value is outside expected range';
  if (year === 0) return YEAR_0_REASON;
  return undefined;
}

/**
 * Why pydantic refuses `text` as a datetime: the reason of its fallback, the date parser, which
 * it reports in either case (a valid date followed by anything it did not take is "extra").
 */
const dateProblem = (text: string) => dateFault(text) ?? 'unexpected extra characters at the end of the input';

/**
 * Parses the ISO 8601 forms pydantic accepts for a datetime (domain/iso-datetime.ts, grammar
 * 'pydantic'); naive values are taken as UTC. A refused text gives pydantic's reason.
 */
export function parseIsoDateTime(text: string): Date | string {
  const micros = dateFault(text) === undefined ? readDateTime(text, 'pydantic') : undefined;
  if (micros === undefined) return dateProblem(text);
  // whole milliseconds, rounded down (before 1970 too), and the microseconds past them
  const ms = micros >= 0n ? micros / 1000n : -((-micros + 999n) / 1000n);
  const rest = Number(micros - ms * 1000n);
  return rest === 0 ? new Date(Number(ms)) : new PreciseDate(Number(ms), rest);
}

/** The range of Python's datetime (years 1 to 9999), in milliseconds since 1970. */
const EARLIEST_MS = -62_135_596_800_000;
const LATEST_MS = 253_402_300_799_999;

export function datetime(): Schema<Date> {
  return {
    parse(input, loc, errors) {
      // a string of digits (with a fraction) is a unix timestamp too, as a number is
      const stamp = typeof input === 'string' && /^[+-]?\d+(?:\.\d*)?$/.test(input) ? Number(input) : input;
      if (typeof stamp === 'number' && Number.isFinite(stamp)) {
        // pydantic reads large numbers as milliseconds, small ones as seconds
        const ms = Math.abs(stamp) > 2e10 ? stamp : stamp * 1000;
        if (ms >= EARLIEST_MS && ms <= LATEST_MS) return dateOfEpochMicros(Math.round(ms * 1000));
        const bound = ms > LATEST_MS ? 'dates after 9999' : 'dates before 0001';
        errors.push(item('datetime_parsing', loc, `Input should be a valid datetime, ${bound} are not supported as unix timestamps`, input, { error: `${bound} are not supported as unix timestamps` }));
        return INVALID;
      }
      if (typeof input !== 'string') {
        errors.push(item('datetime_type', loc, 'Input should be a valid datetime', input));
        return INVALID;
      }
      const parsed = parseIsoDateTime(input);
      if (parsed === YEAR_0_REASON) {
        errors.push(item('datetime_parsing', loc, `Input should be a valid datetime, ${parsed}`, input, { error: parsed }));
        return INVALID;
      }
      if (typeof parsed === 'string') {
        errors.push(
          item('datetime_from_date_parsing', loc, `Input should be a valid datetime or date, ${parsed}`, input, {
            error: parsed,
          }),
        );
        return INVALID;
      }
      return parsed;
    },
    jsonSchema: () => ({ type: 'string', format: 'date-time' }),
  };
}

// ---------------------------------------------------------------- containers

/** A JSON object with arbitrary keys (`Dict[str, Any]`). */
export function dict(): Schema<JsonObject> {
  return {
    parse(input, loc, errors) {
      if (!isPlainObject(input)) {
        errors.push(item('dict_type', loc, 'Input should be a valid dictionary', input));
        return INVALID;
      }
      return input;
    },
    jsonSchema: () => ({ type: 'object', additionalProperties: true }),
  };
}

/** A map from string keys to validated values (`Dict[str, T]`). */
export function record<T>(value: Schema<T>): Schema<Record<string, T>> {
  return {
    parse(input, loc, errors) {
      if (!isPlainObject(input)) {
        errors.push(item('dict_type', loc, 'Input should be a valid dictionary', input));
        return INVALID;
      }
      const out: Record<string, T> = {};
      let ok = true;
      for (const [key, raw] of Object.entries(input)) {
        const parsed = value.parse(raw, [...loc, key], errors);
        if (parsed === INVALID) ok = false;
        else setOwn(out, key, parsed);
      }
      return ok ? out : INVALID;
    },
    jsonSchema: () => ({ type: 'object', additionalProperties: value.jsonSchema() }),
  };
}

export interface ListRules {
  minLength?: number;
  maxLength?: number;
}

export function list<T>(element: Schema<T>, rules: ListRules = {}): Schema<T[]> {
  return {
    parse(input, loc, errors) {
      if (!Array.isArray(input)) {
        errors.push(item('list_type', loc, 'Input should be a valid list', input));
        return INVALID;
      }
      // a list over the limit is refused as such, whatever its items (pydantic stops at the item past it)
      if (rules.maxLength !== undefined && input.length > rules.maxLength) {
        errors.push(
          item('too_long', loc, `List should have at most ${plural(rules.maxLength, 'item')} after validation, not ${input.length}`, input, {
            field_type: 'List',
            max_length: rules.maxLength,
            actual_length: input.length,
          }),
        );
        return INVALID;
      }
      const out: T[] = [];
      let ok = true;
      input.forEach((raw, index) => {
        const parsed = element.parse(raw, [...loc, index], errors);
        if (parsed === INVALID) ok = false;
        else out.push(parsed);
      });
      if (!ok) return INVALID;
      if (rules.minLength !== undefined && out.length < rules.minLength) {
        errors.push(
          item(
            'too_short',
            loc,
            `List should have at least ${plural(rules.minLength, 'item')} after validation, not ${out.length}`,
            input,
            { field_type: 'List', min_length: rules.minLength, actual_length: out.length },
          ),
        );
        return INVALID;
      }
      return out;
    },
    jsonSchema() {
      const schema: JsonObject = { type: 'array', items: element.jsonSchema() };
      if (rules.minLength !== undefined) schema.minItems = rules.minLength;
      if (rules.maxLength !== undefined) schema.maxItems = rules.maxLength;
      return schema;
    },
  };
}

/** Allows JSON `null` (pydantic `Optional[T]`). */
export function nullable<T>(inner: Schema<T>): Schema<T | null> {
  return {
    parse: (input, loc, errors) => (input === null ? null : inner.parse(input, loc, errors)),
    jsonSchema: () => ({ anyOf: [inner.jsonSchema(), { type: 'null' }] }),
  };
}

/** Adds a rule checked after the shape is valid; a returned string becomes a `value_error`. */
export function refine<T>(inner: Schema<T>, check: (value: T) => string | undefined): Schema<T> {
  return {
    parse(input, loc, errors) {
      const parsed = inner.parse(input, loc, errors);
      if (parsed === INVALID) return INVALID;
      const problem = check(parsed);
      if (problem !== undefined) {
        errors.push(item('value_error', loc, `Value error, ${problem}`, input, { error: {} }));
        return INVALID;
      }
      return parsed;
    },
    jsonSchema: () => inner.jsonSchema(),
  };
}

/** Rewrites the valid value (e.g. dropping NUL characters) without changing validation. */
export function transform<T, U>(inner: Schema<T>, map: (value: T) => U): Schema<U> {
  return {
    parse(input, loc, errors) {
      const parsed = inner.parse(input, loc, errors);
      return parsed === INVALID ? INVALID : map(parsed);
    },
    jsonSchema: () => inner.jsonSchema(),
  };
}

// ---------------------------------------------------------------- models

export interface Field<T> {
  schema: Schema<T>;
  /** Absent fields take this value; without one the field is required. */
  default?: () => T;
  /** Other accepted body keys; the field's own key wins when both are sent (contract §1.6). */
  aliases?: string[];
  /** A query parameter read as the list of all its values (`?k=a&k=b`), not the last one. */
  repeated?: boolean;
}

export function required<T>(schema: Schema<T>, aliases?: string[]): Field<T> {
  return { schema, aliases };
}

export function optional<T>(schema: Schema<T>): Field<T | undefined>;
export function optional<T>(schema: Schema<T>, fallback: () => T): Field<T>;
export function optional<T>(schema: Schema<T>, fallback?: () => T): Field<T | undefined> {
  return { schema, default: fallback ?? (() => undefined) } as Field<T | undefined>;
}

/** An optional query parameter that may be repeated (`?k=a&k=b`): all its values, in order. */
export function repeatedQuery<T>(element: Schema<T>, rules: ListRules = {}): Field<T[] | undefined> {
  return { schema: list(element, rules), default: () => undefined, repeated: true };
}

type ModelOutput<F extends Record<string, Field<unknown>>> = { [K in keyof F]: F[K] extends Field<infer T> ? T : never };

/** A pydantic model: validates fields in declaration order; unknown keys are ignored. */
export function model<F extends Record<string, Field<any>>>(
  fields: F,
  options: { title?: string } = {},
): Schema<ModelOutput<F>> {
  const entries = Object.entries(fields);
  return {
    parse(input, loc, errors) {
      if (!isPlainObject(input)) {
        errors.push(
          item('model_attributes_type', loc, 'Input should be a valid dictionary or object to extract fields from', input),
        );
        return INVALID;
      }
      const out: Record<string, unknown> = {};
      let ok = true;
      for (const [name, field] of entries) {
        // own keys only: `constructor` or `toString` in a body must not look like a sent field
        let key = name;
        if (!Object.hasOwn(input, name) && field.aliases !== undefined) {
          key = field.aliases.find((alias) => Object.hasOwn(input, alias)) ?? name;
        }
        if (!Object.hasOwn(input, key)) {
          if (field.default === undefined) {
            errors.push(item('missing', [...loc, name], 'Field required', input));
            ok = false;
          } else {
            out[name] = field.default();
          }
          continue;
        }
        const parsed = field.schema.parse(input[key], [...loc, key], errors);
        if (parsed === INVALID) ok = false;
        else out[name] = parsed;
      }
      return ok ? (out as ModelOutput<F>) : INVALID;
    },
    jsonSchema() {
      const properties: JsonObject = {};
      const requiredNames: string[] = [];
      for (const [name, field] of entries) {
        properties[name] = field.schema.jsonSchema();
        if (field.default === undefined) requiredNames.push(name);
      }
      const schema: JsonObject = { type: 'object', properties };
      if (requiredNames.length > 0) schema.required = requiredNames;
      if (options.title !== undefined) schema.title = options.title;
      return schema;
    },
  };
}

/** A single request input that was absent: pydantic's `missing` error. */
export function missingItem(loc: Loc): ValidationItem {
  return item('missing', loc, 'Field required', null);
}

/** Builds the 422 body; v1 items carry only loc, msg and type (seed part 2). */
export function validationBody(items: ValidationItem[], generation: 'v1' | 'v2' | 'v3'): { detail: unknown[] } {
  if (generation === 'v1') {
    return { detail: items.map(({ loc, msg, type }) => ({ loc, msg, type })) };
  }
  return { detail: items };
}
