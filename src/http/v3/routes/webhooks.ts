import {
  deleteWebhookEndpoint,
  emitTestWebhookEvent,
  getOrCreateWebhookEndpoint,
  listWebhookEndpoints,
} from '../../../domain/webhooks/webhooks.js';
import { paged } from '../../shared/fields.js';
import { presentPage, presentWebhookEndpoint } from '../../shared/present.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { WebhookEndpointCreate } from '../schemas.js';

export function mountWebhookRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['webhooks'];

  route({
    method: 'POST',
    url: '/v3/workspaces/:workspace_id/webhooks',
    scope: { kind: 'workspace' },
    summary: 'Get or create a webhook endpoint',
    tags,
    body: { schema: WebhookEndpointCreate, required: true },
    async handler({ params, body }) {
      const { record, created } = await getOrCreateWebhookEndpoint(ctx, params.workspace_id, body.url);
      return { status: created ? 201 : 200, body: presentWebhookEndpoint(record) };
    },
  });

  route({
    method: 'GET',
    url: '/v3/workspaces/:workspace_id/webhooks',
    scope: { kind: 'workspace' },
    summary: 'List webhook endpoints',
    tags,
    query: paged,
    async handler({ params, query }) {
      const page = await listWebhookEndpoints(ctx, params.workspace_id, query.page, query.size);
      return { status: 200, body: presentPage(page, query.page, query.size, presentWebhookEndpoint) };
    },
  });

  // seed 4.5: 204 with no body; unknown or another workspace's endpoint is a 404
  route({
    method: 'DELETE',
    url: '/v3/workspaces/:workspace_id/webhooks/:endpoint_id',
    scope: { kind: 'workspace' },
    summary: 'Delete a webhook endpoint',
    tags,
    async handler({ params }) {
      await deleteWebhookEndpoint(ctx, params.workspace_id, params.endpoint_id);
      return { status: 204 };
    },
  });

  route({
    method: 'GET',
    url: '/v3/workspaces/:workspace_id/webhooks/test',
    scope: { kind: 'workspace' },
    summary: 'Send a test.event to every webhook endpoint of the workspace',
    tags,
    async handler({ params }) {
      // as the reference: failures to queue the event are not the caller's problem
      await emitTestWebhookEvent(ctx, params.workspace_id).catch(() => undefined);
      return { status: 200, body: null };
    },
  });
}
