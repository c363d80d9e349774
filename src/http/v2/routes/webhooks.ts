import {
  deleteWebhookEndpoint,
  emitTestWebhookEvent,
  getOrCreateWebhookEndpoint,
  listWebhookEndpoints,
} from '../../../domain/webhooks/webhooks.js';
import { AuthError, type Claims } from '../../shared/auth.js';
import { paged } from '../../shared/fields.js';
import { presentPage, presentWebhookEndpoint } from '../../shared/present.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { WebhookEndpointCreate } from '../schemas.js';

/** v2 webhook routes authorize themselves: a token's workspace, if any, must be the path's. */
function checkWorkspace(claims: Claims, workspaceId: string): void {
  if (!claims.isAdmin && claims.workspaceId !== undefined && claims.workspaceId !== workspaceId) {
    throw new AuthError('Unauthorized access to resource');
  }
}

export function mountWebhookRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['webhooks'];

  route({
    method: 'POST',
    url: '/v2/workspaces/:workspace_id/webhooks',
    scope: { kind: 'self' },
    summary: 'Get or create a webhook endpoint',
    tags,
    body: { schema: WebhookEndpointCreate, required: true },
    async handler({ params, body, claims }) {
      checkWorkspace(claims, params.workspace_id);
      const { record } = await getOrCreateWebhookEndpoint(ctx, params.workspace_id, body.url);
      return { status: 200, body: presentWebhookEndpoint(record) };
    },
  });

  route({
    method: 'GET',
    url: '/v2/workspaces/:workspace_id/webhooks',
    scope: { kind: 'self' },
    summary: 'List webhook endpoints',
    tags,
    query: paged,
    async handler({ params, query, claims }) {
      checkWorkspace(claims, params.workspace_id);
      const page = await listWebhookEndpoints(ctx, params.workspace_id, query.page, query.size);
      return { status: 200, body: presentPage(page, query.page, query.size, presentWebhookEndpoint) };
    },
  });

  // v2 answers 200 with the JSON body `null` where v3 answers 204
  route({
    method: 'DELETE',
    url: '/v2/workspaces/:workspace_id/webhooks/:endpoint_id',
    scope: { kind: 'self' },
    summary: 'Delete a webhook endpoint',
    tags,
    async handler({ params, claims }) {
      checkWorkspace(claims, params.workspace_id);
      await deleteWebhookEndpoint(ctx, params.workspace_id, params.endpoint_id);
      return { status: 200, body: null };
    },
  });

  route({
    method: 'GET',
    url: '/v2/workspaces/:workspace_id/webhooks/test',
    scope: { kind: 'self' },
    summary: 'Send a test.event to every webhook endpoint of the workspace',
    tags,
    async handler({ params, claims }) {
      checkWorkspace(claims, params.workspace_id);
      // as the reference: failures to queue the event are not the caller's problem
      await emitTestWebhookEvent(ctx, params.workspace_id).catch(() => undefined);
      return { status: 200, body: null };
    },
  });
}
