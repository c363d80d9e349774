import { getPeerCard, setPeerCard } from '../../../domain/memory/peer-cards.js';
import { DEFAULT_MAX_CONCLUSIONS, getPeerContext, getPeerRepresentation } from '../../../domain/memory/representation.js';
import { peerCardSet, sessionAllowlist, type peerContextQueryV2, type peerContextQueryV3, type representationGetV2, type representationGetV3 } from '../../shared/memory-schemas.js';
import { invalidInput } from '../../../domain/errors.js';
import { refuseScopes } from '../../../domain/scopes/scope-guards.js';
import { resolveScopeRead } from '../../../domain/scopes/scopes.js';
import { checkScopeRead } from '../../shared/auth.js';
import { presentV2Representation } from '../../shared/present.js';
import { optional, str, type Infer, type Schema } from '../../shared/validate.js';
import type { FastifyBaseLogger } from 'fastify';
import type { DomainError } from '../../../domain/errors.js';
import type { WorkspaceApi } from '../define-route.js';

/** v3 answers a representation whose search query cannot be embedded without the semantic part, with a warning (scopes.md S7.6). */
function withoutSemanticPart(log: FastifyBaseLogger): (error: DomainError) => void {
  return (error) => log.warn({ err: error }, 'search_query could not be embedded; representation chosen without the semantic part');
}

const PEER = '/workspaces/:workspace_id/peers/:peer_id';

/** Both generations' peer context query and representation body, read by the generation's own names. */
type PeerContextQuery = typeof peerContextQueryV2 & typeof peerContextQueryV3;
type RepresentationBody = Schema<Infer<typeof representationGetV2> & Infer<typeof representationGetV3>>;

/**
 * Contract §7.2 (v2 names in §9.1): the peer card, peer context and representation, built from
 * stored conclusions and cards without a model. All workspace+peer scoped (§2.5).
 */
export function mountPeerMemoryRoutes({ route, g, deps: { ctx } }: WorkspaceApi): void {
  const tags = ['peers'];
  const target = { target: optional(str()) };
  const names = g.memory;

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
    pathIds: ['workspace_id', 'peer_id'],
    async handler({ params, query, body }) {
      await refuseScopes(ctx, params.workspace_id, [query.target ?? params.peer_id], 'card', 'later');
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
    query: names.peerContextQuery as PeerContextQuery,
    async handler({ params, query, log }) {
      await refuseScopes(ctx, params.workspace_id, [params.peer_id, query.target], 'peerContext', 'later');
      // include_most_frequent is accepted: the selection always has its most reinforced part
      // when it searches by meaning (representation.ts)
      const context = await getPeerContext(ctx, params.workspace_id, params.peer_id, {
        target: query.target,
        searchQuery: query.search_query,
        searchTopK: query.search_top_k,
        searchMaxDistance: names.hasV3Options ? (query.search_max_distance ?? undefined) : undefined,
        maxConclusions: query[names.maxConclusions] ?? DEFAULT_MAX_CONCLUSIONS,
        onEmbeddingFailure: names.hasV3Options ? withoutSemanticPart(log) : undefined,
      });
      return {
        status: 200,
        body: {
          peer_id: context.peerId,
          target_id: context.targetId,
          representation: names.isRepresentationObject ? presentV2Representation(context.conclusions) : context.representation,
          peer_card: context.peerCard,
        },
      };
    },
  });

  route({
    method: 'POST',
    url: `${PEER}/representation`,
    scope: { kind: 'peer' },
    summary: names.representationSummary,
    tags,
    body: { schema: names.representationBody as RepresentationBody, required: true },
    async handler({ params, body, claims, log }) {
      await refuseScopes(ctx, params.workspace_id, [params.peer_id, body.target], 'representation', 'later');
      let allowlist = names.hasV3Options ? sessionAllowlist(body.filters, body.session_id) : undefined;
      let observerId = params.peer_id;
      let target = body.target;
      const scope = names.hasV3Options ? (body as { scope?: string | string[] | null }).scope : undefined;
      if (scope !== undefined && scope !== null) {
        if (body.filters !== undefined && body.filters !== null) throw invalidInput('`scope` and `filters` are mutually exclusive');
        if (body.session_id) throw invalidInput('`scope` and `session_id` are mutually exclusive');
        checkScopeRead(claims);
        const read = await resolveScopeRead(ctx, params.workspace_id, scope);
        if (read.kind === 'single') [observerId, target] = [read.observerId, target ?? params.peer_id];
        else allowlist = read.sessionIds;
      }
      const representation = await getPeerRepresentation(ctx, params.workspace_id, observerId, {
        target,
        sessionIds: body.session_id !== undefined && body.session_id !== null ? [body.session_id] : allowlist,
        searchQuery: body.search_query,
        searchTopK: body.search_top_k,
        searchMaxDistance: names.hasV3Options ? (body.search_max_distance ?? undefined) : undefined,
        maxConclusions: body[names.maxConclusions],
        onEmbeddingFailure: names.hasV3Options ? withoutSemanticPart(log) : undefined,
      });
      return { status: 200, body: { representation } };
    },
  });
}
