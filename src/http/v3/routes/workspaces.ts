import { deleteWorkspace, getOrCreateWorkspace, listWorkspaces, updateWorkspace } from '../../../domain/workspaces/workspaces.js';
import { checkCreateWorkspace } from '../../shared/auth.js';
import { pagedReversible } from '../../shared/fields.js';
import { presentPage, presentWorkspace } from '../../shared/present.js';
import { checkPathId } from '../../shared/resource-schemas.js';
import { listQuery, type HttpDeps, type RouteDefiner } from '../../shared/route.js';
import { ListFilters, WorkspaceCreate, WorkspaceUpdate } from '../schemas.js';

export function mountWorkspaceRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['workspaces'];

  route({
    method: 'POST',
    url: '/v3/workspaces',
    scope: { kind: 'self' },
    summary: 'Get or create a workspace',
    tags,
    body: { schema: WorkspaceCreate, required: true },
    async handler({ body, claims }) {
      checkCreateWorkspace(claims, body.id);
      const { record, created } = await getOrCreateWorkspace(ctx, body);
      return { status: created ? 201 : 200, body: presentWorkspace(record) };
    },
  });

  route({
    method: 'POST',
    url: '/v3/workspaces/list',
    scope: { kind: 'admin' },
    summary: 'List workspaces',
    tags,
    query: pagedReversible,
    body: { schema: ListFilters, required: false },
    async handler({ query, body }) {
      const page = await listWorkspaces(ctx, listQuery(query, body, 'v3'));
      return { status: 200, body: presentPage(page, query.page, query.size, presentWorkspace) };
    },
  });

  route({
    method: 'PUT',
    url: '/v3/workspaces/:workspace_id',
    scope: { kind: 'workspace' },
    summary: 'Update a workspace (created when missing)',
    tags,
    body: { schema: WorkspaceUpdate, required: true },
    async handler({ params, body }) {
      const invalid = checkPathId('v3', params.workspace_id, 'workspace_id');
      if (invalid !== undefined) return { status: 422, body: invalid };
      const workspace = await updateWorkspace(ctx, params.workspace_id, body);
      return { status: 200, body: presentWorkspace(workspace) };
    },
  });

  route({
    method: 'DELETE',
    url: '/v3/workspaces/:workspace_id',
    scope: { kind: 'workspace' },
    summary: 'Delete a workspace and everything in it',
    tags,
    async handler({ params }) {
      await deleteWorkspace(ctx, params.workspace_id, {
        refuseWithActiveSessions: true,
        notFoundMessage: `Workspace ${params.workspace_id} not found`,
      });
      return { status: 202, body: { message: 'Workspace deletion accepted' } };
    },
  });
}
