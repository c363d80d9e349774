import { changeToken } from '../../../domain/context.js';
import { getOrCreatePeer, listPeersOfWorkspace, listSessionsOfPeer, peersVersion, sessionsOfPeerVersion, updatePeer } from '../../../domain/peers/peers.js';
import { checkCreatePeer } from '../../shared/auth.js';
import { deletePeer, snakeCounts } from '../../../domain/peers/peer-deletion.js';
import { refuseScopeUpdate } from '../../../domain/scopes/scope-guards.js';
import { filtersBody } from '../../shared/fields.js';
import { LIST_CACHE_BYTES, PageCache, isNoFilter } from '../../shared/page-cache.js';
import { presentPage, presentPeer, presentSession } from '../../shared/present.js';
import { listQuery } from '../../shared/route.js';
import { bool, choice, dict, model, nullable, optional } from '../../shared/validate.js';
import type { WorkspaceApi } from '../define-route.js';

/** v3's peer list body: filters, and which kind of peer (S7.2: scopes are left out by default). */
const PeerListBody = model({ filters: optional(nullable(dict())), kind: optional(nullable(choice(['scope', 'all']))) }, { title: 'PeerListRequest' });
const KINDS = { scope: 'scopes', all: 'all' } as const;

export function mountPeerRoutes({ route, g, deps: { ctx } }: WorkspaceApi): void {
  const tags = ['peers'];
  const pages = new PageCache(() => changeToken(ctx));
  const sessionPages = new PageCache(() => changeToken(ctx), LIST_CACHE_BYTES);

  route({
    method: 'POST',
    url: '/workspaces/:workspace_id/peers',
    scope: { kind: 'self' },
    summary: 'Get or create a peer',
    tags,
    body: { schema: g.bodies.peerCreate, required: true },
    authorize: ({ params, body, claims }) => checkCreatePeer(claims, params.workspace_id, body.id),
    pathIds: ['workspace_id'],
    async handler({ params, body }) {
      const { record, created } = await getOrCreatePeer(ctx, params.workspace_id, body);
      return { status: created ? g.createdStatus : 200, body: presentPeer(record) };
    },
  });

  // an addition to the reference's interface (docs/forgetting.md, docs/compatibility.md)
  route({
    generations: ['v3'],
    method: 'DELETE',
    url: '/workspaces/:workspace_id/peers/:peer_id',
    scope: { kind: 'workspace' },
    summary: 'Delete a peer and everything by or about it (in the background; `dry_run=true` only counts)',
    tags,
    query: { dry_run: optional(bool(), () => false) },
    async handler({ params, query }) {
      await refuseScopeUpdate(ctx, params.workspace_id, params.peer_id);
      const deletion = await deletePeer(ctx, params.workspace_id, params.peer_id, { dryRun: query.dry_run });
      return {
        status: deletion.dryRun ? 200 : 202,
        body: {
          workspace_id: params.workspace_id,
          peer_id: params.peer_id,
          dry_run: deletion.dryRun,
          status: deletion.dryRun ? 'dry_run' : 'queued',
          job_id: deletion.jobId ?? null,
          removes: snakeCounts(deletion.removed),
        },
      };
    },
  });

  // seed 4.4
  route({
    method: 'POST',
    url: '/workspaces/:workspace_id/peers/list',
    scope: { kind: 'workspace' },
    summary: 'List the peers of a workspace',
    tags,
    query: g.listPaging,
    body: { schema: g.name === 'v3' ? PeerListBody : filtersBody, required: false },
    async handler({ params, query, body }) {
      const kind = body !== undefined && 'kind' in body && typeof body.kind === 'string' ? KINDS[body.kind as keyof typeof KINDS] : 'peers';
      // unfiltered pages are served from cache while the workspace's peers are unchanged
      const version = isNoFilter(body?.filters) ? () => peersVersion(ctx, params.workspace_id) : undefined;
      const key = `${params.workspace_id}\u0000${query.page}\u0000${query.size}\u0000${query.reverse === true}\u0000${kind}`;
      const json = await pages.serve(key, version, async () => {
        const page = await listPeersOfWorkspace(ctx, params.workspace_id, listQuery(query, body, g.rules), kind);
        return JSON.stringify(presentPage(page, query.page, query.size, presentPeer));
      });
      return { status: 200, json };
    },
  });

  route({
    method: 'PUT',
    url: '/workspaces/:workspace_id/peers/:peer_id',
    scope: { kind: 'peer' },
    summary: 'Update a peer (created when missing)',
    tags,
    body: { schema: g.bodies.peerUpdate, required: true },
    pathIds: ['workspace_id', 'peer_id'],
    async handler({ params, body }) {
      await refuseScopeUpdate(ctx, params.workspace_id, params.peer_id);
      const peer = await updatePeer(ctx, params.workspace_id, params.peer_id, body);
      return { status: 200, body: presentPeer(peer) };
    },
  });

  // seed 4.3 (v2) and its v3 twin: left and inactive sessions included
  route({
    method: 'POST',
    url: '/workspaces/:workspace_id/peers/:peer_id/sessions',
    scope: { kind: 'peer' },
    summary: 'List the sessions of a peer',
    tags,
    query: g.listPaging,
    body: { schema: filtersBody, required: false },
    async handler({ params, query, body }) {
      // unfiltered pages are served from cache while none of the peer's sessions or memberships changed
      const version = isNoFilter(body?.filters) ? () => sessionsOfPeerVersion(ctx, params.workspace_id, params.peer_id) : undefined;
      const key = `${params.workspace_id}\u0000${params.peer_id}\u0000${query.page}\u0000${query.size}\u0000${query.reverse === true}`;
      const json = await sessionPages.serve(key, version, async () => {
        const page = await listSessionsOfPeer(ctx, params.workspace_id, params.peer_id, listQuery(query, body, g.rules));
        return JSON.stringify(presentPage(page, query.page, query.size, presentSession));
      });
      return { status: 200, json };
    },
  });
}
