import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker } from '../../../src/runtime/runtime.js';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';
import { startWebhookSink } from '../../support/webhook-sink.js';
import { V1_ID, makeMessages, makeMetamessage, makeScope, makeSession, type V1Scope } from './fixtures.js';

/*
 * One store (contract-v1 §5, issue 3 item 2): an app is a workspace (name = workspace id), a user
 * is a peer (name = peer id), a session is a session with the user as member, and a message with
 * is_user=false is sent by the workspace's assistant peer `v1-assistant`.
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const ASSISTANT = 'v1-assistant';
const ids = (page: { items: { id: string }[] }) => page.items.map((item) => item.id);

describe('written through v1, read through v3', () => {
  it('the app is a workspace and the user a peer, with their metadata', async () => {
    const scope = await makeScope(api);
    await api.put(`/v1/apps/${scope.app.id}`, { metadata: { plan: 'v1' } });
    await api.put(scope.base, { metadata: { age: 7 } });

    const workspace = await api.post('/v3/workspaces', { id: scope.app.name });
    expect(workspace.status).toBe(200); // it exists already
    expect(workspace.body).toMatchObject({ id: scope.app.name, metadata: { plan: 'v1' } });
    const peers = await api.post(`/v3/workspaces/${scope.app.name}/peers/list`, {});
    expect(peers.body.items).toEqual([expect.objectContaining({ id: scope.user.name, workspace_id: scope.app.name, metadata: { age: 7 } })]);
  });

  it('the session, its member and its messages (is_user=false from the assistant peer)', async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope, { topic: 'shared' });
    const made = await makeMessages(api, scope, session.id, [
      { content: 'Hello there', is_user: true, metadata: { n: 1 } },
      { content: 'Hi! How can I help?', is_user: false },
    ]);
    const ws = scope.app.name;

    const sessions = await api.post(`/v3/workspaces/${ws}/sessions/list`, {});
    expect(sessions.body.items).toEqual([expect.objectContaining({ id: session.id, is_active: true, metadata: { topic: 'shared' } })]);
    const members = await api.get(`/v3/workspaces/${ws}/sessions/${session.id}/peers`);
    expect(ids(members.body).sort()).toEqual([scope.user.name, ASSISTANT].sort());

    const messages = await api.post(`/v3/workspaces/${ws}/sessions/${session.id}/messages/list`, {});
    expect(messages.body.items.map((m: { id: string; peer_id: string; content: string; metadata: object }) => [m.id, m.peer_id, m.content, m.metadata])).toEqual([
      [made[0].id, scope.user.name, 'Hello there', { n: 1 }],
      [made[1].id, ASSISTANT, 'Hi! How can I help?', {}],
    ]);
    // token counts are those of v2/v3 messages (o200k_base)
    expect(messages.body.items.every((m: { token_count: number }) => m.token_count > 0)).toBe(true);
    // the assistant is a peer of the workspace, but not a v1 user
    const peers = await api.post(`/v3/workspaces/${ws}/peers/list`, {});
    expect(ids(peers.body).sort()).toEqual([scope.user.name, ASSISTANT].sort());
    expect((await api.post(`/v1/apps/${scope.app.id}/users/list`, {})).body.total).toBe(1);
  });

  it('v1 deletes are v3 deactivations; metadata updates show on both sides', async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope);
    await api.delete(`${scope.base}/sessions/${session.id}`);
    expect((await api.post(`/v3/workspaces/${scope.app.name}/sessions/list`, {})).body.total).toBe(0);

    const live = await makeSession(api, scope);
    await api.put(`/v3/workspaces/${scope.app.name}/sessions/${live.id}`, { metadata: { from: 'v3' } });
    expect((await api.get(`${scope.base}/sessions?session_id=${live.id}`)).body.metadata).toEqual({ from: 'v3' });
  });
});

describe('written through v3, read through v1', () => {
  async function v3World() {
    const ws = uniqueId('ws3');
    await api.post('/v3/workspaces', { id: ws, metadata: { from: 'v3' } });
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice', metadata: { role: 'user' } });
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 'chat', peers: { alice: {}, bob: {} }, metadata: { s: 1 } });
    const created = await api.post(`/v3/workspaces/${ws}/sessions/chat/messages`, {
      messages: [
        { peer_id: 'alice', content: 'from alice' },
        { peer_id: 'bob', content: 'from bob' },
      ],
    });
    expect(created.status).toBe(201);
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 'bob-only', peers: { bob: {} } });
    const app = (await api.get(`/v1/apps/name/${ws}`)).body;
    const userOf = async (name: string): Promise<V1Scope> => {
      const user = (await api.get(`/v1/apps/${app.id}/users/name/${name}`)).body;
      return { app, user, base: `/v1/apps/${app.id}/users/${user.id}` };
    };
    return { ws, app, alice: await userOf('alice'), bob: await userOf('bob'), messages: created.body };
  }

  it('the workspace is an app and its peers are users, with stable v1 ids', async () => {
    const { ws, app, alice } = await v3World();
    expect(app).toMatchObject({ name: ws, metadata: { from: 'v3' } });
    expect(app.id).toMatch(V1_ID);
    expect(alice.user).toMatchObject({ name: 'alice', app_id: app.id, metadata: { role: 'user' } });
    expect(alice.user.id).toMatch(V1_ID);
    expect((await api.get(`/v1/apps/get_or_create/${ws}`)).body).toEqual(app);
    expect((await api.get(`/v1/apps/${app.id}/users/get_or_create/alice`)).body).toEqual(alice.user);
    const users = await api.post(`/v1/apps/${app.id}/users/list`, {});
    expect(users.body.items.map((u: { name: string }) => u.name).sort()).toEqual(['alice', 'bob']);
  });

  it("a member's sessions are that user's sessions, addressed by a 21-character v1 id", async () => {
    const { alice, bob } = await v3World();
    const aliceSessions = (await api.post(`${alice.base}/sessions/list`, {})).body;
    expect(aliceSessions.total).toBe(1);
    const [chat] = aliceSessions.items;
    expect(chat).toMatchObject({ is_active: true, user_id: alice.user.id, app_id: alice.app.id, metadata: { s: 1 } });
    expect(chat.id).toMatch(V1_ID);
    expect(chat.id).not.toBe('chat');
    expect((await api.post(`${bob.base}/sessions/list`, {})).body.total).toBe(2);
    expect((await api.get(`${bob.base}/sessions?session_id=${chat.id}`)).body).toMatchObject({ id: chat.id, user_id: bob.user.id });
  });

  it("messages read from each member's side: is_user is true for that user's own messages", async () => {
    const { alice, bob, messages } = await v3World();
    const chat = (await api.post(`${alice.base}/sessions/list`, {})).body.items[0].id;
    const asAlice = (await api.post(`${alice.base}/sessions/${chat}/messages/list`, {})).body.items;
    expect(asAlice.map((m: { id: string; is_user: boolean; session_id: string }) => [m.id, m.is_user, m.session_id])).toEqual([
      [messages[0].id, true, chat],
      [messages[1].id, false, chat],
    ]);
    const asBob = (await api.post(`${bob.base}/sessions/${chat}/messages/list`, {})).body.items;
    expect(asBob.map((m: { is_user: boolean; user_id: string }) => [m.is_user, m.user_id])).toEqual([
      [false, bob.user.id],
      [true, bob.user.id],
    ]);
    // a v1 message in the v3 session reaches v3 as a message of the user's peer
    const [reply] = await makeMessages(api, alice, chat, [{ content: 'v1 reply', is_user: true }]);
    const v3 = await api.get(`/v3/workspaces/${alice.app.name}/sessions/chat/messages/${reply.id}`);
    expect(v3.body).toMatchObject({ peer_id: 'alice', session_id: 'chat', content: 'v1 reply' });
  });

  it('a metamessage links to a v3 session and message; sessions without the user stay out of reach', async () => {
    const { alice, bob, messages } = await v3World();
    const chat = (await api.post(`${alice.base}/sessions/list`, {})).body.items[0].id;
    const meta = await makeMetamessage(api, alice, { session_id: chat, message_id: messages[1].id });
    expect(meta).toMatchObject({ session_id: chat, message_id: messages[1].id, user_id: alice.user.id });

    const bobOnly = (await api.post(`${bob.base}/sessions/list`, {})).body.items.find((s: { id: string }) => s.id !== chat);
    expect((await api.get(`${alice.base}/sessions?session_id=${bobOnly.id}`)).status).toBe(404);
    expect((await api.put(`${alice.base}/metamessages/${meta.id}`, { session_id: bobOnly.id })).status).toBe(404);
  });

  it('deleting the workspace through v3 removes its v1 records, metamessages included', async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope);
    const [message] = await makeMessages(api, scope, session.id, [{ content: 'x', is_user: false }]);
    const meta = await makeMetamessage(api, scope, { session_id: session.id, message_id: message.id });
    await api.delete(`${scope.base}/sessions/${session.id}`);
    const deleted = await api.delete(`/v3/workspaces/${scope.app.name}`);
    expect(deleted.status, deleted.text).toBeLessThan(300);
    expect((await api.get(`/v1/apps?app_id=${scope.app.id}`)).status).toBe(404);
    expect((await api.get(`${scope.base}/metamessages/${meta.id}`)).status).toBe(404);
  });
});

describe('webhooks', () => {
  it('a message written through v1 sends the same message.created event as a v3 write', async () => {
    const hooked = await buildTestApp({ WEBHOOK_SECRET: 'v1-webhook-secret', WEBHOOK_ALLOW_PRIVATE_URLS: 'true', WORKER_POLL_MS: '20' }, { ownDatabase: true });
    const sink = await startWebhookSink();
    const worker = createWorker(hooked.config, hooked.database, { info() {}, warn() {}, error() {} });
    worker.start();
    try {
      const scope = await makeScope(hooked);
      expect((await hooked.post(`/v3/workspaces/${scope.app.name}/webhooks`, { url: sink.url })).status).toBe(201);
      const session = await makeSession(hooked, scope);
      const made = await makeMessages(hooked, scope, session.id, [
        { content: 'from the user', is_user: true },
        { content: 'from the assistant', is_user: false },
      ]);
      await sink.waitFor(2);
      const events = sink.received.map((r) => JSON.parse(r.body));
      expect(events.map((e) => [e.type, e.data])).toEqual([
        ['message.created', { message_id: made[0].id, peer_id: scope.user.name, session_id: session.id, workspace_id: scope.app.name }],
        ['message.created', { message_id: made[1].id, peer_id: ASSISTANT, session_id: session.id, workspace_id: scope.app.name }],
      ]);
    } finally {
      await worker.stop(1000);
      await sink.close();
      await hooked.close();
    }
  });
});
