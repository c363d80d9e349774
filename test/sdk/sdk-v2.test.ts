/*
 * The official TypeScript SDK 1.5.0 (`honcho-sdk-v2`, an alias of `@honcho-ai/sdk@1.5.0`, built on
 * the Stainless client `@honcho-ai/core`, talks to /v2) against the real server on an ephemeral
 * port. The SDK is used unmodified; the server records every exchange, so a failure names the exact
 * request the SDK made and what it got back.
 *
 * The high-level v2 SDK has no calls for webhooks or session cloning; both are reached through
 * `honcho.core`, the Stainless client the SDK exposes for "functionality not exposed through this
 * SDK". Its list calls take no page size, so multi-page listing needs more than the default 50.
 *
 * Not covered here (features not built yet): messages, search, chat, context, working
 * representation, cards, deriver status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Honcho, SessionPeerConfig } from 'honcho-sdk-v2';
import { mintToken } from '../../src/http/shared/auth.js';
import { describeExchange, expectAllOk, routesCalled, startSdkServer, type Exchange, type SdkServer } from '../support/sdk-server.js';
import { uniqueId } from '../support/test-app.js';

let server: SdkServer;
beforeAll(async () => {
  server = await startSdkServer();
});
afterAll(async () => {
  // SDK_TRACE=1 prints every exchange the SDK made, for reports and debugging.
  if (process.env.SDK_TRACE) console.log(server.exchanges.map(describeExchange).join('\n'));
  await server?.close();
});

/**
 * The constructor fires `POST /v2/workspaces` without awaiting it; `getMetadata()` performs the
 * same get-or-create and waits for it. Returning once the server has answered both keeps the
 * constructor's request out of the exchanges a test inspects afterwards.
 */
async function client(workspaceId: string, apiKey?: string, target = server): Promise<Honcho> {
  // maxRetries 0: a 5xx must surface as the error it is, not as three identical requests.
  const honcho = new Honcho({ baseURL: target.baseURL, workspaceId, apiKey, maxRetries: 0 });
  await honcho.getMetadata();
  await settled(target, (e) => e.path === '/v2/workspaces' && isBodyWithId(e.requestBody, workspaceId), 2);
  return honcho;
}

function isBodyWithId(body: unknown, id: string): boolean {
  return typeof body === 'object' && body !== null && (body as { id?: unknown }).id === id;
}

