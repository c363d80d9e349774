/*
 * Bearer-token authentication and route authorization (contract-v3 §2, v2 algorithm §9.2).
 *
 * Only reached when auth is on: with auth off the app treats every request as ADMIN_CLAIMS and
 * never reads the Authorization header (§2.1).
 *
 * Deliberate differences from the reference (for docs/compatibility.md):
 * - Keys minted with an expiry carry a numeric `exp` (seconds since the epoch) and work until they
 *   expire. The reference writes an ISO string `exp`, which its JWT library refuses, so every
 *   expiring key it mints is unusable.
 * - A token whose `exp` is an ISO 8601 string (what the reference mints) is honoured: valid until
 *   that instant, then `Invalid JWT`. A string without an offset is read as UTC. Strings that are
 *   not ISO 8601 date-times (including "" and digit-only strings) stay `Invalid JWT`.
 * - A numeric `exp` in the future is accepted (the reference answers 500).
 * - `exp: null` means no expiry (the reference answers 500).
 * - `w`/`p`/`s` claims that are neither strings nor null make the token `Invalid JWT`; in the
 *   reference such a claim never equals a path ID, so the token is refused by every check that
 *   reads it, only with a different detail.
 * - `nbf` is checked (a non-number or a future value is `Invalid JWT`), as the reference's library
 *   does; other registered claims (`iat`, `aud`, `sub`, `jti`) are not inspected.
 */

import { LRUCache } from 'lru-cache';
import { createSigner, createVerifier } from 'fast-jwt';
import { readDateTime } from '../../domain/iso-datetime.js';

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

function same(claim: string | undefined, routeId: string | undefined): boolean {
  return claim !== undefined && claim === routeId;
}

/**
 * v3 "narrowest claim wins" (§2.4). isActiveMember is only called for member-read routes with a
 * peer token. `kind: 'self'` routes pass here; the handler runs the matching check* function.
 */
export async function authorizeV3(
  claims: Claims,
  scope: RouteScope,
  ids: ScopeIds,
  isActiveMember: IsActiveMember,
): Promise<void> {
  if (scope.kind === 'none') return;
  // A token-level rule of v3, so it is checked before the admin shortcut and on SELF routes too.
  if ((claims.peerId !== undefined || claims.sessionId !== undefined) && claims.workspaceId === undefined) {
    throw new AuthError(AUTH_DETAIL.missingWorkspace);
  }
  if (claims.isAdmin) return;
  if (scope.kind === 'admin') throw new AuthError(AUTH_DETAIL.adminRequired);
  if (scope.kind === 'self') return;

  // Every remaining kind is workspace-scoped; this also refuses tokens with no w/p/s (step 8).
  if (!same(claims.workspaceId, ids.workspaceId)) throw new AuthError(AUTH_DETAIL.notPermissioned);

  // A session claim narrows the token to that session, even when it also carries a peer.
  if (claims.sessionId !== undefined) {
    if (scope.kind === 'session' && same(claims.sessionId, ids.sessionId)) return;
    throw new AuthError(AUTH_DETAIL.notPermissioned);
  }
  if (claims.peerId !== undefined) {
    if (scope.kind === 'peer' && same(claims.peerId, ids.peerId)) return;
    if (
      scope.kind === 'session' &&
      scope.memberRead === true &&
      ids.workspaceId !== undefined &&
      ids.sessionId !== undefined &&
      (await isActiveMember(ids.workspaceId, ids.sessionId, claims.peerId))
    ) {
      return;
    }
    throw new AuthError(AUTH_DETAIL.notPermissioned);
  }
}

/** v2 route-scope-first algorithm (§9.2). */
export function authorizeV2(claims: Claims, scope: RouteScope, ids: ScopeIds): void {
  if (scope.kind === 'none' || claims.isAdmin) return;
  if (scope.kind === 'admin') throw new AuthError(AUTH_DETAIL.adminRequired);
  if (scope.kind === 'self') return;
  // §9.2 (a) and (b) allow a matching session or peer claim only when `w` also matches, and (c)
  // allows any token whose `w` matches. Every scoped route declares a workspace, so the three
  // steps reduce to this one test: p and s can neither widen nor narrow a v2 token.
  if (same(claims.workspaceId, ids.workspaceId)) return;
  throw new AuthError(AUTH_DETAIL.notPermissioned);
}

/** §2.5 `POST /v3/workspaces`: a non-admin token needs `w` equal to the body id. */
export function checkCreateWorkspace(claims: Claims, bodyId: string): void {
  if (claims.isAdmin || same(claims.workspaceId, bodyId)) return;
  throw new AuthError(AUTH_DETAIL.unauthorized);
}

