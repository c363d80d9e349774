import { createConclusions, deleteConclusion, listConclusions, queryConclusions } from '../../../domain/memory/conclusions.js';
import { filtersBody, pagedReversible } from '../../shared/fields.js';
import { conclusionContents, conclusionQuery, observationBatchV2 } from '../../shared/memory-schemas.js';
import { presentObservation, presentPage } from '../../shared/present.js';
import { listQuery, type HttpDeps, type RouteDefiner } from '../../shared/route.js';

const OBSERVATIONS = '/v2/workspaces/:workspace_id/observations';

/** v2 names conclusions "observations" (contract §9.1): create 200, delete 200 with a message. */
export function mountObservationRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['observations'];

  route({
    method: 'POST',
    url: OBSERVATIONS,
    scope: { kind: 'workspace' },
    summary: 'Create observations (1 to 100, all or nothing)',
    tags,
    body: { schema: observationBatchV2, required: true },
    countAhead: conclusionContents,
    async handler({ params, body }) {
      const inputs = body.observations.map((o) => ({
        content: o.content,
        observerId: o.observer_id,
        observedId: o.observed_id,
        sessionId: o.session_id,
      }));
      const created = await createConclusions(ctx, params.workspace_id, inputs);
      return { status: 200, body: created.map(presentObservation) };
    },
  });

  route({
    method: 'POST',
    url: `${OBSERVATIONS}/list`,
    scope: { kind: 'workspace' },
    summary: 'List observations, newest first',
    tags,
    // v2 lists have no `reverse`, except messages and observations (contract §9.1)
    query: pagedReversible,
    body: { schema: filtersBody, required: false },
    async handler({ params, query, body }) {
      const page = await listConclusions(ctx, params.workspace_id, listQuery(query, body, 'v2'));
      return { status: 200, body: presentPage(page, query.page, query.size, presentObservation) };
    },
  });

  route({
    method: 'POST',
    url: `${OBSERVATIONS}/query`,
    scope: { kind: 'workspace' },
    summary: "Rank an observer's observations of a peer by full-text relevance (`distance` is unused)",
    tags,
    body: { schema: conclusionQuery, required: true },
    async handler({ params, body }) {
      const found = await queryConclusions(ctx, params.workspace_id, {
        query: body.query,
        topK: body.top_k,
        distance: body.distance,
        filters: body.filters,
        generation: 'v2',
      });
      return { status: 200, body: found.map(presentObservation) };
    },
  });

  route({
    method: 'DELETE',
    url: `${OBSERVATIONS}/:observation_id`,
    scope: { kind: 'workspace' },
    summary: 'Delete an observation',
    tags,
    async handler({ params }) {
      await deleteConclusion(ctx, params.workspace_id, params.observation_id);
      return { status: 200, body: { message: 'Observation deleted successfully' } };
    },
  });
}
