import { AUTH_DETAIL, AuthError, Claims, RouteScope } from './claims.js';
import { same } from './workspace-rules.js';

/* Which claims reach a v1 route (contract-v1 §4). */

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
