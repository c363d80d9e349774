/* What every validator shares: locations, error items, the Schema type and pydantic's wording helpers. */

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

export type JsonObject = Record<string, unknown>;

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

export function item(type: string, loc: Loc, msg: string, input: unknown, ctx?: Record<string, unknown>): ValidationItem {
  return ctx === undefined ? { type, loc, msg, input } : { type, loc, msg, input, ctx };
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Length in Unicode code points, as Python counts characters. */
export function codePointLength(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0xd800 || c > 0xdbff) n++;
  }
  return n;
}
