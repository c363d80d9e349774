import {
  addPeersToSession,
  cloneSession,
  deleteSession,
  getOrCreateSession,
  getSessionPeerConfig,
  listSessionPeers,
  listSessions,
  removePeersFromSession,
  setSessionPeerConfig,
  setSessionPeers,
  updateSession,
} from '../../../domain/sessions/sessions.js';
import { refuseScopes } from '../../../domain/scopes/scope-guards.js';
import { checkCreateSession, checkPeerConfigRead, checkScopeMembership } from '../../shared/auth.js';
import { filtersBody, paged } from '../../shared/fields.js';
import { presentPage, presentPeer, presentSession } from '../../shared/present.js';
import { peerIdList, sessionPeerConfig } from '../../shared/resource-schemas.js';
import { listQuery } from '../../shared/route.js';
import { optional, str } from '../../shared/validate.js';
import type { WorkspaceApi } from '../define-route.js';

const SESSION = '/workspaces/:workspace_id/sessions/:session_id';

export function mountSessionRoutes({ route, g, deps: { ctx } }: WorkspaceApi): void {
  const tags = ['sessions'];

  route({
    method: 'POST',
    url: '/workspaces/:workspace_id/sessions',
    scope: { kind: 'self' },
    summary: 'Get or create a session',
    tags,
    body: { schema: g.bodies.sessionCreate, required: true },
    authorize: ({ params, body, claims }) => {
      checkCreateSession(claims, params.workspace_id, body.id);
      const scopes = (body as { scopes?: unknown }).scopes;
      if (Array.isArray(scopes) && scopes.length > 0) checkScopeMembership(claims);
    },
    pathIds: ['workspace_id'],
    async handler({ params, body }) {
      await refuseScopes(ctx, params.workspace_id, [...(body.peers?.keys() ?? [])], 'membership', 'create');
      const { record, created } = await getOrCreateSession(ctx, params.workspace_id, body);
      return { status: created ? g.createdStatus : 200, body: presentSession(record) };
    },
  });

  route({
    method: 'POST',
    url: '/workspaces/:workspace_id/sessions/list',
    scope: { kind: 'workspace' },
    summary: 'List active sessions',
    tags,
    query: g.listPaging,
    body: { schema: filtersBody, required: false },
    async handler({ params, query, body }) {
      const page = await listSessions(ctx, params.workspace_id, listQuery(query, body, g.rules));
      return { status: 200, body: presentPage(page, query.page, query.size, presentSession) };
    },
  });

  route({
    method: 'PUT',
    url: SESSION,
    scope: { kind: 'session' },
    summary: 'Update a session (created when missing)',
    tags,
    body: { schema: g.bodies.sessionUpdate, required: true },
    pathIds: ['workspace_id', 'session_id'],
    async handler({ params, body }) {
      const session = await updateSession(ctx, params.workspace_id, params.session_id, body);
      return { status: 200, body: presentSession(session) };
    },
  });

  route({
    method: 'DELETE',
    url: SESSION,
    scope: { kind: 'session' },
    summary: 'Delete a session',
    tags,
    async handler({ params }) {
      await deleteSession(ctx, params.workspace_id, params.session_id);
      return { status: 202, body: { message: 'Session deleted successfully' } };
    },
  });

  route({
    method: g.cloneMethod,
    url: `${SESSION}/clone`,
    scope: { kind: 'session' },
    summary: 'Clone a session',
    tags,
    query: { message_id: optional(str()) },
    async handler({ params, query }) {
      const session = await cloneSession(ctx, params.workspace_id, params.session_id, query.message_id);
      return { status: g.createdStatus, body: presentSession(session) };
    },
  });

  // seed 4.2: add peers; unknown peers are created, the session too
  route({
    method: 'POST',
    url: `${SESSION}/peers`,
    scope: { kind: 'session' },
    summary: 'Add peers to a session',
    tags,
    body: { schema: g.bodies.sessionPeers, required: true },
    pathIds: ['workspace_id', 'session_id'],
    async handler({ params, body }) {
      await refuseScopes(ctx, params.workspace_id, [...body.keys()], 'membership', 'create');
      const session = await addPeersToSession(ctx, params.workspace_id, params.session_id, body);
      return { status: 200, body: presentSession(session) };
    },
  });

  route({
    method: 'PUT',
    url: `${SESSION}/peers`,
    scope: { kind: 'session' },
    summary: 'Set the peers of a session',
    tags,
    body: { schema: g.bodies.sessionPeers, required: true },
    async handler({ params, body }) {
      await refuseScopes(ctx, params.workspace_id, [...body.keys()], 'membership', 'create');
      const session = await setSessionPeers(ctx, params.workspace_id, params.session_id, body);
      return { status: 200, body: presentSession(session) };
    },
  });

  route({
    method: 'DELETE',
    url: `${SESSION}/peers`,
    scope: { kind: 'session' },
    summary: 'Remove peers from a session',
    tags,
    body: { schema: peerIdList, required: true },
    async handler({ params, body }) {
      await refuseScopes(ctx, params.workspace_id, body, 'membership', 'pass');
      const session = await removePeersFromSession(ctx, params.workspace_id, params.session_id, body);
      return { status: 200, body: presentSession(session) };
    },
  });

  // member-read applies to v3 keys only: v2's authorization has no such rule (§9.2)
  route({
    method: 'GET',
    url: `${SESSION}/peers`,
    scope: { kind: 'session', memberRead: true },
    summary: 'List the active members of a session',
    tags,
    query: paged,
    async handler({ params, query }) {
      const page = await listSessionPeers(ctx, params.workspace_id, params.session_id, query.page, query.size);
      return { status: 200, body: presentPage(page, query.page, query.size, presentPeer) };
    },
  });

  route({
    method: 'GET',
    url: `${SESSION}/peers/:peer_id/config`,
    scope: { kind: 'session', memberRead: true },
    summary: 'Get the session-level configuration of a peer',
    tags,
    authorize: g.hasPeerKeyRules ? ({ params, claims }) => checkPeerConfigRead(claims, params.peer_id) : undefined,
    async handler({ params }) {
      await refuseScopes(ctx, params.workspace_id, [params.peer_id], 'memberConfig', 'pass');
      const config = await getSessionPeerConfig(ctx, params.workspace_id, params.session_id, params.peer_id);
      return { status: 200, body: config };
    },
  });

  route({
    method: g.setMemberConfig.method,
    url: `${SESSION}/peers/:peer_id/config`,
    scope: { kind: 'session' },
    summary: 'Set the session-level configuration of a peer',
    tags,
    body: { schema: sessionPeerConfig, required: true },
    async handler({ params, body }) {
      await refuseScopes(ctx, params.workspace_id, [params.peer_id], 'memberConfig', 'pass');
      await setSessionPeerConfig(ctx, params.workspace_id, params.session_id, params.peer_id, body);
      return { status: g.setMemberConfig.status };
    },
  });
}
