import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

/*
 * POST /v3/workspaces/{w}/forget: a preview answers the conclusions a query and/or filters find
 * about a peer, and a token; the same request with the token removes exactly those (and, when
 * asked, their source messages), once; each removal is recorded without its content.
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

async function count(sql: string, params: unknown[]): Promise<number> {
  return Number((await api.database.driver.get<{ n: number | string }>(sql, params))?.n);
}

/** alice's messages about coffee and tea in s1, and conclusions drawn from them by alice and bob. */
async function memories(): Promise<{ ws: string; messages: string[] }> {
  const ws = uniqueId();
  expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {}, bob: {} })).status).toBe(200);
  const sent = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, {
    messages: [
      { peer_id: 'alice', content: 'I drink coffee every morning' },
      { peer_id: 'alice', content: 'I prefer green tea' },
    ],
  });
  expect(sent.status).toBe(201);
  const messages = (sent.body as { id: string }[]).map((m) => m.id);
  const now = new Date();
  const explicit = (id: string, observer: string, content: string, source: string, offset: number) => ({
    id,
    workspaceId: ws,
    observerId: observer,
    observedId: 'alice',
    sessionId: 's1',
    content,
    level: 'explicit' as const,
    sourceIds: [source],
    timesDerived: 1,
    createdAt: new Date(now.getTime() + offset),
  });
  await api.database.store.memory.insertConclusions([
    explicit(`${ws}-c1`, 'alice', 'alice drinks coffee every morning', messages[0], 0),
    explicit(`${ws}-c2`, 'bob', 'alice likes coffee', messages[0], 1),
    explicit(`${ws}-c3`, 'alice', 'alice prefers green tea', messages[1], 2),
  ]);
  return { ws, messages };
}

const live = async (ws: string) =>
  (await api.database.driver.all<{ id: string }>('SELECT id FROM conclusions WHERE workspace_id = ? ORDER BY id', [ws]))
    .filter((row) => row.id.startsWith(`${ws}-`))
    .map((row) => row.id.slice(ws.length + 1));

