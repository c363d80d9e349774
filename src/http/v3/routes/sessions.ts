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
import { checkCreateSession, checkPeerConfigRead } from '../../shared/auth.js';
import { paged, pagedReversible } from '../../shared/fields.js';
import { presentPage, presentPeer, presentSession } from '../../shared/present.js';
import { checkPathId } from '../../shared/resource-schemas.js';
import { listQuery, type HttpDeps, type RouteDefiner } from '../../shared/route.js';
import { optional, str } from '../../shared/validate.js';
import { ListFilters, PeerIdList, SessionCreate, SessionPeerConfig, SessionPeers, SessionUpdate } from '../schemas.js';

const SESSION = '/v3/workspaces/:workspace_id/sessions/:session_id';

export function mountSessionRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['sessions'];
  const pathIds = (params: Record<string, string>) =>
    checkPathId('v3', params.workspace_id, 'workspace_id') ?? checkPathId('v3', params.session_id, 'session_id');

  route({
    method: 'POST',
    url: '/v3/workspaces/:workspace_id/sessions',
    scope: { kind: 'self' },
    summary: 'Get or create a session',
    tags,
    body: { schema: SessionCreate, required: true },
    async handler({ params, body, claims }) {
      checkCreateSession(claims, params.workspace_id, body.id);
      const invalid = checkPathId('v3', params.workspace_id, 'workspace_id');
      if (invalid !== undefined) return { status: 422, body: invalid };
      const { record, created } = await getOrCreateSession(ctx, params.workspace_id, body);
      return { status: created ? 201 : 200, body: presentSession(record) };
    },
  });

  route({
    method: 'POST',
    url: '/v3/workspaces/:workspace_id/sessions/list',
    scope: { kind: 'workspace' },
    summary: 'List active sessions',
    tags,
    query: pagedReversible,
    body: { schema: ListFilters, required: false },
    async handler({ params, query, body }) {
      const page = await listSessions(ctx, params.workspace_id, listQuery(query, body, 'v3'));
      return { status: 200, body: presentPage(page, query.page, query.size, presentSession) };
    },
  });

  route({
    method: 'PUT',
    url: SESSION,
    scope: { kind: 'session' },
    summary: 'Update a session (created when missing)',
    tags,
    body: { schema: SessionUpdate, required: true },
    async handler({ params, body }) {
      const invalid = pathIds(params);
      if (invalid !== undefined) return { status: 422, body: invalid };
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
    method: 'POST',
    url: `${SESSION}/clone`,
    scope: { kind: 'session' },
    summary: 'Clone a session',
    tags,
    query: { message_id: optional(str()) },
    async handler({ params, query }) {
      const session = await cloneSession(ctx, params.workspace_id, params.session_id, query.message_id);
      return { status: 201, body: presentSession(session) };
    },
  });

  // seed 4.2: add peers; unknown peers are created, the session too
  route({
    method: 'POST',
    url: `${SESSION}/peers`,
    scope: { kind: 'session' },
    summary: 'Add peers to a session',
    tags,
    body: { schema: SessionPeers, required: true },
    async handler({ params, body }) {
      const invalid = pathIds(params);
      if (invalid !== undefined) return { status: 422, body: invalid };
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
    body: { schema: SessionPeers, required: true },
    async handler({ params, body }) {
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
    body: { schema: PeerIdList, required: true },
    async handler({ params, body }) {
      const session = await removePeersFromSession(ctx, params.workspace_id, params.session_id, body);
      return { status: 200, body: presentSession(session) };
    },
  });

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
    async handler({ params, claims }) {
      checkPeerConfigRead(claims, params.peer_id);
      const config = await getSessionPeerConfig(ctx, params.workspace_id, params.session_id, params.peer_id);
      return { status: 200, body: config };
    },
  });

  route({
    method: 'PUT',
    url: `${SESSION}/peers/:peer_id/config`,
    scope: { kind: 'session' },
    summary: 'Set the session-level configuration of a peer',
    tags,
    body: { schema: SessionPeerConfig, required: true },
    async handler({ params, body }) {
      await setSessionPeerConfig(ctx, params.workspace_id, params.session_id, params.peer_id, body);
      return { status: 204 };
    },
  });
}
