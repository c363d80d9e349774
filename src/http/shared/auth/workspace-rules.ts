import { AUTH_DETAIL, AuthError, Claims, IsActiveMember, RouteScope, ScopeIds } from './claims.js';

/* Which claims reach a v2 or v3 route (§2.4, §9.2), the self-authorizing creates (§2.5), and the scope routes' rules (scopes.md S3). */

export function same(claim: string | undefined, routeId: string | undefined): boolean {
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

/** Who asked, as a record of what they did keeps it (a forget's): the key's scope, never the key. */
export function actorOf(claims: Claims): string {
  if (claims.isAdmin) return 'admin';
  if (claims.peerId !== undefined) return `peer:${claims.workspaceId ?? ''}/${claims.peerId}`;
  return claims.workspaceId !== undefined ? `workspace:${claims.workspaceId}` : 'unknown';
}