describe('forget', () => {
  it('previews by a query across observers, then removes exactly the previewed set with the token, once', async () => {
    const { ws } = await memories();
    const preview = await api.post(`/v3/workspaces/${ws}/forget`, { observed: 'alice', query: 'coffee' });
    expect(preview.status, preview.text).toBe(200);
    expect(preview.body.status).toBe('preview');
    expect(typeof preview.body.token).toBe('string');
    expect(Date.parse(preview.body.expires_at)).toBeGreaterThan(Date.now());
    expect(preview.body.conclusions.map((c: { id: string }) => c.id).sort()).toEqual([`${ws}-c1`, `${ws}-c2`]);
    expect(preview.body.messages).toBeUndefined();
    // the preview changed nothing
    expect(await live(ws)).toEqual(['c1', 'c2', 'c3']);

    // a scope's copy of a previewed conclusion (its observer is not asked about) goes with it
    await api.database.store.peers.createScopeIfAbsent(ws, { id: 'scope.team', metadata: {}, configuration: {} }, new Date());
    await api.database.store.memory.insertConclusions([
      { id: `${ws}-copy`, workspaceId: ws, observerId: 'scope.team', observedId: 'alice', sessionId: 's1', content: 'a copy', level: 'explicit', sourceIds: null, timesDerived: 1, createdAt: new Date(), copiedFrom: `${ws}-c1` },
    ]);
    // a conclusion matching the query made after the preview is not removed
    await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice grinds coffee beans', observer_id: 'bob', observed_id: 'alice' }] });
    const done = await api.post(`/v3/workspaces/${ws}/forget`, { observed: 'alice', query: 'coffee', token: preview.body.token });
    expect(done.status, done.text).toBe(200);
    expect(done.body.status).toBe('forgotten');
    expect(done.body.record).toMatchObject({ observed: 'alice', observer: null, actor: 'admin', conclusions_removed: 3, messages_removed: 0 });
    expect(await live(ws)).toEqual(['c3']);
    expect(await count('SELECT count(*) AS n FROM conclusions WHERE workspace_id = ? AND content LIKE ?', [ws, '%grinds%'])).toBe(1);
    // the messages stay (not asked for)
    expect(await count('SELECT count(*) AS n FROM messages WHERE workspace_id = ?', [ws])).toBe(2);

    // once only
    const again = await api.post(`/v3/workspaces/${ws}/forget`, { observed: 'alice', query: 'coffee', token: preview.body.token });
    expect(again.status).toBe(409);
    expect(again.body.detail).toBe('This forget token was used already');

    // recorded: who, when, how many; never the content
    const records = await api.get(`/v3/workspaces/${ws}/forget/records`);
    expect(records.status, records.text).toBe(200);
    expect(records.body.total).toBe(1);
    expect(records.body.items[0]).toEqual({ ...done.body.record });
    expect(JSON.stringify(records.body)).not.toContain('coffee');
    expect(await count('SELECT count(*) AS n FROM forget_records WHERE workspace_id = ?', [ws])).toBe(1);
  });

  it('with filters and one observer, and their source messages when asked', async () => {
    const { ws, messages } = await memories();
    const body = { observed: 'alice', observer: 'alice', filters: { content: { icontains: 'tea' } }, include_messages: true };
    const preview = await api.post(`/v3/workspaces/${ws}/forget`, body);
    expect(preview.status, preview.text).toBe(200);
    expect(preview.body.conclusions.map((c: { id: string }) => c.id)).toEqual([`${ws}-c3`]);
    expect(preview.body.messages.map((m: { id: string; content: string }) => [m.id, m.content])).toEqual([[messages[1], 'I prefer green tea']]);
    const done = await api.post(`/v3/workspaces/${ws}/forget`, { ...body, token: preview.body.token });
    expect(done.status, done.text).toBe(200);
    expect(done.body.record).toMatchObject({ observer: 'alice', conclusions_removed: 1, messages_removed: 1 });
    expect(await live(ws)).toEqual(['c1', 'c2']);
    const left = await api.database.driver.all<{ id: string }>('SELECT id FROM messages WHERE workspace_id = ?', [ws]);
    expect(left.map((m) => m.id)).toEqual([messages[0]]);
    // the session's message count followed
    const session = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages/list`, {});
    expect(session.body.total).toBe(1);
  });

  it('refuses a token for another request, an expired one and an unknown one, changing nothing', async () => {
    const { ws } = await memories();
    const preview = await api.post(`/v3/workspaces/${ws}/forget`, { observed: 'alice', query: 'coffee' });
    const other = await api.post(`/v3/workspaces/${ws}/forget`, { observed: 'alice', query: 'tea', token: preview.body.token });
    expect(other.status).toBe(409);
    expect(other.body.detail).toMatch(/another request/);
    const unknown = await api.post(`/v3/workspaces/${ws}/forget`, { observed: 'alice', query: 'coffee', token: 'not-a-token' });
    expect(unknown.status).toBe(404);
    // from another workspace the token is unknown
    const elsewhere = await memories();
    expect((await api.post(`/v3/workspaces/${elsewhere.ws}/forget`, { observed: 'alice', query: 'coffee', token: preview.body.token })).status).toBe(404);
    await api.database.driver.run('UPDATE forget_previews SET expires_at = created_at WHERE workspace_id = ?', [ws]);
    const expired = await api.post(`/v3/workspaces/${ws}/forget`, { observed: 'alice', query: 'coffee', token: preview.body.token });
    expect(expired.status).toBe(409);
    expect(expired.body.detail).toMatch(/expired/);
    expect(await live(ws)).toEqual(['c1', 'c2', 'c3']);
    expect(await count('SELECT count(*) AS n FROM forget_records WHERE workspace_id = ?', [ws])).toBe(0);
  });

  it('answers 422 for bad input and 404 for a missing peer or workspace', async () => {
    const { ws } = await memories();
    const cases: [unknown, number][] = [
      [{ observed: 'alice' }, 422],
      [{ query: 'coffee' }, 422],
      [{ observed: '', query: 'coffee' }, 422],
      [{ observed: 'alice', query: 'coffee', limit: 0 }, 422],
      [{ observed: 'alice', query: 'coffee', limit: 1001 }, 422],
      [{ observed: 'alice', filters: { no_such_column: 1 } }, 422],
      [{ observed: 'alice', query: 'coffee', include_messages: 'yes please' }, 422],
      [[1, 2], 422],
      [{ observed: 'nobody', query: 'coffee' }, 404],
    ];
    for (const [body, status] of cases) {
      const answer = await api.post(`/v3/workspaces/${ws}/forget`, body);
      expect(answer.status, `${JSON.stringify(body)}: ${answer.text}`).toBe(status);
    }
    expect((await api.post(`/v3/workspaces/${uniqueId()}/forget`, { observed: 'alice', query: 'coffee' })).status).toBe(404);
    expect((await api.get(`/v3/workspaces/${uniqueId()}/forget/records`)).status).toBe(404);
    expect((await api.get(`/v3/workspaces/${ws}/forget/records?page=0`)).status).toBe(422);
    expect(await live(ws)).toEqual(['c1', 'c2', 'c3']);
  });

  it('a preview racing the deletion of its workspace answers 200 or 404, never a 500', async () => {
    // the preview's token is stored after its reads: a workspace whose purge removed it in between
    // (found by the concurrent fuzz on PostgreSQL) must end it as a missing workspace
    for (let round = 0; round < 12; round++) {
      const { ws } = await memories();
      const previews = Array.from({ length: 4 }, () => api.post(`/v3/workspaces/${ws}/forget`, { observed: 'alice', query: 'coffee', include_messages: true }));
      // what the purge job of a deleted workspace does last
      await new Promise((resolve) => setTimeout(resolve, round % 4));
      await api.database.store.workspaces.delete(ws);
      for (const answer of await Promise.all(previews)) expect([200, 404], answer.text).toContain(answer.status);
      expect((await api.post(`/v3/workspaces/${ws}/forget`, { observed: 'alice', query: 'coffee' })).status).toBe(404);
    }
  });
});

describe('removing memory with auth on', () => {
  let secured: TestApi;
  beforeAll(async () => {
    secured = await buildTestApp({ AUTH_USE_AUTH: 'true' });
  });
  afterAll(() => secured.close());

  it('takes the workspace key or an admin; refuses peer and session keys and other workspaces; records the key scope', async () => {
    const admin = secured.token({ isAdmin: true });
    const ws = uniqueId();
    expect((await secured.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {}, bob: {} }, { token: admin })).status).toBe(200);
    await secured.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice likes jazz', observer_id: 'bob', observed_id: 'alice' }] }, { token: admin });
    const own = secured.token({ workspaceId: ws });
    const refused = [
      secured.token({ workspaceId: uniqueId() }),
      secured.token({ workspaceId: ws, peerId: 'alice' }),
      secured.token({ workspaceId: ws, sessionId: 's1' }),
    ];
    const body = { observed: 'alice', query: 'jazz' };
    for (const token of refused) {
      expect((await secured.post(`/v3/workspaces/${ws}/forget`, body, { token })).status).toBe(401);
      expect((await secured.delete(`/v3/workspaces/${ws}/peers/alice?dry_run=true`, undefined, { token })).status).toBe(401);
      expect((await secured.delete(`/v3/workspaces/${ws}/peers/bob`, undefined, { token })).status).toBe(401);
    }
    expect((await secured.post(`/v3/workspaces/${ws}/forget`, body)).status).toBe(401);
    const preview = await secured.post(`/v3/workspaces/${ws}/forget`, body, { token: own });
    expect(preview.status, preview.text).toBe(200);
    const done = await secured.post(`/v3/workspaces/${ws}/forget`, { ...body, token: preview.body.token }, { token: own });
    expect(done.body.record).toMatchObject({ actor: `workspace:${ws}`, conclusions_removed: 1 });
    // the records: admin only
    expect((await secured.get(`/v3/workspaces/${ws}/forget/records`, { token: own })).status).toBe(401);
    const records = await secured.get(`/v3/workspaces/${ws}/forget/records`, { token: admin });
    expect(records.body.items.map((r: { actor: string }) => r.actor)).toEqual([`workspace:${ws}`]);
    // the workspace's key deletes a peer
    expect((await secured.delete(`/v3/workspaces/${ws}/peers/bob`, undefined, { token: own })).status).toBe(202);
    const peers = await secured.post(`/v3/workspaces/${ws}/peers/list`, {}, { token: admin });
    expect(peers.body.items.map((p: { id: string }) => p.id)).toEqual(['alice']);
  });
});
