/*
 * The official TypeScript SDK 2.x (`@honcho-ai/sdk`, talks to /v3) against the real server on an
 * ephemeral port. The SDK is used unmodified; the server records every exchange, so a failure
 * names the exact request the SDK made and what it got back.
 *
 * Not covered here (features not built yet): messages, search, chat, context, representation,
 * cards, conclusions, scopes, queue status, dreams. The v3 SDK has no webhook or key calls.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthenticationError, ConflictError, Honcho, type Peer, type Session } from '@honcho-ai/sdk';
import { mintToken } from '../../src/http/shared/auth.js';
import { describeExchange, expectAllOk, routesCalled, startSdkServer, type SdkServer } from '../support/sdk-server.js';
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

function client(workspaceId: string, apiKey?: string, baseURL = server.baseURL): Honcho {
  // maxRetries 0: a 5xx must surface as the error it is, not as three identical requests.
  return new Honcho({ baseURL, workspaceId, apiKey, maxRetries: 0 });
}

async function ids<T extends { id: string }>(items: AsyncIterable<T>): Promise<string[]> {
  const out: string[] = [];
  for await (const item of items) out.push(item.id);
  return out;
}

describe('@honcho-ai/sdk 2.x over /v3', () => {
  it('creates the workspace lazily and reads back its metadata and configuration', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3');
    const honcho = client(workspace);
    expect(server.exchanges.length).toBe(mark); // nothing is sent until the first call

    expect(await honcho.getMetadata()).toEqual({});
    await honcho.setMetadata({ plan: 'team', seats: 3, tags: ['a', 'b'] });
    expect(await honcho.getMetadata()).toEqual({ plan: 'team', seats: 3, tags: ['a', 'b'] });

    await honcho.setConfiguration({ reasoning: { enabled: false }, peerCard: { use: true, create: false } });
    const configuration = await honcho.getConfiguration();
    expect(configuration.reasoning?.enabled).toBe(false);
    expect(configuration.peerCard).toMatchObject({ use: true, create: false });

    await honcho.refresh();
    expect(honcho.metadata).toEqual({ plan: 'team', seats: 3, tags: ['a', 'b'] });

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    // The lazy get-or-create comes first and carries only the id.
    expect(exchanges[0]).toMatchObject({ method: 'POST', path: '/v3/workspaces', requestBody: { id: workspace }, status: 201 });
    expect(routesCalled(exchanges, { workspace_id: workspace })).toEqual([
      'POST /v3/workspaces',
      'PUT /v3/workspaces/{workspace_id}',
    ]);
  });

  it('lists workspaces and deletes one once its sessions are gone', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3');
    const honcho = client(workspace);
    const session = await honcho.session('only');

    // Other suites share the database, so the listing is narrowed to this test's workspace.
    const page = await honcho.workspaces({ filters: { id: workspace } });
    expect(page.items).toEqual([workspace]);
    expect(page.total).toBe(1);

    const refused = await honcho.deleteWorkspace(workspace).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConflictError);
    expect((refused as ConflictError).status).toBe(409);

    await session.delete();
    await honcho.deleteWorkspace(workspace);
    expect((await honcho.workspaces({ filters: { id: workspace } })).items).toEqual([]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges.filter((e) => e.status !== 409));
    expect(exchanges.filter((e) => e.method === 'DELETE' && e.path === `/v3/workspaces/${workspace}`).map((e) => e.status)).toEqual([
      409, 202,
    ]);
    expect(exchanges.find((e) => e.path === '/v3/workspaces/list')?.requestBody).toEqual({ filters: { id: workspace } });
  });

  it('creates peers with metadata and lists them page by page in creation order', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3');
    const honcho = client(workspace);
    const peerIds = Array.from({ length: 7 }, (_, i) => `peer-${i}`);

    const created: Peer[] = [];
    for (const [i, id] of peerIds.entries()) {
      created.push(await honcho.peer(id, { metadata: { index: i, group: i % 2 === 0 ? 'even' : 'odd' } }));
    }
    created.forEach((peer, i) => {
      expect(peer.id).toBe(peerIds[i]);
      expect(peer.workspaceId).toBe(workspace);
      expect(peer.metadata).toEqual({ index: i, group: i % 2 === 0 ? 'even' : 'odd' });
      expect(typeof peer.createdAt).toBe('string');
    });

    const first = await honcho.peers({ size: 3 });
    expect([first.total, first.page, first.size, first.pages, first.length]).toEqual([7, 1, 3, 3, 3]);
    expect(first.hasNextPage).toBe(true);
    const listed: Peer[] = [];
    for await (const peer of first) listed.push(peer);
    expect(listed.map((p) => p.id)).toEqual(peerIds);
    expect(new Set(listed.map((p) => p.id)).size).toBe(peerIds.length);
    listed.forEach((peer, i) => expect(peer.metadata).toEqual({ index: i, group: i % 2 === 0 ? 'even' : 'odd' }));

    expect(await ids(await honcho.peers({ size: 3, reverse: true }))).toEqual([...peerIds].reverse());
    expect(await ids(await honcho.peers({ filters: { metadata: { group: 'odd' } }, size: 2 }))).toEqual([
      'peer-1',
      'peer-3',
      'peer-5',
    ]);

    const listCalls = server.since(mark).filter((e) => e.path === `/v3/workspaces/${workspace}/peers/list`);
    expect(listCalls.slice(0, 3).map((e) => e.query)).toEqual(['size=3', 'page=2&size=3', 'page=3&size=3']);
    expect(listCalls.slice(0, 3).map((e) => e.requestBody)).toEqual([{}, {}, {}]);

    expectAllOk(server.since(mark));
  });

  it('updates peer metadata and configuration', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3');
    const honcho = client(workspace);

    const alice = await honcho.peer('alice', { metadata: { role: 'user' }, configuration: { observeMe: false } });
    expect(alice.metadata).toEqual({ role: 'user' });
    expect(alice.configuration).toEqual({ observeMe: false });

    await alice.setMetadata({ role: 'admin', level: 2 });
    expect(await alice.getMetadata()).toEqual({ role: 'admin', level: 2 });
    await alice.setConfiguration({ observeMe: true });
    expect(await alice.getConfiguration()).toEqual({ observeMe: true });

    // A second handle on the same peer sees the stored values, not its own defaults.
    const again = await honcho.peer('alice');
    expect(again.metadata).toEqual({ role: 'admin', level: 2 });
    expect(again.configuration).toEqual({ observeMe: true });
    const page = await honcho.peers();
    expect(page.items.map((p) => [p.id, p.metadata])).toEqual([['alice', { role: 'admin', level: 2 }]]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(routesCalled(exchanges, { workspace_id: workspace, peer_id: 'alice' })).toEqual([
      'POST /v3/workspaces',
      'POST /v3/workspaces/{workspace_id}/peers',
      'PUT /v3/workspaces/{workspace_id}/peers/{peer_id}',
      'POST /v3/workspaces/{workspace_id}/peers/list',
    ]);
  });

  it('manages session peers with session-level configuration', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3');
    const honcho = client(workspace);

    const session = await honcho.session('chat-1', { metadata: { topic: 'onboarding' } });
    expect(session.id).toBe('chat-1');
    expect(session.metadata).toEqual({ topic: 'onboarding' });
    expect(session.isActive).toBe(true);

    const bob = await honcho.peer('bob');
    await session.addPeers([
      ['alice', { observeMe: true, observeOthers: true }],
      [bob, { observeMe: false, observeOthers: false }],
      'carol',
    ]);
    expect((await session.peers()).map((p) => p.id).sort()).toEqual(['alice', 'bob', 'carol']);
    expect(await session.getPeerConfiguration('alice')).toEqual({ observeMe: true, observeOthers: true });
    expect(await session.getPeerConfiguration(bob)).toEqual({ observeMe: false, observeOthers: false });

    await session.setPeerConfiguration('carol', { observeMe: false, observeOthers: true });
    expect(await session.getPeerConfiguration('carol')).toEqual({ observeMe: false, observeOthers: true });
    await session.setPeerConfiguration(bob, { observeOthers: true });
    expect(await session.getPeerConfiguration(bob)).toEqual({ observeMe: false, observeOthers: true });

    await session.removePeers(bob);
    expect((await session.peers()).map((p) => p.id).sort()).toEqual(['alice', 'carol']);

    // set replaces the membership with exactly the given peers
    await session.setPeers([['dave', { observeOthers: true }], 'alice']);
    expect((await session.peers()).map((p) => p.id).sort()).toEqual(['alice', 'dave']);
    expect(await session.getPeerConfiguration('dave')).toMatchObject({ observeOthers: true });

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const add = exchanges.find((e) => e.method === 'POST' && e.path === `/v3/workspaces/${workspace}/sessions/chat-1/peers`);
    expect(add?.requestBody).toEqual({
      alice: { observe_me: true, observe_others: true },
      bob: { observe_me: false, observe_others: false },
      carol: {},
    });
    const remove = exchanges.find((e) => e.method === 'DELETE' && e.path === `/v3/workspaces/${workspace}/sessions/chat-1/peers`);
    expect(remove?.requestBody).toEqual(['bob']);
    expect(
      routesCalled(exchanges, { workspace_id: workspace, session_id: 'chat-1', peer_id: ['alice', 'bob', 'carol', 'dave'] }),
    ).toEqual([
      'POST /v3/workspaces',
      'POST /v3/workspaces/{workspace_id}/sessions',
      'POST /v3/workspaces/{workspace_id}/peers',
      'POST /v3/workspaces/{workspace_id}/sessions/{session_id}/peers',
      'GET /v3/workspaces/{workspace_id}/sessions/{session_id}/peers',
      'GET /v3/workspaces/{workspace_id}/sessions/{session_id}/peers/{peer_id}/config',
      'PUT /v3/workspaces/{workspace_id}/sessions/{session_id}/peers/{peer_id}/config',
      'DELETE /v3/workspaces/{workspace_id}/sessions/{session_id}/peers',
      'PUT /v3/workspaces/{workspace_id}/sessions/{session_id}/peers',
    ]);
  });

  it("lists a peer's sessions, left and deleted ones included, across pages", async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3');
    const honcho = client(workspace);

    const sessionIds = ['s-1', 's-2', 's-3', 's-4'];
    for (const id of sessionIds) await honcho.session(id, { peers: ['erin', 'frank'] });
    await honcho.session('s-other', { peers: ['frank'] });

    const erin = await honcho.peer('erin');
    const page = await erin.sessions({ size: 3 });
    expect([page.total, page.pages]).toEqual([4, 2]);
    expect(await ids(page)).toEqual(sessionIds);

    // Erin leaves s-2 and s-3 is deleted: both stay in her history.
    const s2 = (await erin.sessions()).items[1];
    await s2.removePeers('erin');
    const s3 = (await erin.sessions()).items[2];
    await s3.delete();
    const history: Session[] = [];
    for await (const s of await erin.sessions({ size: 2 })) history.push(s);
    expect(history.map((s) => [s.id, s.isActive])).toEqual([
      ['s-1', true],
      ['s-2', true],
      ['s-3', false],
      ['s-4', true],
    ]);
    expect(await ids(await (await honcho.peer('frank')).sessions())).toEqual([...sessionIds, 's-other']);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const create = exchanges.find((e) => e.path === `/v3/workspaces/${workspace}/sessions` && e.status === 201);
    expect(create?.requestBody).toEqual({ id: 's-1', peers: { erin: {}, frank: {} } });
    expect(exchanges.filter((e) => e.path === `/v3/workspaces/${workspace}/peers/erin/sessions`)[0].query).toBe('size=3');
  });

  it('updates, clones and deletes a session, and lists sessions across pages', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3');
    const honcho = client(workspace);

    const session = await honcho.session('main', {
      metadata: { v: 1 },
      configuration: { summary: { enabled: false } },
      peers: [['gina', { observeOthers: true }], 'hal'],
    });
    expect(session.metadata).toEqual({ v: 1 });
    expect(session.configuration?.summary?.enabled).toBe(false);

    await session.setMetadata({ v: 2, note: 'edited' });
    expect(await session.getMetadata()).toEqual({ v: 2, note: 'edited' });
    await session.setConfiguration({ dream: { enabled: false } });
    expect(session.configuration).toEqual({ dream: { enabled: false } }); // the SDK caches what it sent
    // The server merges configuration sections, so the earlier summary setting survives.
    const configuration = await session.getConfiguration();
    expect(configuration.dream?.enabled).toBe(false);
    expect(configuration.summary?.enabled).toBe(false);

    const clone = await session.clone();
    expect(clone.id).not.toBe('main');
    expect(clone.metadata).toEqual({ v: 2, note: 'edited' });
    expect(clone.isActive).toBe(true);
    expect((await clone.peers()).map((p) => p.id).sort()).toEqual(['gina', 'hal']);
    expect(await clone.getPeerConfiguration('gina')).toMatchObject({ observeOthers: true });

    await honcho.session('extra-1');
    await honcho.session('extra-2');
    const all = await ids(await honcho.sessions({ size: 2 }));
    expect(all).toEqual(['main', clone.id, 'extra-1', 'extra-2']);

    await session.delete();
    expect(await ids(await honcho.sessions({ size: 2 }))).toEqual([clone.id, 'extra-1', 'extra-2']);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(exchanges.find((e) => e.path.endsWith('/sessions/main/clone'))).toMatchObject({ method: 'POST', query: '', status: 201 });
    expect(exchanges.find((e) => e.method === 'DELETE' && e.path === `/v3/workspaces/${workspace}/sessions/main`)).toMatchObject({
      status: 202,
    });
  });
});

describe('@honcho-ai/sdk 2.x over /v3 with authentication on', () => {
  const secret = 'sdk-test-secret-of-reasonable-length';
  let authServer: SdkServer;
  beforeAll(async () => {
    authServer = await startSdkServer({ AUTH_USE_AUTH: 'true', AUTH_JWT_SECRET: secret });
  });
  afterAll(() => authServer?.close());

  it('works with a workspace-scoped key and refuses a key for another workspace', async () => {
    const workspace = uniqueId('sdk3');
    const key = mintToken(secret, { workspaceId: workspace });
    const honcho = client(workspace, key, authServer.baseURL);

    const peer = await honcho.peer('ivy', { metadata: { scoped: true } });
    expect(peer.metadata).toEqual({ scoped: true });
    const session = await honcho.session('room', { peers: [['ivy', { observeOthers: true }]] });
    expect((await session.peers()).map((p) => p.id)).toEqual(['ivy']);
    expect(await session.getPeerConfiguration('ivy')).toMatchObject({ observeOthers: true });
    expect(await ids(await honcho.peers({ size: 1 }))).toEqual(['ivy']);
    await honcho.setMetadata({ owner: 'ivy' });
    expect(await honcho.getMetadata()).toEqual({ owner: 'ivy' });
    expectAllOk(authServer.exchanges);

    const mark = authServer.exchanges.length;
    const foreign = client(workspace, mintToken(secret, { workspaceId: uniqueId('other') }), authServer.baseURL);
    const error = await foreign.peer('ivy').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect((error as AuthenticationError).status).toBe(401);
    expect((error as AuthenticationError).message).toBe('Unauthorized access to resource');
    // The lazy workspace get-or-create is the request that is refused.
    expect(authServer.since(mark)).toEqual([
      {
        method: 'POST',
        path: '/v3/workspaces',
        query: '',
        requestBody: { id: workspace },
        status: 401,
        responseBody: { detail: 'Unauthorized access to resource' },
      },
    ]);

    const foreignReads = client(workspace, mintToken(secret, { workspaceId: uniqueId('other') }), authServer.baseURL);
    await expect(foreignReads.peers()).rejects.toBeInstanceOf(AuthenticationError);
  });
});
