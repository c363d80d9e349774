import { LRUCache } from 'lru-cache';
import { createSigner, createVerifier } from 'fast-jwt';
import { readDateTime } from '../../../domain/iso-datetime.js';

/* A bearer token's claims: reading and checking a token (§2.3), minting one (§7.7). */

/** The token's scope after §2.3 normalisation: `""` claims are absent, `ad` is any truthy value. */
export interface Claims {
  isAdmin: boolean;
  workspaceId?: string;
  peerId?: string;
  sessionId?: string;
  /** The v1 claims `ap`/`us`/`se`/`co` (contract-v1 §4.2); only /v1 routes read them. */
  v1?: V1Claims;
}

/** v1 scope claims after normalisation: non-empty strings only, anything else is absent. */
export interface V1Claims {
  appId?: string;
  userId?: string;
  sessionId?: string;
  collectionId?: string;
}

/** What auth-off mode hands to every handler (§2.1). */
export const ADMIN_CLAIMS: Claims = Object.freeze({ isAdmin: true });

/** The §2.3 `detail` strings, in one place so tests and handlers cannot drift apart. */
export const AUTH_DETAIL = {
  noToken: 'No access token provided',
  invalidToken: 'Invalid JWT',
  missingWorkspace: 'Invalid JWT scope: peer/session token missing workspace',
  adminRequired: 'Resource requires admin privileges',
  notPermissioned: 'JWT not permissioned for this resource',
  unauthorized: 'Unauthorized access to resource',
} as const;

/** Always a 401 with body `{"detail": detail}`. */
export class AuthError extends Error {
  readonly status = 401;

  constructor(readonly detail: string) {
    super(detail);
    this.name = 'AuthError';
  }
}

/** Route scope declarations (contract §2.5). 'member-read' = WS+MR. */
export type RouteScope =
  | { kind: 'none' }
  | { kind: 'admin' }
  | { kind: 'self' }
  | { kind: 'workspace' }
  | { kind: 'peer' }
  | { kind: 'session'; memberRead?: boolean };

/** IDs the route is scoped by, read from the path (or the same-named query parameter). */
export interface ScopeIds {
  workspaceId?: string;
  peerId?: string;
  sessionId?: string;
}

export type IsActiveMember = (workspaceId: string, sessionId: string, peerId: string) => Promise<boolean>;

export interface TokenReaderOptions {
  /** Milliseconds since the epoch; tests move it to cross `exp`/`nbf`. */
  now?: () => number;
  /** Verified tokens remembered; 0 turns the cache off. */
  cacheSize?: number;
}

interface VerifiedToken {
  claims: Claims;
  /** First millisecond at which the token is no longer valid; Infinity without `exp`. */
  expiresAtMs: number;
}

/** Reads the Authorization header: returns Claims or throws AuthError with the exact §2.3 detail. */
export function createTokenReader(
  secret: string,
  options: TokenReaderOptions = {},
): (authorization: string | undefined) => Claims {
  if (secret === '') throw new Error('auth: the JWT secret must not be empty');
  const now = options.now ?? Date.now;
  // fast-jwt only understands numeric exp/nbf and refuses everything else, so both are checked
  // here instead, against the injectable clock.
  const verify = createVerifier({
    key: secret,
    algorithms: ['HS256'],
    ignoreExpiration: true,
    ignoreNotBefore: true,
  });
  // Verification runs on every request. Remembering the normalised claims of tokens that passed
  // skips the HMAC, base64 and JSON work for the handful of keys a deployment really uses. The
  // signature of a given token never changes validity, so only expiry is re-checked on a hit;
  // failures are never stored, so garbage tokens cannot flush the cache.
  const cacheSize = options.cacheSize ?? 1000;
  const cache = cacheSize > 0 ? new LRUCache<string, VerifiedToken>({ max: cacheSize }) : undefined;

  return (authorization) => {
    const token = bearerToken(authorization);
    if (token === undefined) throw new AuthError(AUTH_DETAIL.noToken);
    const at = now();

    const hit = cache?.get(token);
    if (hit !== undefined) {
      if (at < hit.expiresAtMs) return hit.claims;
      cache?.delete(token);
      throw new AuthError(AUTH_DETAIL.invalidToken);
    }

    let payload: Record<string, unknown>;
    try {
      payload = verify(token) as Record<string, unknown>;
    } catch {
      throw new AuthError(AUTH_DETAIL.invalidToken);
    }
    const verified = readPayload(payload, at);
    cache?.set(token, verified);
    return verified.claims;
  };
}

/**
 * FastAPI's HTTPBearer: split at the first space, scheme compared case-insensitively, credentials
 * trimmed. Anything else is "no token", not an invalid one.
 */