/**
 * §2.5 `POST /v3/workspaces/{w}/peers`: `w` (if present) must equal the path, `p` (if present)
 * the body id. A session token of the workspace, or a token with no claims, may create any peer.
 */
export function checkCreatePeer(claims: Claims, pathWorkspaceId: string, bodyPeerId: string): void {
  if (claims.isAdmin) return;
  if (claims.workspaceId !== undefined && claims.workspaceId !== pathWorkspaceId) {
    throw new AuthError(AUTH_DETAIL.unauthorized);
  }
  if (claims.peerId !== undefined && claims.peerId !== bodyPeerId) throw new AuthError(AUTH_DETAIL.unauthorized);
}

/**
 * §2.5 `POST /v3/workspaces/{w}/sessions`: `w` (if present) must equal the path, `s` (if present)
 * the body id. A peer token of the workspace, or a token with no claims, may create any session.
 */
export function checkCreateSession(claims: Claims, pathWorkspaceId: string, bodySessionId: string): void {
  if (claims.isAdmin) return;
  if (claims.workspaceId !== undefined && claims.workspaceId !== pathWorkspaceId) {
    throw new AuthError(AUTH_DETAIL.unauthorized);
  }
  if (claims.sessionId !== undefined && claims.sessionId !== bodySessionId) {
    throw new AuthError(AUTH_DETAIL.unauthorized);
  }
}

/**
 * §2.5 `GET .../sessions/{s}/peers/{p}/config`, after authorizeV3 with WS+MR: a peer token may
 * read only its own config.
 */
export function checkPeerConfigRead(claims: Claims, pathPeerId: string): void {
  if (claims.isAdmin || claims.peerId === undefined || claims.peerId === pathPeerId) return;
  throw new AuthError(AUTH_DETAIL.notPermissioned);
}

/**
 * §2.5 chat rule, after authorizeV3 with WP: a peer token must be an active member of the body's
 * `session_id` and of every session in a `filters.session_id` allowlist.
 */
