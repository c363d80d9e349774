import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

interface Conclusion {
  id: string;
  content: string;
  created_at: string;
}

/** A workspace with peers alice and bob in sessions s1 and s2. */
async function setUp(): Promise<string> {
  const ws = uniqueId();
  for (const session of ['s1', 's2']) {
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: session, peers: { alice: {}, bob: {} } })).status).toBe(201);
  }
  return ws;
}

async function conclude(ws: string, items: { content: string; observer_id: string; observed_id: string; session_id?: string }[]) {
  const response = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: items });
  expect(response.status).toBe(201);
  return response.body as Conclusion[];
}

/** The expected rendering: one heading, then `- [time] content` per conclusion, in the given order. */
function explicitSection(conclusions: Conclusion[]): string {
  const lines = conclusions.map((c) => `- [${c.created_at.slice(0, 19)}Z] ${c.content}`);
  return `## Explicit conclusions\n\n${lines.join('\n')}`;
}

describe('peer cards', () => {
  it('GET answers 404 for an unknown observer and null for a peer without a card', async () => {
    const ws = await setUp();
    const missing = await api.get(`/v3/workspaces/${ws}/peers/ghost/card`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: `Peer ghost not found in workspace ${ws}` });
    const none = await api.get(`/v3/workspaces/${ws}/peers/alice/card`);
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ peer_card: null });
  });

  it('PUT creates the observer peer, echoes the card, and keeps one card per target', async () => {
    const ws = uniqueId();
    const own = await api.put(`/v3/workspaces/${ws}/peers/alice/card`, { peer_card: ['Name: Alice', 'Lives in\u0000 Oslo'] });
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ peer_card: ['Name: Alice', 'Lives in Oslo'] });
    // the workspace and peer now exist
    const peers = await api.post(`/v3/workspaces/${ws}/peers/list`);
    expect(peers.body.items.map((p: { id: string }) => p.id)).toEqual(['alice']);

    const ofBob = await api.put(`/v3/workspaces/${ws}/peers/alice/card?target=bob`, { peer_card: ['Bob is tall'] });
    expect(ofBob.body).toEqual({ peer_card: ['Bob is tall'] });
    expect((await api.get(`/v3/workspaces/${ws}/peers/alice/card`)).body).toEqual({ peer_card: ['Name: Alice', 'Lives in Oslo'] });
    expect((await api.get(`/v3/workspaces/${ws}/peers/alice/card?target=bob`)).body).toEqual({ peer_card: ['Bob is tall'] });
    expect((await api.get(`/v3/workspaces/${ws}/peers/alice/card?target=carol`)).body).toEqual({ peer_card: null });
    // naming itself as target is its own card
    expect((await api.get(`/v3/workspaces/${ws}/peers/alice/card?target=alice`)).body).toEqual({ peer_card: ['Name: Alice', 'Lives in Oslo'] });
    // the target never became a peer; bob's card is not alice's card of bob
    expect((await api.get(`/v3/workspaces/${ws}/peers/bob/card`)).status).toBe(404);

    expect((await api.put(`/v3/workspaces/${ws}/peers/alice/card`, { peer_card: [] })).body).toEqual({ peer_card: [] });
    expect((await api.get(`/v3/workspaces/${ws}/peers/alice/card`)).body).toEqual({ peer_card: [] });
  });

  it('validates the body and the ids of a path that creates a peer', async () => {
    const ws = uniqueId();
    const url = `/v3/workspaces/${ws}/peers/alice/card`;
    expect((await api.put(url)).body.detail).toEqual([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
    expect((await api.put(url, {})).body.detail).toEqual([{ type: 'missing', loc: ['body', 'peer_card'], msg: 'Field required', input: {} }]);
    expect((await api.put(url, { peer_card: 'x' })).body.detail).toEqual([
      { type: 'list_type', loc: ['body', 'peer_card'], msg: 'Input should be a valid list', input: 'x' },
    ]);
    expect((await api.put(url, { peer_card: ['ok', 1] })).body.detail).toEqual([
      { type: 'string_type', loc: ['body', 'peer_card', 1], msg: 'Input should be a valid string', input: 1 },
    ]);
    const badPath = await api.put(`/v3/workspaces/${ws}/peers/bad%20id/card`, { peer_card: [] });
    expect(badPath.status).toBe(422);
    expect(badPath.body.detail[0]).toMatchObject({ type: 'string_pattern_mismatch', loc: ['path', 'peer_id'], input: 'bad id' });
    // nothing was created by the refused requests
    expect((await api.post(`/v3/workspaces/${ws}/peers/list`)).body.total).toBe(0);
  });
});

