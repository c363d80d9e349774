import type { JsonObject } from '../../storage/store.js';
import { bool, dict, int, isPlainObject, model, nullable, optional, refine, setOwn, str, transform, wellFormed, type Schema } from './validate.js';

/*
 * Wire fields shared by the workspace generations (v2, v3): ids, metadata, paging, filters.
 */

export const ID_PATTERN = '^[a-zA-Z0-9_-]+$';

/** Resource ids in create bodies: 1..512 characters in v3, 1..100 in v2 (contract §1.6, §9.1). */
export function resourceId(generation: 'v2' | 'v3'): Schema<string> {
  return str({ minLength: 1, maxLength: generation === 'v3' ? 512 : 100, pattern: ID_PATTERN });
}

/** A name of the reserved scope namespace (`scope.` and a scope name): a v3 route decides about it. */
const RESERVED_NAME = /^scope\.[a-zA-Z0-9_-]+$/;

/**
 * A peer id where a request may create the peer (message authors, session members, a peer's
 * path): a resource id, or in v3 a name of the reserved scope namespace, which passes so that the
 * route answers what the reference answers of scopes there (domain/scopes/scope-guards.ts).
 */
export function peerName(generation: 'v2' | 'v3'): Schema<string> {
  const id = resourceId(generation);
  if (generation === 'v2') return id;
  return {
    parse: (input, loc, errors) => (typeof input === 'string' && input.length <= 512 && RESERVED_NAME.test(input) ? input : id.parse(input, loc, errors)),
    jsonSchema: () => id.jsonSchema(),
  };
}

/**
 * Removes NUL characters from keys and strings, recursively (contract §1.7), and puts U+FFFD in
 * place of unpaired surrogates (validate.ts, `wellFormed`), as the store would.
 */
export function cleanText<T>(value: T): T {
  if (typeof value === 'string') return wellFormed(value.includes('\u0000') ? value.replace(/\u0000/g, '') : value) as T;
  if (Array.isArray(value)) return value.map(cleanText) as T;
  if (isPlainObject(value)) {
    const out: JsonObject = {};
    for (const [key, inner] of Object.entries(value)) setOwn(out, cleanText(key), cleanText(inner));
    return out as T;
  }
  return value;
}

function depthOf(value: unknown): number {
  if (!isPlainObject(value)) return 0;
  let deepest = 0;
  for (const inner of Object.values(value)) deepest = Math.max(deepest, depthOf(inner));
  return 1 + deepest;
}

/**
 * Largest metadata or configuration object, as UTF-8 JSON text. Every list page carries up to
 * 100 of them (both, for workspaces and sessions); at this size a full page is about 13 MiB and
 * takes some 20 ms to serialise, so one request cannot hold the process for long.
 */
export const MAX_OBJECT_BYTES = 64 * 1024;

/** Refuses objects whose JSON text is over MAX_OBJECT_BYTES (a `value_error` at the field). */
export function withinSize(inner: Schema<JsonObject>, what: 'Metadata' | 'Configuration'): Schema<JsonObject> {
  return refine(inner, (value) => {
    const bytes = Buffer.byteLength(JSON.stringify(value));
    return bytes > MAX_OBJECT_BYTES ? `${what} exceeds maximum size of ${MAX_OBJECT_BYTES} bytes (as JSON text, got ${bytes})` : undefined;
  });
}

/**
 * A metadata object. v3 limits it to 100 top-level keys and depth 5. Both generations drop NUL
 * characters (v2 in the reference keeps them, but PostgreSQL's jsonb cannot store them) and
 * refuse objects over MAX_OBJECT_BYTES.
 */
export function metadata(generation: 'v2' | 'v3'): Schema<JsonObject> {
  const base = generation === 'v3'
    ? refine(dict(), (value) => {
        if (Object.keys(value).length > 100) return 'Metadata exceeds maximum of 100 top-level keys';
        if (depthOf(value) > 5) return 'Metadata nesting exceeds maximum depth of 5';
        return undefined;
      })
    : dict();
  return transform(withinSize(base, 'Metadata'), cleanText);
}

/** Optional and nullable: null and absent both mean "leave unchanged". */
export function optionalNullable<T>(schema: Schema<T>) {
  return optional(transform(nullable(schema), (v) => v ?? undefined));
}

export const pageParam = optional(int({ ge: 1, description: 'Page number' }), () => 1);
export const sizeParam = optional(int({ ge: 1, le: 100, description: 'Page size' }), () => 50);
export const reverseParam = optional(bool(), () => false);

/** Paging query of v3 lists that have an order. */
export const pagedReversible = { page: pageParam, size: sizeParam, reverse: reverseParam };
/** Paging query without `reverse`. */
export const paged = { page: pageParam, size: sizeParam };

/** `{"filters": object | null}`, the optional body of list routes. */
export const filtersBody = model({ filters: optional(nullable(dict())) }, { title: 'Filters' });
