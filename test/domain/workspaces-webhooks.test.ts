import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { createDomainContext, type DomainContext } from '../../src/domain/context.js';
import { getOrCreatePeer, updatePeer } from '../../src/domain/peers/peers.js';
import { addPeersToSession, deleteSession } from '../../src/domain/sessions/sessions.js';
import { deleteWebhookEndpoint, emitTestWebhookEvent, getOrCreateWebhookEndpoint, listWebhookEndpoints } from '../../src/domain/webhooks/webhooks.js';
import { deleteWorkspace, getOrCreateWorkspace, updateWorkspace } from '../../src/domain/workspaces/workspaces.js';
import { domainError } from '../support/domain-error.js';
import { TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

/*
 * Workspace, peer and webhook rules at the domain level, on the real store (SQLite, or
 * PostgreSQL with DATABASE_URL). The HTTP tests check the status codes and bodies.
 */

let database: Database;
let ctx: DomainContext;
beforeAll(async () => {
  database = await openDatabase(TEST_DATABASE_URL);
  ctx = createDomainContext(database.store, { sessionObservers: 10, webhookEndpoints: 2, jobMaxAttempts: 3 });
});
afterAll(() => database.driver.close());

describe('workspaces', () => {
  it('get-or-create leaves an existing workspace as it is; update merges configuration keys and replaces metadata', async () => {
    const id = uniqueId();
    expect((await getOrCreateWorkspace(ctx, { id, metadata: { a: 1 }, configuration: { x: 1, y: 1 } })).created).toBe(true);
    const again = await getOrCreateWorkspace(ctx, { id, metadata: { a: 2 }, configuration: {} });
    expect([again.created, again.record.metadata]).toEqual([false, { a: 1 }]);
    const updated = await updateWorkspace(ctx, id, { metadata: { b: 2 }, configuration: { y: 2 } });
    expect(updated.metadata).toEqual({ b: 2 });
    expect(updated.configuration).toEqual({ x: 1, y: 2 });
  });

  it('delete refuses while active sessions remain when the rules say so, and then deletes', async () => {
    const id = uniqueId();
    await addPeersToSession(ctx, id, 's', new Map([['alice', { observe_me: null, observe_others: null }]]));
    const rules = { refuseWithActiveSessions: true, notFoundMessage: 'Workspace not found' };
    const error = await domainError(deleteWorkspace(ctx, id, rules));
    expect([error.code, error.message]).toEqual(['conflict', `Cannot delete workspace '${id}': active session(s) remain. Delete all sessions first.`]);
    expect(await database.store.workspaces.find(id)).toBeDefined();
    await deleteSession(ctx, id, 's');
    expect((await deleteWorkspace(ctx, id, rules)).id).toBe(id);
    expect(await database.store.workspaces.find(id)).toBeUndefined();
    const gone = await domainError(deleteWorkspace(ctx, id, rules));
    expect([gone.code, gone.message]).toEqual(['not_found', 'Workspace not found']);
  });

  it('v2 rules delete a workspace with active sessions', async () => {
    const id = uniqueId();
    await addPeersToSession(ctx, id, 's', new Map([['alice', { observe_me: null, observe_others: null }]]));
    await deleteWorkspace(ctx, id, { refuseWithActiveSessions: false, notFoundMessage: 'x' });
    expect(await database.store.sessions.find(id, 's')).toBeUndefined();
  });
});

describe('peers', () => {
  it('get-or-create replaces non-null fields of an existing peer; update creates a missing one', async () => {
    const ws = uniqueId();
    const first = await getOrCreatePeer(ctx, ws, { id: 'p', metadata: { a: 1 }, configuration: { c: 1 } });
    expect(first.created).toBe(true);
    const second = await getOrCreatePeer(ctx, ws, { id: 'p', metadata: { a: 2 } });
    expect([second.created, second.record.metadata, second.record.configuration]).toEqual([false, { a: 2 }, { c: 1 }]);
    const made = await updatePeer(ctx, ws, 'q', { metadata: { m: true } });
    expect([made.id, made.metadata]).toEqual(['q', { m: true }]);
  });
});

describe('webhook endpoints', () => {
  it('need an existing workspace, return the same endpoint for the same URL, and stop at the limit', async () => {
    const ws = uniqueId();
    const missing = await domainError(getOrCreateWebhookEndpoint(ctx, ws, 'https://a.example/'));
    expect([missing.code, missing.message]).toEqual(['not_found', `Workspace ${ws} not found`]);

    await getOrCreateWorkspace(ctx, { id: ws, metadata: {}, configuration: {} });
    const a = await getOrCreateWebhookEndpoint(ctx, ws, 'https://a.example/');
    const again = await getOrCreateWebhookEndpoint(ctx, ws, 'https://a.example/');
    expect([a.created, again.created, again.record.id]).toEqual([true, false, a.record.id]);
    await getOrCreateWebhookEndpoint(ctx, ws, 'https://b.example/');
    const full = await domainError(getOrCreateWebhookEndpoint(ctx, ws, 'https://c.example/'));
    expect([full.code, full.message]).toEqual(['conflict', 'Maximum number of webhook endpoints (2) reached for this workspace.']);
    // a URL already registered is still answered at the limit
    expect((await getOrCreateWebhookEndpoint(ctx, ws, 'https://b.example/')).created).toBe(false);
    expect((await listWebhookEndpoints(ctx, ws, 1, 50)).total).toBe(2);
  });

  it('delete: another workspace cannot delete an endpoint, and a deleted one is not found', async () => {
    const ws = uniqueId();
    const other = uniqueId();
    for (const id of [ws, other]) await getOrCreateWorkspace(ctx, { id, metadata: {}, configuration: {} });
    const { record } = await getOrCreateWebhookEndpoint(ctx, ws, 'https://a.example/');
    const foreign = await domainError(deleteWebhookEndpoint(ctx, other, record.id));
    expect([foreign.code, foreign.message]).toEqual(['not_found', `Webhook endpoint ${record.id} not found for workspace ${other}`]);
    await deleteWebhookEndpoint(ctx, ws, record.id);
    expect((await listWebhookEndpoints(ctx, ws, 1, 50)).total).toBe(0);
    expect((await domainError(deleteWebhookEndpoint(ctx, ws, record.id))).code).toBe('not_found');
  });

  it('a test event queues one delivery per endpoint, naming the endpoint', async () => {
    const ws = uniqueId();
    await getOrCreateWorkspace(ctx, { id: ws, metadata: {}, configuration: {} });
    const ids = [];
    for (const url of ['https://a.example/', 'https://b.example/']) ids.push((await getOrCreateWebhookEndpoint(ctx, ws, url)).record.id);
    await emitTestWebhookEvent(ctx, ws);
    const rows = await database.driver.all<{ payload: unknown }>("SELECT payload FROM jobs WHERE workspace_id = ? AND kind = 'webhook.deliver' ORDER BY pk", [ws]);
    const payloads = rows.map((row) => (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload));
    expect(payloads.map((p) => p.endpointId)).toEqual(ids);
    expect(payloads.map((p) => p.events.map((e: { event: { type: string } }) => e.event.type))).toEqual([['test.event'], ['test.event']]);
    expect(payloads[0].events[0].event.data).toEqual({ workspace_id: ws });
    // not left for other files' workers on a shared database (the endpoints never answer)
    await database.driver.run('DELETE FROM jobs WHERE workspace_id = ?', [ws]);
  });
});