describe('POST /v3/workspaces/{w}/peers/{p}/representation', () => {
  it('renders the stored conclusions as markdown, newest first; empty when there are none', async () => {
    const ws = await setUp();
    const url = `/v3/workspaces/${ws}/peers/alice/representation`;
    expect((await api.post(url, {})).body).toEqual({ representation: '' });
    // no peer existence check
    expect((await api.post(`/v3/workspaces/${ws}/peers/nobody/representation`, {})).body).toEqual({ representation: '' });

    const first = await conclude(ws, [
      { content: 'Alice likes green tea', observer_id: 'alice', observed_id: 'alice', session_id: 's1' },
      { content: 'Alice works as a nurse', observer_id: 'alice', observed_id: 'alice', session_id: 's1' },
    ]);
    const second = await conclude(ws, [
      { content: 'Alice moved to Oslo\nlast spring', observer_id: 'alice', observed_id: 'alice', session_id: 's2' },
      { content: 'Alice seems tired', observer_id: 'bob', observed_id: 'alice', session_id: 's2' },
    ]);

    const all = await api.post(url, {});
    expect(all.status).toBe(200);
    expect(Object.keys(all.body)).toEqual(['representation']);
    const newestFirst = [second[0], first[1], first[0]];
    expect(all.body.representation).toBe(
      explicitSection(newestFirst).replace('Alice moved to Oslo\nlast spring', 'Alice moved to Oslo\n  last spring'),
    );

    const bobsView = await api.post(`/v3/workspaces/${ws}/peers/bob/representation`, { target: 'alice' });
    expect(bobsView.body.representation).toBe(explicitSection([second[1]]));
    expect((await api.post(url, { max_conclusions: 1 })).body.representation).toBe(explicitSection([second[0]]).replace('\nlast', '\n  last'));

    // a deleted conclusion disappears
    expect((await api.delete(`/v3/workspaces/${ws}/conclusions/${first[1].id}`)).status).toBe(204);
    expect((await api.post(url, { session_id: 's1' })).body.representation).toBe(explicitSection([first[0]]));
  });

  it('narrows by session and by the filters allowlist', async () => {
    const ws = await setUp();
    const created = await conclude(ws, [
      { content: 'in one', observer_id: 'alice', observed_id: 'alice', session_id: 's1' },
      { content: 'in two', observer_id: 'alice', observed_id: 'alice', session_id: 's2' },
      { content: 'in none', observer_id: 'alice', observed_id: 'alice' },
    ]);
    const [one, two, none] = created;
    const url = `/v3/workspaces/${ws}/peers/alice/representation`;
    const rendered = async (body: object) => {
      const response = await api.post(url, body);
      expect(response.status).toBe(200);
      return response.body.representation as string;
    };
    expect(await rendered({})).toBe(explicitSection([none, two, one]));
    expect(await rendered({ session_id: 's1' })).toBe(explicitSection([one]));
    expect(await rendered({ filters: { session_id: 's2' } })).toBe(explicitSection([two]));
    expect(await rendered({ filters: { session_id: ['s1', 's2', 's1'] } })).toBe(explicitSection([two, one]));
    expect(await rendered({ filters: { session_id: { in: ['s2'] } } })).toBe(explicitSection([two]));
    expect(await rendered({ session_id: 's2', filters: { session_id: ['s1', 's2'] } })).toBe(explicitSection([two]));
    expect(await rendered({ filters: { session_id: [] } })).toBe('');
    expect(await rendered({ filters: null, session_id: null })).toBe(explicitSection([none, two, one]));
  });

  it('refuses bad allowlists with the contract’s 422 strings', async () => {
    const ws = await setUp();
    const url = `/v3/workspaces/${ws}/peers/alice/representation`;
    const cases: [object, string][] = [
      [{ filters: { peer_id: 'x', metadata: {}, session_id: 's1' } }, "Unsupported filter key(s) for this endpoint: ['metadata', 'peer_id']. Only 'session_id' is supported."],
      [{ filters: {} }, "filters must contain 'session_id'"],
      [{ filters: { session_id: 5 } }, 'filters.session_id must be a session id, a list of session ids, or {"in": [...]}'],
      [{ filters: { session_id: { in: 's1' } } }, 'filters.session_id must be a session id, a list of session ids, or {"in": [...]}'],
      [{ filters: { session_id: { in: ['s1'], ne: 'x' } } }, 'filters.session_id must be a session id, a list of session ids, or {"in": [...]}'],
      [{ filters: { session_id: ['s1', ''] } }, 'filters.session_id entries must be non-empty strings'],
      [{ filters: { session_id: ['s1', 2] } }, 'filters.session_id entries must be non-empty strings'],
      [{ filters: { session_id: Array.from({ length: 1001 }, (_, i) => `s${i}`) } }, 'filters.session_id supports at most 1000 sessions per request'],
      [{ session_id: 's2', filters: { session_id: ['s1'] } }, 'session_id must be included in filters.session_id'],
    ];
    for (const [body, detail] of cases) {
      const response = await api.post(url, body);
      expect(response.status).toBe(422);
      expect(response.body).toEqual({ detail });
    }
    // entries must be session ids (scopes.md S8 point 10; S11): `*` is no wildcard, and chat refuses the same
    const invalid = (v: string) => `Invalid session id in filters.session_id: ${v}. Session ids match ^[a-zA-Z0-9_-]+$`;
    const refused: [unknown, string][] = [
      ['*', invalid("'*'")],
      [['s1', '*'], invalid("'*'")],
      [{ in: ['*'] }, invalid("'*'")],
      ['a b', invalid("'a b'")],
      ['a/b', invalid("'a/b'")],
      ['a.b', invalid("'a.b'")],
      ['a%b', invalid("'a%b'")],
      ['s1;drop', invalid("'s1;drop'")],
      ["it's", invalid('"it\'s"')],
      ['new\nline', invalid("'new\\nline'")],
      [['s1', 'a.b', ''], invalid("'a.b'")],
      [['s1', '', 'a.b'], 'filters.session_id entries must be non-empty strings'],
    ];
    for (const [value, detail] of refused) {
      for (const route of ['representation', 'chat']) {
        const response = await api.post(`/v3/workspaces/${ws}/peers/alice/${route}`, { query: 'q', filters: { session_id: value } });
        expect({ route, value, status: response.status, body: response.body }).toEqual({ route, value, status: 422, body: { detail } });
      }
    }
    expect((await api.post(url, { filters: { session_id: ['Valid_name-123', 's1'] } })).status).toBe(200);
    // the entries as sent are counted, before their checks and before duplicates collapse
    expect((await api.post(url, { filters: { session_id: Array.from({ length: 1000 }, () => 's1') } })).status).toBe(200);
    for (const entries of [Array.from({ length: 1001 }, () => 's1'), [...Array.from({ length: 1000 }, () => 's1'), '']]) {
      const response = await api.post(url, { filters: { session_id: { in: entries } } });
      expect(response.status).toBe(422);
      expect(response.body).toEqual({ detail: 'filters.session_id supports at most 1000 sessions per request' });
    }
  });

  it('narrows to full-text matches with search_query, at most search_top_k', async () => {
    const ws = await setUp();
    const [tea, coffee, both] = await conclude(ws, [
      { content: 'Alice drinks tea', observer_id: 'alice', observed_id: 'alice' },
      { content: 'Alice drinks coffee', observer_id: 'alice', observed_id: 'alice' },
      { content: 'Alice mixes tea and coffee', observer_id: 'alice', observed_id: 'alice' },
    ]);
    const url = `/v3/workspaces/${ws}/peers/alice/representation`;
    expect((await api.post(url, { search_query: 'TEA' })).body.representation).toBe(explicitSection([both, tea]));
    // the best match is chosen first; shown newest first
    expect((await api.post(url, { search_query: 'tea coffee', search_top_k: 1 })).body.representation).toBe(explicitSection([both]));
    // max_conclusions caps the matches too
    expect((await api.post(url, { search_query: 'tea coffee', search_top_k: 5, max_conclusions: 1 })).body.representation).toBe(
      explicitSection([both]),
    );
    expect((await api.post(url, { search_query: 'coffee' })).body.representation).toBe(explicitSection([both, coffee]));
    expect((await api.post(url, { search_query: 'submarine' })).body.representation).toBe('');
    // a query without words does not narrow; distance and include_most_frequent are accepted
    expect((await api.post(url, { search_query: '?!', search_max_distance: 0.3, include_most_frequent: true })).body.representation).toBe(
      explicitSection([both, coffee, tea]),
    );
  });

  it('validates the body', async () => {
    const ws = await setUp();
    const url = `/v3/workspaces/${ws}/peers/alice/representation`;
    expect((await api.post(url)).body.detail).toEqual([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
    const bad = await api.post(url, { max_conclusions: 0, search_top_k: 101, search_max_distance: 2, filters: 'x' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { type: string; loc: unknown[] }) => [d.type, d.loc])).toEqual([
      ['dict_type', ['body', 'filters']],
      ['less_than_equal', ['body', 'search_top_k']],
      ['less_than_equal', ['body', 'search_max_distance']],
      ['greater_than_equal', ['body', 'max_conclusions']],
    ]);
  });
});

describe('GET /v3/workspaces/{w}/peers/{p}/context', () => {
  it('returns the representation and card of the target from the observer', async () => {
    const ws = await setUp();
    const [own, ofBob] = await conclude(ws, [
      { content: 'Alice paints', observer_id: 'alice', observed_id: 'alice' },
      { content: 'Bob cooks pasta', observer_id: 'alice', observed_id: 'bob' },
    ]);
    await api.put(`/v3/workspaces/${ws}/peers/alice/card`, { peer_card: ['Painter'] });
    await api.put(`/v3/workspaces/${ws}/peers/alice/card?target=bob`, { peer_card: ['Cook'] });

    const self = await api.get(`/v3/workspaces/${ws}/peers/alice/context`);
    expect(self.status).toBe(200);
    expect(Object.keys(self.body)).toEqual(['peer_id', 'target_id', 'representation', 'peer_card']);
    expect(self.body).toEqual({ peer_id: 'alice', target_id: 'alice', representation: explicitSection([own]), peer_card: ['Painter'] });

    const bob = await api.get(`/v3/workspaces/${ws}/peers/alice/context?target=bob&include_most_frequent=false`);
    expect(bob.body).toEqual({ peer_id: 'alice', target_id: 'bob', representation: explicitSection([ofBob]), peer_card: ['Cook'] });

    // bob has no card and no conclusions of his own
    expect((await api.get(`/v3/workspaces/${ws}/peers/bob/context`)).body).toEqual({
      peer_id: 'bob',
      target_id: 'bob',
      representation: '',
      peer_card: null,
    });
  });

  it('honours max_conclusions and search_query', async () => {
    const ws = await setUp();
    const [older, newer] = await conclude(ws, [
      { content: 'Alice plays violin', observer_id: 'alice', observed_id: 'alice' },
      { content: 'Alice climbs', observer_id: 'alice', observed_id: 'alice' },
    ]);
    const url = `/v3/workspaces/${ws}/peers/alice/context`;
    expect((await api.get(`${url}?max_conclusions=1`)).body.representation).toBe(explicitSection([newer]));
    expect((await api.get(`${url}?search_query=violin&search_top_k=3`)).body.representation).toBe(explicitSection([older]));
  });

  it('answers 404 for an unknown observer and 422 for bad parameters', async () => {
    const ws = await setUp();
    const missing = await api.get(`/v3/workspaces/${ws}/peers/ghost/context`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: `Peer ghost not found in workspace ${ws}` });
    const bad = await api.get(`/v3/workspaces/${ws}/peers/alice/context?search_top_k=0&include_most_frequent=maybe&max_conclusions=x`);
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { type: string; loc: unknown[] }) => [d.type, d.loc])).toEqual([
      ['greater_than_equal', ['query', 'search_top_k']],
      ['bool_parsing', ['query', 'include_most_frequent']],
      ['int_parsing', ['query', 'max_conclusions']],
    ]);
  });
});

