import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$/;

interface Observation {
  id: string;
  content: string;
  session_id: string | null;
  created_at: string;
}

/** A workspace with peers alice and bob in sessions s1 and s2 (made through v2). */
async function setUp(): Promise<string> {
  const ws = uniqueId();
  for (const session of ['s1', 's2']) {
    expect((await api.post(`/v2/workspaces/${ws}/sessions`, { id: session, peers: { alice: {}, bob: {} } })).status).toBe(200);
  }
  return ws;
}

async function observe(ws: string, observations: { content: string; observer_id: string; observed_id: string; session_id: string }[]) {
  const response = await api.post(`/v2/workspaces/${ws}/observations`, { observations });
  expect(response.status).toBe(200);
  return response.body as Observation[];
}

const contents = (items: { content: string }[]) => items.map((o) => o.content);

describe('v2 observations', () => {
  it('creates with 200 in request order; items have no level', async () => {
    const ws = await setUp();
    const response = await api.post(`/v2/workspaces/${ws}/observations`, {
      observations: [
        { content: 'Alice likes tea', observer_id: 'bob', observed_id: 'alice', session_id: 's1' },
        { content: 'Bob likes jazz', observer_id: 'alice', observed_id: 'bob', session_id: 's2' },
      ],
    });
    expect(response.status).toBe(200);
    expect(response.body).toHaveLength(2);
    expect(Object.keys(response.body[0])).toEqual(['id', 'content', 'observer_id', 'observed_id', 'session_id', 'created_at']);
    expect(response.body[0]).toMatchObject({ content: 'Alice likes tea', observer_id: 'bob', observed_id: 'alice', session_id: 's1' });
    expect(response.body[1]).toMatchObject({ content: 'Bob likes jazz', observer_id: 'alice', observed_id: 'bob', session_id: 's2' });
    expect(response.body[0].created_at).toMatch(ISO);
    // the same rows seen through v3 carry the level
    const v3 = await api.post(`/v3/workspaces/${ws}/conclusions/list`, { filters: { id: response.body[0].id } });
    expect(v3.body.items[0]).toMatchObject({ id: response.body[0].id, level: 'explicit' });
  });

  it('requires a session per observation and the `observations` key (v2 schema)', async () => {
    const ws = await setUp();
    const url = `/v2/workspaces/${ws}/observations`;
    const noSession = await api.post(url, { observations: [{ content: 'x', observer_id: 'alice', observed_id: 'bob' }] });
    expect(noSession.status).toBe(422);
    expect(noSession.body.detail).toEqual([
      { type: 'missing', loc: ['body', 'observations', 0, 'session_id'], msg: 'Field required', input: { content: 'x', observer_id: 'alice', observed_id: 'bob' } },
    ]);
    const nullSession = await api.post(url, { observations: [{ content: 'x', observer_id: 'alice', observed_id: 'bob', session_id: null }] });
    expect(nullSession.body.detail[0]).toMatchObject({ type: 'string_type', loc: ['body', 'observations', 0, 'session_id'] });
    const v3Key = await api.post(url, { conclusions: [{ content: 'x', observer_id: 'alice', observed_id: 'bob', session_id: 's1' }] });
    expect(v3Key.body.detail).toEqual([
      {
        type: 'missing',
        loc: ['body', 'observations'],
        msg: 'Field required',
        input: { conclusions: [{ content: 'x', observer_id: 'alice', observed_id: 'bob', session_id: 's1' }] },
      },
    ]);
    // a body without Content-Type is parsed as JSON in v2
    const untyped = await api.post(url, undefined, {
      raw: JSON.stringify({ observations: [{ content: 'plain', observer_id: 'alice', observed_id: 'bob', session_id: 's1' }] }),
    });
    expect(untyped.status).toBe(200);
  });

  it('answers 404 for a missing session or peer and writes nothing of the batch', async () => {
    const ws = await setUp();
    const good = { content: 'ok', observer_id: 'alice', observed_id: 'bob', session_id: 's1' };
    const missingSession = await api.post(`/v2/workspaces/${ws}/observations`, { observations: [good, { ...good, session_id: 'zz' }] });
    expect(missingSession.status).toBe(404);
    expect(missingSession.body).toEqual({ detail: `Session zz not found in workspace ${ws}` });
    const missingPeer = await api.post(`/v2/workspaces/${ws}/observations`, { observations: [good, { ...good, observed_id: 'zed' }] });
    expect(missingPeer.status).toBe(404);
    expect(missingPeer.body).toEqual({ detail: `Peer zed not found in workspace ${ws}` });
    expect((await api.post(`/v2/workspaces/${ws}/observations/list`)).body.total).toBe(0);
  });

  it('lists newest first with reverse and filters; pages carry the v2 wrapper', async () => {
    const ws = await setUp();
    await observe(ws, [
      { content: 'o1', observer_id: 'alice', observed_id: 'bob', session_id: 's1' },
      { content: 'o2', observer_id: 'alice', observed_id: 'bob', session_id: 's2' },
    ]);
    await observe(ws, [{ content: 'o3', observer_id: 'bob', observed_id: 'alice', session_id: 's1' }]);
    const url = `/v2/workspaces/${ws}/observations/list`;
    const newest = await api.post(url);
    expect(newest.status).toBe(200);
    expect(contents(newest.body.items)).toEqual(['o3', 'o2', 'o1']);
    expect(newest.body).toMatchObject({ total: 3, page: 1, size: 50, pages: 1 });
    expect(contents((await api.post(`${url}?reverse=true`)).body.items)).toEqual(['o1', 'o2', 'o3']);
    expect(contents((await api.post(`${url}?reverse=true`, { filters: { session_id: 's1' } })).body.items)).toEqual(['o1', 'o3']);
    expect(contents((await api.post(url, { filters: { observer: 'alice', content: { contains: 'o_' } } })).body.items)).toEqual(['o2', 'o1']);
    const unknown = await api.post(url, { filters: { nonsense: 1 } });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toEqual({ detail: "Column 'nonsense' does not exist on Document" });
  });

  it('queries by full-text relevance and requires observer and observed', async () => {
    const ws = await setUp();
    await observe(ws, [
      { content: 'Bob plays bass guitar', observer_id: 'alice', observed_id: 'bob', session_id: 's1' },
      { content: 'Bob owns a guitar', observer_id: 'alice', observed_id: 'bob', session_id: 's1' },
      { content: 'Bob sleeps late', observer_id: 'alice', observed_id: 'bob', session_id: 's2' },
    ]);
    const url = `/v2/workspaces/${ws}/observations/query`;
    const found = await api.post(url, { query: 'bass guitar', filters: { observer_id: 'alice', observed_id: 'bob' } });
    expect(found.status).toBe(200);
    expect(contents(found.body)).toEqual(['Bob plays bass guitar', 'Bob owns a guitar']);
    expect(Object.keys(found.body[0])).toEqual(['id', 'content', 'observer_id', 'observed_id', 'session_id', 'created_at']);
    const missing = await api.post(url, { query: 'guitar', filters: { observer_id: 'alice' } });
    expect(missing.status).toBe(422);
    expect(missing.body).toEqual({ detail: 'observer and observed must be specified for semantic search' });
  });

  it('deletes with 200 and a message; a second delete is 404', async () => {
    const ws = await setUp();
    const [gone] = await observe(ws, [{ content: 'temporary', observer_id: 'alice', observed_id: 'bob', session_id: 's1' }]);
    const deleted = await api.delete(`/v2/workspaces/${ws}/observations/${gone.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ message: 'Observation deleted successfully' });
    expect((await api.post(`/v2/workspaces/${ws}/observations/list`)).body.total).toBe(0);
    const again = await api.delete(`/v2/workspaces/${ws}/observations/${gone.id}`);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: `Document ${gone.id} not found or does not belong to workspace ${ws}` });
  });
});

describe('v2 peer card, context and representation', () => {
  it('sets and reads cards as v3 does', async () => {
    const ws = uniqueId();
    expect((await api.get(`/v2/workspaces/${ws}/peers/alice/card`)).status).toBe(404);
    const set = await api.put(`/v2/workspaces/${ws}/peers/alice/card?target=bob`, { peer_card: ['Bob: friend'] });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ peer_card: ['Bob: friend'] });
    expect((await api.get(`/v2/workspaces/${ws}/peers/alice/card?target=bob`)).body).toEqual({ peer_card: ['Bob: friend'] });
    expect((await api.get(`/v2/workspaces/${ws}/peers/alice/card`)).body).toEqual({ peer_card: null });
    // v2 ids are at most 100 characters
    const long = 'a'.repeat(101);
    const tooLong = await api.put(`/v2/workspaces/${ws}/peers/${long}/card`, { peer_card: [] });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.detail[0]).toMatchObject({ type: 'string_too_long', loc: ['path', 'peer_id'] });
  });

  it('peer context carries a v2 Representation object', async () => {
    const ws = await setUp();
    const [older, newer] = await observe(ws, [
      { content: 'Bob is a chef', observer_id: 'alice', observed_id: 'bob', session_id: 's1' },
      { content: 'Bob bakes bread', observer_id: 'alice', observed_id: 'bob', session_id: 's2' },
    ]);
    await api.put(`/v2/workspaces/${ws}/peers/alice/card?target=bob`, { peer_card: ['Chef'] });
    const context = await api.get(`/v2/workspaces/${ws}/peers/alice/context?target=bob&include_most_derived=false`);
    expect(context.status).toBe(200);
    expect(context.body).toEqual({
      peer_id: 'alice',
      target_id: 'bob',
      representation: {
        explicit: [
          { created_at: newer.created_at, message_ids: [], session_name: 's2', content: 'Bob bakes bread' },
          { created_at: older.created_at, message_ids: [], session_name: 's1', content: 'Bob is a chef' },
        ],
        deductive: [],
      },
      peer_card: ['Chef'],
    });
    const limited = await api.get(`/v2/workspaces/${ws}/peers/alice/context?target=bob&max_observations=1`);
    expect(limited.body.representation.explicit.map((o: { content: string }) => o.content)).toEqual(['Bob bakes bread']);
    const bad = await api.get(`/v2/workspaces/${ws}/peers/alice/context?max_observations=101`);
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ type: 'less_than_equal', loc: ['query', 'max_observations'] });
    expect((await api.get(`/v2/workspaces/${ws}/peers/ghost/context`)).status).toBe(404);
  });

  it('working representation renders markdown, scoped by session', async () => {
    const ws = await setUp();
    const [inOne, inTwo] = await observe(ws, [
      { content: 'Alice reads novels', observer_id: 'alice', observed_id: 'alice', session_id: 's1' },
      { content: 'Alice swims', observer_id: 'alice', observed_id: 'alice', session_id: 's2' },
    ]);
    const url = `/v2/workspaces/${ws}/peers/alice/representation`;
    const line = (o: Observation) => `- [${o.created_at.slice(0, 19)}Z] ${o.content}`;
    const all = await api.post(url, {});
    expect(all.status).toBe(200);
    expect(all.body).toEqual({ representation: `## Explicit conclusions\n\n${line(inTwo)}\n${line(inOne)}` });
    expect((await api.post(url, { session_id: 's1' })).body).toEqual({ representation: `## Explicit conclusions\n\n${line(inOne)}` });
    expect((await api.post(url, { max_observations: 1 })).body).toEqual({ representation: `## Explicit conclusions\n\n${line(inTwo)}` });
    expect((await api.post(url, { search_query: 'novels' })).body).toEqual({ representation: `## Explicit conclusions\n\n${line(inOne)}` });
    const bad = await api.post(url, { max_observations: 0 });
    expect(bad.body.detail[0]).toMatchObject({ type: 'greater_than_equal', loc: ['body', 'max_observations'] });
  });
});

describe('v2 auth on observations and peer memory', () => {
  let authed: TestApi;
  beforeAll(async () => {
    authed = await buildTestApp({ AUTH_USE_AUTH: 'true' });
  });
  afterAll(() => authed.close());

  it('accepts any token whose workspace matches (v2 rules); refuses other workspaces and no token', async () => {
    const ws = uniqueId();
    const admin = authed.token({ isAdmin: true });
    await authed.post(`/v2/workspaces/${ws}/sessions`, { id: 's', peers: { alice: {}, bob: {} } }, { token: admin });
    const body = { observations: [{ content: 'x', observer_id: 'alice', observed_id: 'bob', session_id: 's' }] };
    expect((await authed.post(`/v2/workspaces/${ws}/observations`, body)).status).toBe(401);
    // a peer token of the workspace passes a workspace route in v2 (contract §9.2 (c))
    const bobToken = authed.token({ workspaceId: ws, peerId: 'bob' });
    expect((await authed.post(`/v2/workspaces/${ws}/observations`, body, { token: bobToken })).status).toBe(200);
    expect((await authed.get(`/v2/workspaces/${ws}/peers/alice/card`, { token: bobToken })).status).toBe(200);
    const stranger = authed.token({ workspaceId: uniqueId() });
    for (const response of [
      await authed.post(`/v2/workspaces/${ws}/observations/list`, undefined, { token: stranger }),
      await authed.get(`/v2/workspaces/${ws}/peers/alice/context`, { token: stranger }),
      await authed.put(`/v2/workspaces/${ws}/peers/alice/card`, { peer_card: [] }, { token: stranger }),
    ]) {
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ detail: 'JWT not permissioned for this resource' });
    }
  });
});
