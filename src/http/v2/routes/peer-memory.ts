import { getPeerCard, setPeerCard } from '../../../domain/memory/peer-cards.js';
import { DEFAULT_MAX_CONCLUSIONS, getPeerContext, getPeerRepresentation } from '../../../domain/memory/representation.js';
import { optional, str } from '../../shared/validate.js';
import { peerCardSet, peerContextQueryV2, representationGetV2 } from '../../shared/memory-schemas.js';
import { presentV2Representation } from '../../shared/present.js';
import { checkPathId } from '../../shared/resource-schemas.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';

const PEER = '/v2/workspaces/:workspace_id/peers/:peer_id';

/**
 * v2 peer card, context and working representation, from stored observations and cards
 * without a model (contract §7.2 with the v2 names of §9.1).
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
      const invalid = checkPathId('v2', params.workspace_id, 'workspace_id') ?? checkPathId('v2', params.peer_id, 'peer_id');
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
    query: peerContextQueryV2,
    async handler({ params, query }) {
      const context = await getPeerContext(ctx, params.workspace_id, params.peer_id, {
        target: query.target,
        searchQuery: query.search_query,
        searchTopK: query.search_top_k,
        maxConclusions: query.max_observations ?? DEFAULT_MAX_CONCLUSIONS,
      });
      return {
        status: 200,
        body: {
          peer_id: context.peerId,
          target_id: context.targetId,
          representation: presentV2Representation(context.conclusions),
          peer_card: context.peerCard,
        },
      };
    },
  });

  route({
    method: 'POST',
    url: `${PEER}/representation`,
    scope: { kind: 'peer' },
    summary: 'The working representation: stored observations about a peer, rendered as markdown',
    tags,
    body: { schema: representationGetV2, required: true },
    async handler({ params, body }) {
      const representation = await getPeerRepresentation(ctx, params.workspace_id, params.peer_id, {
        target: body.target,
        sessionIds: body.session_id !== undefined ? [body.session_id] : undefined,
        searchQuery: body.search_query,
        searchTopK: body.search_top_k,
        maxConclusions: body.max_observations,
      });
      return { status: 200, body: { representation } };
    },
  });
}
