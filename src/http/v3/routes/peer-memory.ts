import { getPeerCard, setPeerCard } from '../../../domain/memory/peer-cards.js';
import { DEFAULT_MAX_CONCLUSIONS, getPeerContext, getPeerRepresentation } from '../../../domain/memory/representation.js';
import { optional, str } from '../../shared/validate.js';
import { peerCardSet, peerContextQueryV3, representationGetV3, sessionAllowlist } from '../../shared/memory-schemas.js';
import { checkPathId } from '../../shared/resource-schemas.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';

const PEER = '/v3/workspaces/:workspace_id/peers/:peer_id';

/**
 * Contract §7.2: the peer card, peer context and representation, built from stored conclusions
 * and cards without a model. All workspace+peer scoped (§2.5).
 */
export function mountPeerMemoryRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['peers'];
  const target = { target: optional(str()) };

  route({
    method: 'GET',
    url: `${PEER}/card`,
    scope: { kind: 'peer' },
    summary: "The observer's card of the target (its own card without a target)",
    tags,
    query: target,
    async handler({ params, query }) {
      const card = await getPeerCard(ctx, params.workspace_id, params.peer_id, query.target ?? params.peer_id);
      return { status: 200, body: { peer_card: card } };
    },
  });

  route({
    method: 'PUT',
    url: `${PEER}/card`,
    scope: { kind: 'peer' },
    summary: "Set the observer's card of the target (the observer peer is created when missing)",
    tags,
    query: target,
    body: { schema: peerCardSet, required: true },
    async handler({ params, query, body }) {
      const invalid = checkPathId('v3', params.workspace_id, 'workspace_id') ?? checkPathId('v3', params.peer_id, 'peer_id');
      if (invalid !== undefined) return { status: 422, body: invalid };
      const card = await setPeerCard(ctx, params.workspace_id, params.peer_id, query.target ?? params.peer_id, body.peer_card);
      return { status: 200, body: { peer_card: card } };
    },
  });

  route({
    method: 'GET',
    url: `${PEER}/context`,
    scope: { kind: 'peer' },
    summary: 'Representation and card of the target from the observer (itself without a target)',
    tags,
    query: peerContextQueryV3,
    async handler({ params, query }) {
      // include_most_frequent is accepted: the selection always has its most reinforced part
      // when it searches by meaning (representation.ts)
      const context = await getPeerContext(ctx, params.workspace_id, params.peer_id, {
        target: query.target,
        searchQuery: query.search_query,
        searchTopK: query.search_top_k,
        searchMaxDistance: query.search_max_distance ?? undefined,
        maxConclusions: query.max_conclusions ?? DEFAULT_MAX_CONCLUSIONS,
      });
      return {
        status: 200,
        body: {
          peer_id: context.peerId,
          target_id: context.targetId,
          representation: context.representation,
          peer_card: context.peerCard,
        },
      };
    },
  });

  route({
    method: 'POST',
    url: `${PEER}/representation`,
    scope: { kind: 'peer' },
    summary: 'The stored conclusions about a peer, rendered as markdown',
    tags,
    body: { schema: representationGetV3, required: true },
    async handler({ params, body }) {
      const allowlist = sessionAllowlist(body.filters, body.session_id);
      const representation = await getPeerRepresentation(ctx, params.workspace_id, params.peer_id, {
        target: body.target,
        sessionIds: body.session_id !== undefined ? [body.session_id] : allowlist,
        searchQuery: body.search_query,
        searchTopK: body.search_top_k,
        searchMaxDistance: body.search_max_distance ?? undefined,
        maxConclusions: body.max_conclusions,
      });
      return { status: 200, body: { representation } };
    },
  });
}