describe('deleting a workspace', () => {
  it('removes its conclusions and peer cards', async () => {
    const ws = await setUp();
    await conclude(ws, [{ content: 'Alice knits', observer_id: 'alice', observed_id: 'bob', session_id: 's1' }]);
    await api.put(`/v3/workspaces/${ws}/peers/alice/card`, { peer_card: ['Knitter'] });
    for (const session of ['s1', 's2']) expect((await api.delete(`/v3/workspaces/${ws}/sessions/${session}`)).status).toBe(202);
    expect((await api.delete(`/v3/workspaces/${ws}`)).status).toBe(202);

    // the same ids again start empty
    await api.put(`/v3/workspaces/${ws}/peers/alice`, {});
    expect((await api.get(`/v3/workspaces/${ws}/peers/alice/card`)).body).toEqual({ peer_card: null });
    expect((await api.post(`/v3/workspaces/${ws}/conclusions/list`)).body.total).toBe(0);
    const rows = await api.database.driver.all('SELECT id FROM conclusions WHERE workspace_id = ?', [ws]);
    expect(rows).toEqual([]);
  });
});

describe('peer memory auth (workspace + peer scope)', () => {
  let authed: TestApi;
  beforeAll(async () => {
    authed = await buildTestApp({ AUTH_USE_AUTH: 'true' });
  });
  afterAll(() => authed.close());

  it('lets admin, workspace and the peer’s own tokens in; refuses other peers and sessions with 401', async () => {
    const ws = uniqueId();
    const admin = authed.token({ isAdmin: true });
    await authed.post(`/v3/workspaces/${ws}/sessions`, { id: 's', peers: { alice: {}, bob: {} } }, { token: admin });
    const base = `/v3/workspaces/${ws}/peers/alice`;
    const calls = (token?: string) => [
      () => authed.get(`${base}/card`, { token }),
      () => authed.put(`${base}/card`, { peer_card: ['x'] }, { token }),
      () => authed.get(`${base}/context`, { token }),
      () => authed.post(`${base}/representation`, {}, { token }),
    ];
    for (const call of calls()) expect((await call()).body).toEqual({ detail: 'No access token provided' });
    for (const token of [admin, authed.token({ workspaceId: ws }), authed.token({ workspaceId: ws, peerId: 'alice' })]) {
      for (const call of calls(token)) expect((await call()).status).toBe(200);
    }
    for (const token of [
      authed.token({ workspaceId: ws, peerId: 'bob' }),
      authed.token({ workspaceId: ws, sessionId: 's' }),
      authed.token({ workspaceId: uniqueId(), peerId: 'alice' }),
    ]) {
      for (const call of calls(token)) {
        const response = await call();
        expect(response.status).toBe(401);
        expect(response.body).toEqual({ detail: 'JWT not permissioned for this resource' });
      }
    }
  });
});
