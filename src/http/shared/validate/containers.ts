import { INVALID, JsonObject, Schema, isPlainObject, item, plural, setOwn } from './core.js';

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
