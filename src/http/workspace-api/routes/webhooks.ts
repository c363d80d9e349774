import {
  deleteWebhookEndpoint,
  emitTestWebhookEvent,
  getOrCreateWebhookEndpoint,
  listWebhookEndpoints,
} from '../../../domain/webhooks/webhooks.js';
import { AuthError, type Claims, type RouteScope } from '../../shared/auth.js';
import { paged } from '../../shared/fields.js';
import { presentPage, presentWebhookEndpoint } from '../../shared/present.js';
import type { WorkspaceApi } from '../define-route.js';

/** v2 webhook routes authorize themselves: a key's workspace, if any, must be the path's. */
function checkKeyWorkspace({ claims, params }: { claims: Claims; params: Record<string, string> }): void {
  if (!claims.isAdmin && claims.workspaceId !== undefined && claims.workspaceId !== params.workspace_id) {
    throw new AuthError('Unauthorized access to resource');
  }
}

export function mountWebhookRoutes({ route, g, deps: { ctx } }: WorkspaceApi): void {
  const tags = ['webhooks'];
  const access: { scope: RouteScope; authorize?: typeof checkKeyWorkspace } = g.isWebhookSelfAuthorizing
    ? { scope: { kind: 'self' }, authorize: checkKeyWorkspace }
    : { scope: { kind: 'workspace' } };

  route({
    method: 'POST',
    url: '/workspaces/:workspace_id/webhooks',
    ...access,
    summary: 'Get or create a webhook endpoint',
    tags,
    body: { schema: g.bodies.webhookCreate, required: true },
    async handler({ params, body }) {
      const { record, created } = await getOrCreateWebhookEndpoint(ctx, params.workspace_id, body.url);
      return { status: created ? g.createdStatus : 200, body: presentWebhookEndpoint(record) };
    },
  });

  route({
    method: 'GET',
    url: '/workspaces/:workspace_id/webhooks',
    ...access,
    summary: 'List webhook endpoints',
    tags,
    query: paged,
    async handler({ params, query }) {
      const page = await listWebhookEndpoints(ctx, params.workspace_id, query.page, query.size);
      return { status: 200, body: presentPage(page, query.page, query.size, presentWebhookEndpoint) };
    },
  });

  // seed 4.5: unknown or another workspace's endpoint is a 404
  route({
    method: 'DELETE',
    url: '/workspaces/:workspace_id/webhooks/:endpoint_id',
    ...access,
    summary: 'Delete a webhook endpoint',
    tags,
    async handler({ params }) {
      await deleteWebhookEndpoint(ctx, params.workspace_id, params.endpoint_id);
      return g.webhookDeleted;
    },
  });

  route({
    method: 'GET',
    url: '/workspaces/:workspace_id/webhooks/test',
    ...access,
    summary: 'Send a test.event to every webhook endpoint of the workspace',
    tags,
    async handler({ params, log }) {
      // as the reference: failures to queue the event are not the caller's problem, but are logged
      await emitTestWebhookEvent(ctx, params.workspace_id).catch((error: unknown) => log.error({ err: error }, 'test.event not queued'));
      return { status: 200, body: null };
    },
  });
}
