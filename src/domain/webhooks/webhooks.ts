import type { Created, Page, WebhookEndpointRecord } from '../../storage/store.js';
import { inTransaction, type DomainContext } from '../context.js';
import { conflict, notFound } from '../errors.js';
import { emitWebhookEvents } from '../follow-ups.js';

/**
 * Returns the workspace's endpoint with this exact URL, or creates one. The workspace must
 * exist, and a workspace holds at most `limits.webhookEndpoints` endpoints (contract §7.6).
 */
export function getOrCreateWebhookEndpoint(
  ctx: DomainContext,
  workspaceId: string,
  url: string,
): Promise<Created<WebhookEndpointRecord>> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    // locked, so that concurrent creates in the workspace take turns: each counts the endpoints
    // the others committed (on PostgreSQL two could count 9 of 10 and both insert)
    if ((await store.workspaces.findForWrite(workspaceId)) === undefined) throw notFound(`Workspace ${workspaceId} not found`);
    const existing = await store.webhooks.findByUrl(workspaceId, url);
    if (existing !== undefined) return { record: existing, created: false };
    const limit = ctx.limits.webhookEndpoints;
    if ((await store.webhooks.count(workspaceId)) >= limit) {
      throw conflict(`Maximum number of webhook endpoints (${limit}) reached for this workspace.`);
    }
    const record = { id: ctx.newId(), workspaceId, url, createdAt: ctx.now() };
    const inserted = await store.webhooks.insert(record);
    if (inserted !== undefined) return { record: inserted, created: true };
    // A concurrent request registered the same URL first.
    const raced = await store.webhooks.findByUrl(workspaceId, url);
    if (raced === undefined) throw conflict(`Unable to create webhook endpoint for ${url}`);
    return { record: raced, created: false };
  });
}

export function listWebhookEndpoints(
  ctx: DomainContext,
  workspaceId: string,
  page: number,
  size: number,
): Promise<Page<WebhookEndpointRecord>> {
  return ctx.store.webhooks.list(workspaceId, page, size);
}

/** Seed 4.5: deletes the endpoint; unknown or another workspace's id is a 404. */
export async function deleteWebhookEndpoint(ctx: DomainContext, workspaceId: string, endpointId: string): Promise<void> {
  if (!(await ctx.store.webhooks.delete(workspaceId, endpointId))) {
    throw notFound(`Webhook endpoint ${endpointId} not found for workspace ${workspaceId}`);
  }
}

/** Queues a `test.event` for every endpoint of the workspace (contract §7.6). */
export async function emitTestWebhookEvent(ctx: DomainContext, workspaceId: string): Promise<void> {
  await inTransaction(ctx, (ctx) =>
    emitWebhookEvents(ctx, workspaceId, [{ type: 'test.event', data: { workspace_id: workspaceId } }], ctx.now()),
  );
}
