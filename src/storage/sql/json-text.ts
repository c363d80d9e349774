/**
 * JSON text for the store. `JSON.stringify` writes an unpaired UTF-16 surrogate (which a client
 * can send as `"\udc00"`) as that escape, and PostgreSQL's jsonb refuses it ("invalid input
 * syntax for type json"), failing the whole write. Text columns already turn such a surrogate
 * into U+FFFD on the way to UTF-8 on both dialects, so JSON values get the same treatment: the
 * store keeps U+FFFD in its place, on SQLite and PostgreSQL alike.
 *
 * A NUL is written as `\u0000`, which jsonb refuses too ("unsupported Unicode escape
 * sequence"). Stored values lose their NULs at the wire layer, but a lookup list can still carry
 * one from a path (a session id in a context's session allowlist): it becomes U+FFFD, as the
 * PostgreSQL driver does for text parameters, so the lookup finds nothing instead of failing.
 */
const UNSAFE_ESCAPE = /\\u(?:d[89a-f][0-9a-f]{2}|0000)/i;
const LONE_SURROGATE_OR_NUL = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** A JSON array of strings as read back: JSON text (SQLite) or the array the driver parsed (PostgreSQL); anything else is empty. */
export function readTextList(value: unknown): string[] {
  const list: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  return Array.isArray(list) ? list.map(String) : [];
}

export function jsonText(value: unknown): string {
  const text = JSON.stringify(value);
  // paired surrogates are written as themselves, so an escape here is a lone one or a NUL (or,
  // rarely, a string that spells one after a backslash, which the walk leaves as it is)
  return UNSAFE_ESCAPE.test(text) ? JSON.stringify(wellFormed(value)) : text;
}

function wellFormed(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(LONE_SURROGATE_OR_NUL, '\ufffd');
  if (Array.isArray(value)) return value.map(wellFormed);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    // defineProperty, not assignment: a key named __proto__ stays an ordinary key
    Object.defineProperty(out, wellFormed(key) as string, { value: wellFormed(inner), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