function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const space = header.indexOf(' ');
  if (space === -1) return undefined;
  if (header.slice(0, space).toLowerCase() !== 'bearer') return undefined;
  const token = header.slice(space + 1).trim();
  return token === '' ? undefined : token;
}

function readPayload(payload: Record<string, unknown>, at: number): VerifiedToken {
  const nbf = payload.nbf;
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf * 1000 > at)) {
    throw new AuthError(AUTH_DETAIL.invalidToken);
  }
  const expiresAtMs = expiryOf(payload.exp);
  // The reference's library treats `exp <= now` as expired.
  if (at >= expiresAtMs) throw new AuthError(AUTH_DETAIL.invalidToken);

  const claims: Claims = { isAdmin: isPythonTruthy(payload.ad) };
  const w = scopeClaim(payload.w);
  const p = scopeClaim(payload.p);
  const s = scopeClaim(payload.s);
  if (w !== undefined) claims.workspaceId = w;
  if (p !== undefined) claims.peerId = p;
  if (s !== undefined) claims.sessionId = s;
  const v1 = v1ClaimsOf(payload);
  if (v1 !== undefined) claims.v1 = Object.freeze(v1);
  // Cached claims are shared by every request that presents the same token.
  return { claims: Object.freeze(claims), expiresAtMs };
}

function expiryOf(exp: unknown): number {
  if (exp === undefined || exp === null) return Number.POSITIVE_INFINITY;
  if (typeof exp === 'number') return exp * 1000;
  if (typeof exp === 'string') {
    const ms = parseIsoInstant(exp);
    if (ms !== undefined) return ms;
  }
  throw new AuthError(AUTH_DETAIL.invalidToken);
}

function scopeClaim(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return value;
  throw new AuthError(AUTH_DETAIL.invalidToken);
}

/**
 * contract-v1 §4.4 compares claims with path values for equality, so a claim that is not a
 * non-empty string can never match: it is dropped rather than making the token invalid.
 */
function v1ClaimsOf(payload: Record<string, unknown>): V1Claims | undefined {
  const v1: V1Claims = {};
  const names = { ap: 'appId', us: 'userId', se: 'sessionId', co: 'collectionId' } as const;
  for (const [claim, field] of Object.entries(names)) {
    const value = payload[claim];
    if (typeof value === 'string' && value !== '') v1[field] = value;
  }
  return Object.keys(v1).length > 0 ? v1 : undefined;
}

// §2.2: "any truthy value counts" means Python truthiness, where [] and {} are false.
function isPythonTruthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object' && value !== null) return Object.keys(value).length > 0;
  return Boolean(value);
}

/** A token expiry as Python's isoformat() writes it (domain/iso-datetime.ts), in milliseconds; undefined if not one. */
function parseIsoInstant(text: string): number | undefined {
  const micros = readDateTime(text, 'isoformat');
  return micros === undefined ? undefined : Math.floor(Number(micros) / 1000);
}

/**
 * Mints an HS256 token. Admin: {"t":"","ad":true}. Keys: {"t":"<now YYYY-MM-DDTHH:MM:SSZ>",
 * "exp"?: <NUMERIC seconds since epoch>, "w"?, "p"?, "s"?} (only present claims written).
 */
export function mintToken(
  secret: string,
  claims: { isAdmin?: boolean; workspaceId?: string; peerId?: string; sessionId?: string; expiresAt?: Date; v1?: V1Claims },
  now: Date = new Date(),
): string {
  // The reference's tokens carry no `iat`; fast-jwt would add one unless told not to.
  const sign = createSigner({ key: secret, algorithm: 'HS256', noTimestamp: true });
  if (claims.isAdmin) return sign({ t: '', ad: true });
  const payload: Record<string, string | number> = { t: `${now.toISOString().slice(0, 19)}Z` };
  // A JWT library signs only a positive `exp`: an expiry at or before the epoch (`expires_at=-1`,
  // 1960) is written as second 1, as expired as what was asked.
  if (claims.expiresAt !== undefined) payload.exp = Math.max(1, Math.floor(claims.expiresAt.getTime() / 1000));
  if (claims.workspaceId) payload.w = claims.workspaceId;
  if (claims.peerId) payload.p = claims.peerId;
  if (claims.sessionId) payload.s = claims.sessionId;
  // v1 keys (contract-v1 §2.7) carry ap/us/se/co instead
  if (claims.v1?.appId) payload.ap = claims.v1.appId;
  if (claims.v1?.userId) payload.us = claims.v1.userId;
  if (claims.v1?.sessionId) payload.se = claims.v1.sessionId;
  if (claims.v1?.collectionId) payload.co = claims.v1.collectionId;
  return sign(payload);
}
