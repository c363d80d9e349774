import { deleteWorkspace, getOrCreateWorkspace, listWorkspaces, updateWorkspace } from '../../../domain/workspaces/workspaces.js';
import { checkCreateWorkspace } from '../../shared/auth.js';
import { filtersBody } from '../../shared/fields.js';
import { presentPage, presentWorkspace } from '../../shared/present.js';
import { listQuery } from '../../shared/route.js';
import type { WorkspaceApi } from '../define-route.js';
import { notFound } from '../../../domain/errors.js';
import { exportText } from '../../../domain/portability/export.js';
import { bool, optional } from '../../shared/validate.js';

export function mountWorkspaceRoutes({ route, g, deps: { ctx } }: WorkspaceApi): void {
  const tags = ['workspaces'];

  route({
    method: 'POST',
    url: '/workspaces',
    scope: { kind: 'self' },
    summary: 'Get or create a workspace',
    tags,
    body: { schema: g.bodies.workspaceCreate, required: true },
    authorize: ({ body, claims }) => checkCreateWorkspace(claims, body.id),
    async handler({ body }) {
      const { record, created } = await getOrCreateWorkspace(ctx, body);
      return { status: created ? g.createdStatus : 200, body: presentWorkspace(record) };
    },
  });

  route({
    method: 'POST',
    url: '/workspaces/list',
    scope: { kind: 'admin' },
    summary: 'List workspaces',
    tags,
    query: g.listPaging,
    body: { schema: filtersBody, required: false },
    async handler({ query, body }) {
      const page = await listWorkspaces(ctx, listQuery(query, body, g.rules));
      return { status: 200, body: presentPage(page, query.page, query.size, presentWorkspace) };
    },
  });

  // an addition of Engram's (docs/portability.md): the workspace as `engram export` writes it
  route({
    method: 'GET',
    url: '/workspaces/:workspace_id/export',
    generations: ['v3'],
    scope: { kind: 'workspace' },
    summary: 'Export the workspace as NDJSON (docs/portability.md)',
    tags,
    query: { with_vectors: optional(bool(), () => false) },
    async handler({ params, query }) {
      if ((await ctx.store.workspaces.find(params.workspace_id)) === undefined) throw notFound(`Workspace ${params.workspace_id} not found`);
      const stream = exportText(ctx.store, { workspaceIds: [params.workspace_id], withVectors: query.with_vectors, now: ctx.now() });
      return {
        status: 200,
        stream,
        streamType: 'application/x-ndjson',
        headers: { 'content-disposition': `attachment; filename="${encodeURIComponent(params.workspace_id)}.ndjson"` },
      };
    },
  });

  route({
    method: 'PUT',
    url: '/workspaces/:workspace_id',
    scope: { kind: 'workspace' },
    summary: 'Update a workspace (created when missing)',
    tags,
    body: { schema: g.bodies.workspaceUpdate, required: true },
    pathIds: ['workspace_id'],
    async handler({ params, body }) {
      const workspace = await updateWorkspace(ctx, params.workspace_id, body);
      return { status: 200, body: presentWorkspace(workspace) };
    },
  });

  route({
    method: 'DELETE',
    url: '/workspaces/:workspace_id',
    scope: { kind: 'workspace' },
    summary: 'Delete a workspace and everything in it',
    tags,
    async handler({ params }) {
      const deleted = await deleteWorkspace(ctx, params.workspace_id, {
        refuseWithActiveSessions: g.workspaceDeletion.isAccepted,
        notFoundMessage: g.workspaceDeletion.notFoundMessage(params.workspace_id),
      });
      return g.workspaceDeletion.isAccepted
        ? { status: 202, body: { message: 'Workspace deletion accepted' } }
        : { status: 200, body: presentWorkspace(deleted) };
    },
  });
}
