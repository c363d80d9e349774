import { ListRules, list } from './containers.js';
import { INVALID, JsonObject, Loc, Schema, ValidationItem, isPlainObject, item } from './core.js';

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
