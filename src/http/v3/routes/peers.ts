import { getOrCreatePeer, listPeersOfWorkspace, listSessionsOfPeer, updatePeer } from '../../../domain/peers/peers.js';
import { checkCreatePeer } from '../../shared/auth.js';
import { pagedReversible } from '../../shared/fields.js';
import { presentPage, presentPeer, presentSession } from '../../shared/present.js';
import { checkPathId } from '../../shared/resource-schemas.js';
import { listQuery, type HttpDeps, type RouteDefiner } from '../../shared/route.js';
import { ListFilters, PeerCreate, PeerUpdate } from '../schemas.js';

export function mountPeerRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['peers'];

  route({
    method: 'POST',
    url: '/v3/workspaces/:workspace_id/peers',
    scope: { kind: 'self' },
    summary: 'Get or create a peer',
    tags,
    body: { schema: PeerCreate, required: true },
    async handler({ params, body, claims }) {
      checkCreatePeer(claims, params.workspace_id, body.id);
      const invalid = checkPathId('v3', params.workspace_id, 'workspace_id');
      if (invalid !== undefined) return { status: 422, body: invalid };
      const { record, created } = await getOrCreatePeer(ctx, params.workspace_id, body);
      return { status: created ? 201 : 200, body: presentPeer(record) };
    },
  });

  // seed 4.4
  route({
    method: 'POST',
    url: '/v3/workspaces/:workspace_id/peers/list',
    scope: { kind: 'workspace' },
    summary: 'List the peers of a workspace',
    tags,
    query: pagedReversible,
    body: { schema: ListFilters, required: false },
    async handler({ params, query, body }) {
      const page = await listPeersOfWorkspace(ctx, params.workspace_id, listQuery(query, body, 'v3'));
      return { status: 200, body: presentPage(page, query.page, query.size, presentPeer) };
    },
  });

  route({
    method: 'PUT',
    url: '/v3/workspaces/:workspace_id/peers/:peer_id',
    scope: { kind: 'peer' },
    summary: 'Update a peer (created when missing)',
    tags,
    body: { schema: PeerUpdate, required: true },
    async handler({ params, body }) {
      const invalid =
        checkPathId('v3', params.workspace_id, 'workspace_id') ?? checkPathId('v3', params.peer_id, 'peer_id');
      if (invalid !== undefined) return { status: 422, body: invalid };
      const peer = await updatePeer(ctx, params.workspace_id, params.peer_id, body);
      return { status: 200, body: presentPeer(peer) };
    },
  });

  route({
    method: 'POST',
    url: '/v3/workspaces/:workspace_id/peers/:peer_id/sessions',
    scope: { kind: 'peer' },
    summary: 'List the sessions of a peer',
    tags,
    query: pagedReversible,
    body: { schema: ListFilters, required: false },
    async handler({ params, query, body }) {
      const page = await listSessionsOfPeer(ctx, params.workspace_id, params.peer_id, listQuery(query, body, 'v3'));
      return { status: 200, body: presentPage(page, query.page, query.size, presentSession) };
    },
  });
}
