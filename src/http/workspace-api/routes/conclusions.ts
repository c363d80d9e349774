import { refuseScopes } from '../../../domain/scopes/scope-guards.js';
import { conclusionHistory, createConclusions, deleteConclusion, getConclusion, listConclusions, queryConclusions } from '../../../domain/memory/conclusions.js';
import { filtersBody, pagedReversible } from '../../shared/fields.js';
import { bool, optional } from '../../shared/validate.js';
import { conclusionContents, conclusionQuery } from '../../shared/memory-schemas.js';
import { presentConclusion, presentMessage, presentPage } from '../../shared/present.js';
import { listQuery } from '../../shared/route.js';
import type { WorkspaceApi } from '../define-route.js';

/** Contract §7.5 (v2 calls them observations, §9.1): every route is workspace-scoped (§2.5). */
/** `include_superseded`: superseded conclusions too (facts over time, docs/reasoning.md); default false. */
const includeSuperseded = { include_superseded: optional(bool(), () => false) };

export function mountConclusionRoutes({ route, g, deps: { ctx } }: WorkspaceApi): void {
  const { plural, one, aboutPeer, idParam, present } = g.conclusions;
  const base = `/workspaces/:workspace_id/${plural}`;
  const tags = [plural];

  route({
    method: 'POST',
    url: base,
    scope: { kind: 'workspace' },
    summary: `Create ${plural} (1 to 100, all or nothing)`,
    tags,
    body: { schema: g.conclusions.batch, required: true },
    countAhead: conclusionContents,
    async handler({ params, body }) {
      await refuseScopes(ctx, params.workspace_id, body.map((c) => c.observed_id), 'conclusion', 'missing');
      const inputs = body.map((c) => ({
        content: c.content,
        observerId: c.observer_id,
        observedId: c.observed_id,
        sessionId: c.session_id,
        supersedes: c.supersedes,
      }));
      const created = await createConclusions(ctx, params.workspace_id, inputs);
      return { status: g.createdStatus, body: created.map(present) };
    },
  });

  route({
    method: 'POST',
    url: `${base}/list`,
    scope: { kind: 'workspace' },
    summary: `List ${plural}, newest first`,
    tags,
    // `reverse` in both generations: v2 has it on messages and observations (contract §9.1)
    query: { ...pagedReversible, ...includeSuperseded },
    body: { schema: filtersBody, required: false },
    async handler({ params, query, body }) {
      const page = await listConclusions(ctx, params.workspace_id, { ...listQuery(query, body, g.rules), includeSuperseded: query.include_superseded });
      return { status: 200, body: presentPage(page, query.page, query.size, present) };
    },
  });

  route({
    method: 'POST',
    url: `${base}/query`,
    scope: { kind: 'workspace' },
    summary: `Rank an observer's ${plural} ${aboutPeer} by full-text relevance (\`distance\` is unused)`,
    tags,
    query: includeSuperseded,
    body: { schema: conclusionQuery, required: true },
    async handler({ params, query, body }) {
      const found = await queryConclusions(ctx, params.workspace_id, {
        query: body.query,
        topK: body.top_k,
        distance: body.distance,
        filters: body.filters,
        rules: g.rules,
        includeSuperseded: query.include_superseded,
      });
      return { status: 200, body: found.map(present) };
    },
  });

  route({
    generations: ['v3'],
    method: 'GET',
    url: `${base}/:${idParam}`,
    scope: { kind: 'workspace' },
    summary: 'Get a conclusion (newer SDKs call this; 404 as for delete when it does not exist or was deleted)',
    tags,
    async handler({ params }) {
      return { status: 200, body: present(await getConclusion(ctx, params.workspace_id, params[idParam])) };
    },
  });

  route({
    generations: ['v3'],
    method: 'GET',
    url: `${base}/:${idParam}/history`,
    scope: { kind: 'workspace' },
    summary: 'The chain of facts a conclusion belongs to, oldest first up to the current one, each with its source messages',
    tags,
    async handler({ params }) {
      const chain = await conclusionHistory(ctx, params.workspace_id, params[idParam]);
      return { status: 200, body: chain.map((entry) => ({ ...presentConclusion(entry.conclusion), source_messages: entry.sourceMessages.map(presentMessage) })) };
    },
  });

  route({
    method: 'DELETE',
    url: `${base}/:${idParam}`,
    scope: { kind: 'workspace' },
    summary: `Delete ${one}`,
    tags,
    async handler({ params }) {
      await deleteConclusion(ctx, params.workspace_id, params[idParam]);
      return g.conclusions.deleted;
    },
  });
}
