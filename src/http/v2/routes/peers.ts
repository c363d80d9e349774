import { getOrCreatePeer, listPeersOfWorkspace, listSessionsOfPeer, peersVersion, updatePeer } from '../../../domain/peers/peers.js';
import { checkCreatePeer } from '../../shared/auth.js';
import { paged } from '../../shared/fields.js';
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
    url: '/v2/workspaces/:workspace_id/peers',
    scope: { kind: 'self' },
    summary: 'Get or create a peer',
    tags,
    body: { schema: PeerCreate, required: true },
    async handler({ params, body, claims }) {
      checkCreatePeer(claims, params.workspace_id, body.id);
      const invalid = checkPathId('v2', params.workspace_id, 'workspace_id');
      if (invalid !== undefined) return { status: 422, body: invalid };
      const { record } = await getOrCreatePeer(ctx, params.workspace_id, body);
      return { status: 200, body: presentPeer(record) };
    },
  });

  route({
    method: 'POST',
    url: '/v2/workspaces/:workspace_id/peers/list',
    scope: { kind: 'workspace' },
    summary: 'List the peers of a workspace',
    tags,
    query: paged,
    body: { schema: ListFilters, required: false },
    async handler({ params, query, body }) {
      // unfiltered pages are served from cache while the workspace's peers are unchanged
      const version = isNoFilter(body?.filters) ? await peersVersion(ctx, params.workspace_id) : undefined;
      const key = `${params.workspace_id}\u0000${query.page}\u0000${query.size}\u0000${false}`;
      const cached = version === undefined ? undefined : pages.get(key, version);
      if (cached !== undefined) return { status: 200, json: cached };
      const page = await listPeersOfWorkspace(ctx, params.workspace_id, listQuery(query, body, 'v2'));
      const json = JSON.stringify(presentPage(page, query.page, query.size, presentPeer));
      if (version !== undefined) pages.set(key, version, json);
      return { status: 200, json };
    },
  });

  route({
    method: 'PUT',
    url: '/v2/workspaces/:workspace_id/peers/:peer_id',
    scope: { kind: 'peer' },
    summary: 'Update a peer (created when missing)',
    tags,
    body: { schema: PeerUpdate, required: true },
    async handler({ params, body }) {
      const invalid =
        checkPathId('v2', params.workspace_id, 'workspace_id') ?? checkPathId('v2', params.peer_id, 'peer_id');
      if (invalid !== undefined) return { status: 422, body: invalid };
      return { status: 200, body: presentPeer(await updatePeer(ctx, params.workspace_id, params.peer_id, body)) };
    },
  });

  // seed 4.3: the v2 page of sessions, left and inactive sessions included, oldest first
  route({
    method: 'POST',
    url: '/v2/workspaces/:workspace_id/peers/:peer_id/sessions',
    scope: { kind: 'peer' },
    summary: 'List the sessions of a peer',
    tags,
    query: paged,
    body: { schema: ListFilters, required: false },
    async handler({ params, query, body }) {
      const page = await listSessionsOfPeer(ctx, params.workspace_id, params.peer_id, listQuery(query, body, 'v2'));
      return { status: 200, body: presentPage(page, query.page, query.size, presentSession) };
    },
  });
}
