import { createHmac } from 'node:crypto';

/*
 * The delivered body (contract §7.6): compact JSON, keys sorted at every level, every
 * non-ASCII character escaped as \uXXXX, exactly as the reference's receivers verify it.
 */

function escapeString(value: string): string {
  // JSON.stringify escapes quotes, backslashes and control characters; the rest is ASCII-only
  return JSON.stringify(value).replace(/[\u0080-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return escapeString(value);
  if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, inner]) => inner !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, inner]) => `${escapeString(key)}:${canonicalJson(inner)}`).join(',')}}`;
}

/** Lowercase hex HMAC-SHA256 of the exact body bytes (the `X-Honcho-Signature` header). */
export function signBody(body: string, secret: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(Buffer.from(body, 'utf8')).digest('hex');
}