export async function checkChatSessions(
  claims: Claims,
  workspaceId: string,
  sessionIds: readonly string[],
  isActiveMember: IsActiveMember,
): Promise<void> {
  if (claims.isAdmin || claims.peerId === undefined) return;
  for (const sessionId of sessionIds) {
    if (!(await isActiveMember(workspaceId, sessionId, claims.peerId))) {
      throw new AuthError(AUTH_DETAIL.notPermissioned);
    }
  }
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

// ---------------------------------------------------------------- v1 (contract-v1 §4)

/** The v1-only `detail` strings of contract-v1 §4 and §2 (the shared ones are in AUTH_DETAIL). */
export const V1_AUTH_DETAIL = {
  appIdMissing: 'App ID not found in query parameter or JWT',
  userIdMissing: 'User ID not found in query parameter or JWT',
  sessionIdMissing: 'Session ID not found in query parameter or JWT',
} as const;

/** The values a v1 route protects, from its path or else the same-named query parameter. */
export interface V1ScopeIds {
  appId?: string;
  userId?: string;
  sessionId?: string;
}

/**
 * contract-v1 §4.4. The route scope kinds read as the reference's scope lists:
 * `admin` = A, `self` = H (any valid token; the handler runs the matching checkV1* function),
 * `workspace` = S(app), `peer` = S(app, user), `session` = S(app, user, session).
 * One matching claim suffices (`se`, then `us`, then `ap`); other claims are not cross-checked.
 *
 * The v1 interface lists the bearer header as optional on every route (seed part 5). That is
 * honoured as "the header is not demanded for its own sake": with auth off nothing is read, and
 * with auth on a request without a token is served where the route's rule can be met without
 * claims. No v1 route has such a rule (each is A, S or H), so such a request gets 401
 * `No access token provided` from the token reader, after JSON parsing, as in the reference.
 */
export function authorizeV1(claims: Claims, scope: RouteScope, ids: V1ScopeIds): void {
  if (scope.kind === 'none' || claims.isAdmin) return;
  if (scope.kind === 'admin') throw new AuthError(AUTH_DETAIL.adminRequired);
  if (scope.kind === 'self') return;
  const v1 = claims.v1 ?? {};
  const protectsUser = scope.kind === 'peer' || scope.kind === 'session';
  const protectsSession = scope.kind === 'session';
  if (protectsSession && same(v1.sessionId, ids.sessionId)) return;
  if (protectsUser && same(v1.userId, ids.userId)) return;
  if (same(v1.appId, ids.appId)) return;
  const anyProtected =
    ids.appId !== undefined || (protectsUser && ids.userId !== undefined) || (protectsSession && ids.sessionId !== undefined);
  if (anyProtected) throw new AuthError(AUTH_DETAIL.notPermissioned);
}

/** A present claim that differs from the value (absent claims are not compared, §4.4). */
function differs(claim: string | undefined, value: string): boolean {
  return claim !== undefined && claim !== value;
}

/*
 * The three H routes below read the app, user or session named in the query or, without one, in
 * the token. The reference compares only the claims a token has, so a token without `ap` (a user
 * or session key, or a v2/v3 key) could read any app, and one without `ap` and `us` any user of
 * any app. Here a non-admin token must also hold a claim that covers what it reads (the app by
 * `ap`; a user by `ap` or `us`; a session by `ap`, `us` or `se`), so no key reaches outside its
 * own app (docs/compatibility.md, "v1 generation").
 */

/** `GET /v1/apps` (H): the app to read, from `?app_id=` or the token's `ap`. */
export function checkV1AppRead(claims: Claims, queryAppId: string | undefined): string {
  const v1 = claims.v1 ?? {};
  if (queryAppId !== undefined) {
    if (!claims.isAdmin && v1.appId !== queryAppId) throw new AuthError(AUTH_DETAIL.unauthorized);
    return queryAppId;
  }
  if (v1.appId === undefined) throw new AuthError(V1_AUTH_DETAIL.appIdMissing);
  return v1.appId;
}

/** `GET /v1/apps/{app_id}/users` (H): the user to read, from `?user_id=` or the token's `us`. */
export function checkV1UserRead(claims: Claims, pathAppId: string, queryUserId: string | undefined): string {
  const v1 = claims.v1 ?? {};
  if (!claims.isAdmin && differs(v1.appId, pathAppId)) throw new AuthError(AUTH_DETAIL.unauthorized);
  if (queryUserId !== undefined && !claims.isAdmin && differs(v1.userId, queryUserId)) throw new AuthError(AUTH_DETAIL.unauthorized);
  const userId = queryUserId ?? v1.userId;
  if (userId === undefined) throw new AuthError(V1_AUTH_DETAIL.userIdMissing);
  if (!claims.isAdmin && v1.appId !== pathAppId && v1.userId !== userId) throw new AuthError(AUTH_DETAIL.unauthorized);
  return userId;
}

/** `GET .../users/{user_id}/sessions` (H): the session to read, from `?session_id=` or `se`. */
export function checkV1SessionRead(
  claims: Claims,
  pathAppId: string,
  pathUserId: string,
  querySessionId: string | undefined,
): string {
  const v1 = claims.v1 ?? {};
  if (!claims.isAdmin && (differs(v1.appId, pathAppId) || differs(v1.userId, pathUserId))) {
    throw new AuthError(AUTH_DETAIL.unauthorized);
  }
  if (querySessionId !== undefined && !claims.isAdmin && differs(v1.sessionId, querySessionId)) throw new AuthError(AUTH_DETAIL.unauthorized);
  const sessionId = querySessionId ?? v1.sessionId;
  if (sessionId === undefined) throw new AuthError(V1_AUTH_DETAIL.sessionIdMissing);
  if (!claims.isAdmin && v1.appId !== pathAppId && v1.userId !== pathUserId && v1.sessionId !== sessionId) {
    throw new AuthError(AUTH_DETAIL.unauthorized);
  }
  return sessionId;
}

// ---------------------------------------------------------------- scopes (shared/reference/scopes.md S3)

/** An admin key, or a workspace key without a peer or session claim. */
export function isWorkspaceLevel(claims: Claims): boolean {
  return claims.isAdmin || (claims.peerId === undefined && claims.sessionId === undefined);
}

/** `scopes` on a session create: a workspace-level key only. */
export function checkScopeMembership(claims: Claims): void {
  if (!isWorkspaceLevel(claims)) throw new AuthError('Scope membership requires a workspace-level key');
}

/** The `scope` read option: a workspace-level key only. */
export function checkScopeRead(claims: Claims): void {
  if (!isWorkspaceLevel(claims)) throw new AuthError('`scope` requires a workspace- or admin-level key');
}

/**
 * Session context with `peer_target`: a peer key reads a representation or card only from its
 * own perspective (the perspective peer, else the target, must be the key's peer).
 */
export function checkContextPerspective(claims: Claims, peerTarget: string | undefined, peerPerspective: string | undefined): void {
  if (claims.isAdmin || claims.sessionId !== undefined || claims.peerId === undefined || peerTarget === undefined) return;
  if ((peerPerspective ?? peerTarget) !== claims.peerId) throw new AuthError(AUTH_DETAIL.notPermissioned);
}
