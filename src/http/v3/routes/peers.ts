import { getOrCreatePeer, listPeersOfWorkspace, listSessionsOfPeer, peersVersion, updatePeer } from '../../../domain/peers/peers.js';
import { checkCreatePeer } from '../../shared/auth.js';
import { pagedReversible } from '../../shared/fields.js';
import { presentPage, presentPeer, presentSession } from '../../shared/present.js';
import { PageCache, isNoFilter } from '../../shared/page-cache.js';
import { checkPathId } from '../../shared/resource-schemas.js';
import { listQuery, type HttpDeps, type RouteDefiner } from '../../shared/route.js';
import { ListFilters, PeerCreate, PeerUpdate } from '../schemas.js';

export function mountPeerRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['peers'];
  const pages = new PageCache();

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
      // unfiltered pages are served from cache while the workspace's peers are unchanged
      const version = isNoFilter(body?.filters) ? await peersVersion(ctx, params.workspace_id) : undefined;
      const key = `${params.workspace_id}\u0000${query.page}\u0000${query.size}\u0000${query.reverse}`;
      const cached = version === undefined ? undefined : pages.get(key, version);
      if (cached !== undefined) return { status: 200, json: cached };
      const page = await listPeersOfWorkspace(ctx, params.workspace_id, listQuery(query, body, 'v3'));
      const json = JSON.stringify(presentPage(page, query.page, query.size, presentPeer));
      if (version !== undefined) pages.set(key, version, json);
      return { status: 200, json };
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
