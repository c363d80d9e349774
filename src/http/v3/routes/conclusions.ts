import { createConclusions, deleteConclusion, getConclusion, listConclusions, queryConclusions } from '../../../domain/memory/conclusions.js';
import { filtersBody, pagedReversible } from '../../shared/fields.js';
import { conclusionBatchV3, conclusionContents, conclusionQuery } from '../../shared/memory-schemas.js';
import { presentConclusion, presentPage } from '../../shared/present.js';
import { listQuery, type HttpDeps, type RouteDefiner } from '../../shared/route.js';

const CONCLUSIONS = '/v3/workspaces/:workspace_id/conclusions';

/** Contract §7.5: every conclusions route is workspace-scoped (§2.5). */
export function mountConclusionRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['conclusions'];

  route({
    method: 'POST',
    url: CONCLUSIONS,
    scope: { kind: 'workspace' },
    summary: 'Create conclusions (1 to 100, all or nothing)',
    tags,
    body: { schema: conclusionBatchV3, required: true },
    countAhead: conclusionContents,
    async handler({ params, body }) {
      const inputs = body.conclusions.map((c) => ({
        content: c.content,
        observerId: c.observer_id,
        observedId: c.observed_id,
        sessionId: c.session_id,
      }));
      const created = await createConclusions(ctx, params.workspace_id, inputs);
      return { status: 201, body: created.map(presentConclusion) };
    },
  });

  route({
    method: 'POST',
    url: `${CONCLUSIONS}/list`,
    scope: { kind: 'workspace' },
    summary: 'List conclusions, newest first',
    tags,
    query: pagedReversible,
    body: { schema: filtersBody, required: false },
    async handler({ params, query, body }) {
      const page = await listConclusions(ctx, params.workspace_id, listQuery(query, body, 'v3'));
      return { status: 200, body: presentPage(page, query.page, query.size, presentConclusion) };
    },
  });

  route({
    method: 'POST',
    url: `${CONCLUSIONS}/query`,
    scope: { kind: 'workspace' },
    summary: "Rank an observer's conclusions about a peer by full-text relevance (`distance` is unused)",
    tags,
    body: { schema: conclusionQuery, required: true },
    async handler({ params, body }) {
      const found = await queryConclusions(ctx, params.workspace_id, {
        query: body.query,
        topK: body.top_k,
        distance: body.distance,
        filters: body.filters,
        generation: 'v3',
      });
      return { status: 200, body: found.map(presentConclusion) };
    },
  });

  route({
    method: 'GET',
    url: `${CONCLUSIONS}/:conclusion_id`,
    scope: { kind: 'workspace' },
    summary: 'Get a conclusion (newer SDKs call this; 404 as for delete when it does not exist or was deleted)',
    tags,
    async handler({ params }) {
      return { status: 200, body: presentConclusion(await getConclusion(ctx, params.workspace_id, params.conclusion_id)) };
    },
  });

  route({
    method: 'DELETE',
    url: `${CONCLUSIONS}/:conclusion_id`,
    scope: { kind: 'workspace' },
    summary: 'Delete a conclusion',
    tags,
    async handler({ params }) {
      await deleteConclusion(ctx, params.workspace_id, params.conclusion_id);
      return { status: 204 };
    },
  });
}
