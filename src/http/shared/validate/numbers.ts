import { INVALID, JsonObject, Loc, Schema, ValidationItem, item } from './core.js';

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

/* Bounds are tested as "not within", so that nan fails them, as in pydantic. */

/** Pydantic's `greater_than_equal` error when `value` is below `ge` (or nan); true then. */
function belowMinimum(value: number, ge: number | undefined, loc: Loc, input: unknown, errors: ValidationItem[]): boolean {
  if (ge === undefined || value >= ge) return false;
  errors.push(item('greater_than_equal', loc, `Input should be greater than or equal to ${ge}`, input, { ge }));
  return true;
}

/** Pydantic's `less_than_equal` error when `value` is above `le` (or nan); true then. */
function aboveMaximum(value: number, le: number | undefined, loc: Loc, input: unknown, errors: ValidationItem[]): boolean {
  if (le === undefined || value <= le) return false;
  errors.push(item('less_than_equal', loc, `Input should be less than or equal to ${le}`, input, { le }));
  return true;
}

/** The JSON schema of a number type with its bounds. */
function boundsSchema(type: 'integer' | 'number', rules: { ge?: number; le?: number }): JsonObject {
  const schema: JsonObject = { type };
  if (rules.ge !== undefined) schema.minimum = rules.ge;
  if (rules.le !== undefined) schema.maximum = rules.le;
  return schema;
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
      if (belowMinimum(value, rules.ge, loc, input, errors) || aboveMaximum(value, rules.le, loc, input, errors)) return INVALID;
      return value;
    },
    jsonSchema() {
      const schema = boundsSchema('integer', rules);
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
      // the upper bound first, as in pydantic (an integer's lower bound is checked first)
      if (aboveMaximum(value, rules.le, loc, input, errors) || belowMinimum(value, rules.ge, loc, input, errors)) return INVALID;
      return value;
    },
    jsonSchema: () => boundsSchema('number', rules),
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