/** Waits until the server has answered `count` exchanges matching `match` (at most 2 s). */
async function settled(target: SdkServer, match: (e: Exchange) => boolean, count: number): Promise<void> {
  for (let i = 0; i < 200 && target.exchanges.filter(match).length < count; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function ids<T extends { id: string }>(items: AsyncIterable<T>): Promise<string[]> {
  const out: string[] = [];
  for await (const item of items) out.push(item.id);
  return out;
}

describe('@honcho-ai/sdk 1.5.0 over /v2', () => {
  it('gets or creates the workspace and reads back its metadata', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk2');
    const honcho = await client(workspace);

    expect(await honcho.getMetadata()).toEqual({});
    await honcho.setMetadata({ plan: 'team', seats: 3, tags: ['a', 'b'] });
    expect(await honcho.getMetadata()).toEqual({ plan: 'team', seats: 3, tags: ['a', 'b'] });

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    // constructor + awaited get-or-create: both carry only the id
    expect(exchanges.slice(0, 2).map((e) => [e.method, e.path, e.requestBody])).toEqual([
      ['POST', '/v2/workspaces', { id: workspace }],
      ['POST', '/v2/workspaces', { id: workspace }],
    ]);
    expect(routesCalled(exchanges, { workspace_id: workspace })).toEqual(['POST /v2/workspaces', 'PUT /v2/workspaces/{workspace_id}']);
  });

  it('lists workspaces and deletes one', async () => {
    const workspace = uniqueId('sdk2');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;
    await (await honcho.session('kept-open')).addPeers('someone');

    // Other suites share the database, so the listing is narrowed to this test's workspace.
    expect(await honcho.getWorkspaces({ id: workspace })).toEqual([workspace]);
    // v2 deletes a workspace even with active sessions, and answers with the deleted workspace.
    expect(await honcho.deleteWorkspace(workspace)).toMatchObject({ id: workspace, metadata: {} });
    expect(await honcho.getWorkspaces({ id: workspace })).toEqual([]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(exchanges.find((e) => e.path === '/v2/workspaces/list')).toMatchObject({
      method: 'POST',
      query: '',
      requestBody: { filters: { id: workspace } },
    });
    expect(exchanges.find((e) => e.method === 'DELETE')).toMatchObject({ path: `/v2/workspaces/${workspace}`, status: 200 });
  });

  it('creates peers with metadata and lists them across pages in creation order', async () => {
    const workspace = uniqueId('sdk2');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;
    // 53 peers: the v2 SDK cannot ask for a page size, and the server's default is 50.
    const peerIds = Array.from({ length: 53 }, (_, i) => `peer-${String(i).padStart(2, '0')}`);
    for (const [i, id] of peerIds.entries()) {
      await honcho.peer(id, { metadata: { index: i, group: i % 2 === 0 ? 'even' : 'odd' } });
    }

    const page = await honcho.getPeers();
    expect([page.total, page.page, page.size, page.pages, page.length]).toEqual([53, 1, 50, 2, 50]);
    // (page.hasNextPage is not read: in SDK 1.5.0 that getter calls the Stainless page's
    // hasNextPage() detached from its object and throws a TypeError, whatever the server sends.)
    const listed = await ids(page);
    expect(listed).toEqual(peerIds);
    expect(new Set(listed).size).toBe(53);

    const second = await page.getNextPage();
    expect(second?.items.map((p) => p.id)).toEqual(peerIds.slice(50));

    const odd = await ids(await honcho.getPeers({ metadata: { group: 'odd' } }));
    expect(odd).toEqual(peerIds.filter((_, i) => i % 2 === 1));

    // Peer objects from a list carry no metadata in v2: read one back through the peer.
    expect(await (await honcho.getPeers()).get(7).getMetadata()).toEqual({ index: 7, group: 'odd' });

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const creates = exchanges.filter((e) => e.path === `/v2/workspaces/${workspace}/peers`);
    expect(creates[0].requestBody).toEqual({ id: 'peer-00', metadata: { index: 0, group: 'even' } });
    const lists = exchanges.filter((e) => e.path === `/v2/workspaces/${workspace}/peers/list`);
    expect(lists.slice(0, 3).map((e) => [e.query, e.requestBody])).toEqual([
      ['', {}],
      ['page=2', {}],
      ['page=2', {}],
    ]);
    expect(lists[3].requestBody).toEqual({ filters: { metadata: { group: 'odd' } } });
  });

  it('updates peer metadata and configuration', async () => {
    const workspace = uniqueId('sdk2');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;

    const alice = await honcho.peer('alice', { metadata: { role: 'user' }, config: { observe_me: false } });
    expect(await alice.getMetadata()).toEqual({ role: 'user' });
    expect(await alice.getPeerConfig()).toEqual({ observe_me: false });

    await alice.setMetadata({ role: 'admin', level: 2 });
    expect(await alice.getMetadata()).toEqual({ role: 'admin', level: 2 });
    expect(await alice.getPeerConfig()).toEqual({ observe_me: false }); // metadata alone changed
    await alice.setPeerConfig({ observe_me: true });
    expect(await alice.getPeerConfig()).toEqual({ observe_me: true });
    expect(await alice.getMetadata()).toEqual({ role: 'admin', level: 2 }); // configuration alone changed

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(routesCalled(exchanges, { workspace_id: workspace, peer_id: 'alice' })).toEqual([
      'POST /v2/workspaces/{workspace_id}/peers',
      'PUT /v2/workspaces/{workspace_id}/peers/{peer_id}',
    ]);
  });

  it('manages session peers with session-level configuration', async () => {
    const workspace = uniqueId('sdk2');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;

    const session = await honcho.session('chat-1', { metadata: { topic: 'onboarding' } });
    expect(await session.getMetadata()).toEqual({ topic: 'onboarding' });

    const bob = await honcho.peer('bob');
    await session.addPeers([
      ['alice', new SessionPeerConfig(true, true)],
      [bob, new SessionPeerConfig(false, false)],
      'carol',
    ]);
    expect((await session.getPeers()).map((p) => p.id).sort()).toEqual(['alice', 'bob', 'carol']);
    expect(await session.getPeerConfig('alice')).toEqual({ observe_me: true, observe_others: true });
    expect(await session.getPeerConfig(bob)).toEqual({ observe_me: false, observe_others: false });

    await session.setPeerConfig('carol', new SessionPeerConfig(false, true));
    expect(await session.getPeerConfig('carol')).toEqual({ observe_me: false, observe_others: true });

    await session.removePeers(bob);
    expect((await session.getPeers()).map((p) => p.id).sort()).toEqual(['alice', 'carol']);

    await session.setPeers([['dave', new SessionPeerConfig(null, true)], 'alice']);
    expect((await session.getPeers()).map((p) => p.id).sort()).toEqual(['alice', 'dave']);
    expect(await session.getPeerConfig('dave')).toMatchObject({ observe_others: true });

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const add = exchanges.find((e) => e.method === 'POST' && e.path === `/v2/workspaces/${workspace}/sessions/chat-1/peers`);
    expect(add?.requestBody).toEqual({
      alice: { observe_me: true, observe_others: true },
      bob: { observe_me: false, observe_others: false },
      carol: {},
    });
    const remove = exchanges.find((e) => e.method === 'DELETE' && e.path === `/v2/workspaces/${workspace}/sessions/chat-1/peers`);
    expect(remove?.requestBody).toEqual(['bob']);
    expect(
      routesCalled(exchanges, { workspace_id: workspace, session_id: 'chat-1', peer_id: ['alice', 'bob', 'carol', 'dave'] }),
    ).toEqual([
      'POST /v2/workspaces/{workspace_id}/sessions',
      'POST /v2/workspaces/{workspace_id}/sessions/{session_id}/peers',
      'GET /v2/workspaces/{workspace_id}/sessions/{session_id}/peers',
      'GET /v2/workspaces/{workspace_id}/sessions/{session_id}/peers/{peer_id}/config',
      'POST /v2/workspaces/{workspace_id}/sessions/{session_id}/peers/{peer_id}/config',
      'DELETE /v2/workspaces/{workspace_id}/sessions/{session_id}/peers',
      'PUT /v2/workspaces/{workspace_id}/sessions/{session_id}/peers',
    ]);
  });

  it("lists a peer's sessions, left and deleted ones included", async () => {
    const workspace = uniqueId('sdk2');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;

    const sessionIds = ['s-1', 's-2', 's-3', 's-4'];
    for (const id of sessionIds) await (await honcho.session(id)).addPeers(['erin', 'frank']);
    await (await honcho.session('s-other')).addPeers('frank');

    const erin = await honcho.peer('erin');
    expect(await ids(await erin.getSessions())).toEqual(sessionIds);

    await (await honcho.session('s-2')).removePeers('erin');
    await (await honcho.session('s-3')).delete();
    expect(await ids(await erin.getSessions())).toEqual(sessionIds);
    expect(await ids(await (await honcho.peer('frank')).getSessions())).toEqual([...sessionIds, 's-other']);
    // the workspace's session list shows active sessions only
    expect(await ids(await honcho.getSessions())).toEqual(['s-1', 's-2', 's-4', 's-other']);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(exchanges.find((e) => e.path === `/v2/workspaces/${workspace}/peers/erin/sessions`)).toMatchObject({
      method: 'POST',
      query: '',
      requestBody: {},
    });
  });

  it('updates, clones (through honcho.core) and deletes a session', async () => {
    const workspace = uniqueId('sdk2');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;

    const session = await honcho.session('main', { metadata: { v: 1 }, config: { custom: 'kept' } });
    await session.addPeers([['gina', new SessionPeerConfig(null, true)], 'hal']);
    await session.setMetadata({ v: 2, note: 'edited' });
    expect(await session.getMetadata()).toEqual({ v: 2, note: 'edited' });

    const clone = await honcho.core.workspaces.sessions.clone(workspace, 'main');
    expect(clone.id).not.toBe('main');
    expect(clone).toMatchObject({ workspace_id: workspace, is_active: true, metadata: { v: 2, note: 'edited' } });
    expect(clone.configuration).toMatchObject({ custom: 'kept' });
    const cloned = await honcho.session(clone.id);
    expect((await cloned.getPeers()).map((p) => p.id).sort()).toEqual(['gina', 'hal']);
    expect(await cloned.getPeerConfig('gina')).toMatchObject({ observe_others: true });

    expect(await ids(await honcho.getSessions())).toEqual(['main', clone.id]);
    await session.delete();
    expect(await ids(await honcho.getSessions())).toEqual([clone.id]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(exchanges.find((e) => e.path.endsWith('/sessions/main/clone'))).toMatchObject({ method: 'GET', query: '', status: 200 });
    expect(exchanges.find((e) => e.method === 'DELETE' && e.path === `/v2/workspaces/${workspace}/sessions/main`)).toMatchObject({
      status: 202,
    });
  });

  it('creates, lists and deletes webhook endpoints (through honcho.core)', async () => {
    const workspace = uniqueId('sdk2');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;
    const webhooks = honcho.core.workspaces.webhooks;

    const first = await webhooks.getOrCreate(workspace, { url: 'https://example.com/hooks/one' });
    expect(first).toMatchObject({ workspace_id: workspace, url: 'https://example.com/hooks/one' });
    const again = await webhooks.getOrCreate(workspace, { url: 'https://example.com/hooks/one' });
    expect(again.id).toBe(first.id);
    const second = await webhooks.getOrCreate(workspace, { url: 'https://example.com/hooks/two' });

    const listed: string[] = [];
    for await (const endpoint of webhooks.list(workspace)) listed.push(endpoint.url);
    expect(listed.sort()).toEqual(['https://example.com/hooks/one', 'https://example.com/hooks/two']);

    await webhooks.delete(workspace, first.id);
    expect((await webhooks.list(workspace)).items.map((e) => e.id)).toEqual([second.id]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(routesCalled(exchanges, { workspace_id: workspace, endpoint_id: first.id })).toEqual([
      'POST /v2/workspaces/{workspace_id}/webhooks',
      'GET /v2/workspaces/{workspace_id}/webhooks',
      'DELETE /v2/workspaces/{workspace_id}/webhooks/{endpoint_id}',
    ]);
  });
});

describe('@honcho-ai/sdk 1.5.0 over /v2 with authentication on', () => {
  const secret = 'sdk-test-secret-of-reasonable-length';
  let authServer: SdkServer;
  beforeAll(async () => {
    authServer = await startSdkServer({ AUTH_USE_AUTH: 'true', AUTH_JWT_SECRET: secret });
  });
  afterAll(() => authServer?.close());

  it('works with a workspace-scoped key and refuses a key for another workspace', async () => {
    const workspace = uniqueId('sdk2');
    const key = mintToken(secret, { workspaceId: workspace });
    const honcho = await client(workspace, key, authServer);

    const peer = await honcho.peer('ivy', { metadata: { scoped: true } });
    expect(await peer.getMetadata()).toEqual({ scoped: true });
    const session = await honcho.session('room');
    await session.addPeers([['ivy', new SessionPeerConfig(null, true)]]);
    expect((await session.getPeers()).map((p) => p.id)).toEqual(['ivy']);
    expect(await session.getPeerConfig('ivy')).toMatchObject({ observe_others: true });
    expect(await ids(await honcho.getPeers())).toEqual(['ivy']);
    await honcho.setMetadata({ owner: 'ivy' });
    expect(await honcho.getMetadata()).toEqual({ owner: 'ivy' });
    expectAllOk(authServer.exchanges);

    // The constructor's unawaited get-or-create is refused too; with no handler of its own it
    // would be an unhandled rejection, so this test holds one while the request is in flight.
    const background: unknown[] = [];
    const onUnhandled = (reason: unknown) => background.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const mark = authServer.exchanges.length;
      const foreignKey = mintToken(secret, { workspaceId: uniqueId('other') });
      const foreign = new Honcho({ baseURL: authServer.baseURL, workspaceId: workspace, apiKey: foreignKey, maxRetries: 0 });
      const error = await foreign.getMetadata().catch((e: unknown) => e);
      await settled(authServer, (e) => e.status === 401, 2);
      for (let i = 0; i < 100 && background.length === 0; i++) await new Promise((r) => setTimeout(r, 10));

      for (const refused of [error, background[0]]) {
        expect((refused as Error).constructor.name).toBe('AuthenticationError');
        expect(refused).toMatchObject({ status: 401, error: { detail: 'Unauthorized access to resource' } });
      }
      expect(background).toHaveLength(1);
      const refusedRequest = {
        method: 'POST',
        path: '/v2/workspaces',
        query: '',
        requestBody: { id: workspace },
        status: 401,
        responseBody: { detail: 'Unauthorized access to resource' },
      };
      expect(authServer.since(mark)).toEqual([refusedRequest, refusedRequest]);

      // A peer call, which skips the workspace get-or-create, is refused by the peer route.
      const peerError = await (await foreign.peer('ivy')).getMetadata().catch((e: unknown) => e);
      expect(peerError).toMatchObject({ status: 401, error: { detail: 'Unauthorized access to resource' } });
      expect((peerError as Error).constructor.name).toBe('AuthenticationError');
      expect(authServer.since(mark).slice(2)).toMatchObject([
        { method: 'POST', path: `/v2/workspaces/${workspace}/peers`, requestBody: { id: 'ivy' }, status: 401 },
      ]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
