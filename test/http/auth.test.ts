import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, TEST_SECRET, uniqueId, type TestApi, type TestResponse } from '../support/test-app.js';
import { ADMIN_ONLY, INVALID, MISSING_WORKSPACE, NOT_PERMITTED, NO_TOKEN, UNAUTHORIZED } from '../support/auth-details.js';

/*
 * Authentication and authorization with AUTH_USE_AUTH on (contract-v3 §2, §3.5, §7.7, §9.2).
 * Every expected status and body comes from the contract.
 */


let api: TestApi;
let admin: string;
beforeAll(async () => {
  api = await buildTestApp({ AUTH_USE_AUTH: 'true' });
  admin = api.token({ isAdmin: true });
});
afterAll(() => api.close());

/** Signs any payload; the options make deliberately bad tokens. */
function sign(payload: Record<string, unknown>, options: { key?: string; algorithm?: 'HS256' | 'HS384' | 'HS512' } = {}) {
  return createSigner({ key: options.key ?? TEST_SECRET, algorithm: options.algorithm ?? 'HS256', noTimestamp: true })(payload);
}

function decodePayload(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
}

/** A 401 with the exact §2.3 body. */
function expectDenied(response: TestResponse, detail: string, label = '') {
  expect(response.status, `${label} ${response.text}`).toBe(401);
  expect(response.body, label).toEqual({ detail });
}

const auth = (token: string | undefined) => (token === undefined ? {} : { token });

/**
 * A workspace with peers alice, bob (members of s1) and carol (no session), an empty session s2,
 * and one webhook endpoint per generation's delete test.
 */
async function seedWorkspace(ws = uniqueId()) {
  const opts = { token: admin };
  expect((await api.post('/v3/workspaces', { id: ws, metadata: { seeded: true } }, opts)).status).toBe(201);
  expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {}, bob: {} } }, opts)).status).toBe(201);
  expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's2' }, opts)).status).toBe(201);
  expect((await api.post(`/v3/workspaces/${ws}/peers`, { id: 'carol' }, opts)).status).toBe(201);
  const hook3 = await api.post(`/v3/workspaces/${ws}/webhooks`, { url: 'https://example.com/v3' }, opts);
  const hook2 = await api.post(`/v3/workspaces/${ws}/webhooks`, { url: 'https://example.com/v2' }, opts);
  expect(hook3.status).toBe(201);
  expect(hook2.status).toBe(201);
  return { ws, hook3: hook3.body.id as string, hook2: hook2.body.id as string };
}

async function newWebhook(ws: string): Promise<string> {
  const response = await api.post(`/v3/workspaces/${ws}/webhooks`, { url: `https://example.com/${uniqueId('h')}` }, { token: admin });
  expect(response.status).toBe(201);
  return response.body.id;
}

describe('§3.5 auth summary for the priority operations', () => {
  type Column = 'admin' | 'w' | 'wp' | 'wpOther' | 'ws' | 'wsOther' | 'wrongW' | 'wrongWp' | 'none';
  const columns: Column[] = ['admin', 'w', 'wp', 'wpOther', 'ws', 'wsOther', 'wrongW', 'wrongWp', 'none'];
  /** `number` = the success status; `string` = the 401 detail. */
  type Row = Record<Column, number | string>;

  let ws: string;
  let tokens: Record<Column, string | undefined>;
  beforeAll(async () => {
    ({ ws } = await seedWorkspace());
    const other = uniqueId();
    tokens = {
      admin,
      w: api.token({ workspaceId: ws }),
      wp: api.token({ workspaceId: ws, peerId: 'alice' }),
      wpOther: api.token({ workspaceId: ws, peerId: 'bob' }),
      ws: api.token({ workspaceId: ws, sessionId: 's1' }),
      wsOther: api.token({ workspaceId: ws, sessionId: 's2' }),
      wrongW: api.token({ workspaceId: other }),
      wrongWp: api.token({ workspaceId: other, peerId: 'alice', sessionId: 's1' }),
      none: undefined,
    };
  });

  async function check(name: string, row: Row, send: (token: string | undefined) => Promise<TestResponse>, okBody?: (r: TestResponse) => void) {
    for (const column of columns) {
      const response = await send(tokens[column]);
      const expected = row[column];
      const label = `${name} / ${column}`;
      if (typeof expected === 'number') {
        expect(response.status, `${label} ${response.text}`).toBe(expected);
        okBody?.(response);
      } else {
        expectDenied(response, expected, label);
      }
    }
  }

  it('v3 add peers to a session: admin, {w}, {w,s} with s == path', async () => {
    const row: Row = { admin: 200, w: 200, wp: NOT_PERMITTED, wpOther: NOT_PERMITTED, ws: 200, wsOther: NOT_PERMITTED, wrongW: NOT_PERMITTED, wrongWp: NOT_PERMITTED, none: NO_TOKEN };
    await check('v3 add peers', row, (t) => api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { dave: {} }, auth(t)), (r) =>
      expect(r.body).toMatchObject({ id: 's1', workspace_id: ws, is_active: true }),
    );
  });

  it('v2 add peers to a session: any token whose w matches', async () => {
    const row: Row = { admin: 200, w: 200, wp: 200, wpOther: 200, ws: 200, wsOther: 200, wrongW: NOT_PERMITTED, wrongWp: NOT_PERMITTED, none: NO_TOKEN };
    await check('v2 add peers', row, (t) => api.post(`/v2/workspaces/${ws}/sessions/s1/peers`, { dave: {} }, auth(t)), (r) =>
      expect(r.body).toMatchObject({ id: 's1', workspace_id: ws }),
    );
  });

  it('v2 sessions of a peer: any token whose w matches, whatever its p or s', async () => {
    const row: Row = { admin: 200, w: 200, wp: 200, wpOther: 200, ws: 200, wsOther: 200, wrongW: NOT_PERMITTED, wrongWp: NOT_PERMITTED, none: NO_TOKEN };
    await check('v2 peer sessions', row, (t) => api.post(`/v2/workspaces/${ws}/peers/alice/sessions`, {}, auth(t)), (r) =>
      expect(r.body.items.map((s: { id: string }) => s.id)).toEqual(['s1']),
    );
  });

  it('v3 sessions of a peer: admin, {w}, or {w,p} with p == path; session tokens refused', async () => {
    const row: Row = { admin: 200, w: 200, wp: 200, wpOther: NOT_PERMITTED, ws: NOT_PERMITTED, wsOther: NOT_PERMITTED, wrongW: NOT_PERMITTED, wrongWp: NOT_PERMITTED, none: NO_TOKEN };
    await check('v3 peer sessions', row, (t) => api.post(`/v3/workspaces/${ws}/peers/alice/sessions`, {}, auth(t)), (r) =>
      expect(r.body.items.map((s: { id: string }) => s.id)).toEqual(['s1']),
    );
  });

  it('v3: the path ids win over query parameters of the same name', async () => {
    const alice = tokens.wp;
    expectDenied(await api.post(`/v3/workspaces/${ws}/peers/bob/sessions?peer_id=alice`, {}, { token: alice }), NOT_PERMITTED, 'peer');
    const s1 = tokens.ws;
    expectDenied(await api.post(`/v3/workspaces/${ws}/sessions/s2/peers?session_id=s1`, {}, { token: s1 }), NOT_PERMITTED, 'session');
  });

  it('v3 peers list: admin or {w} only', async () => {
    const row: Row = { admin: 200, w: 200, wp: NOT_PERMITTED, wpOther: NOT_PERMITTED, ws: NOT_PERMITTED, wsOther: NOT_PERMITTED, wrongW: NOT_PERMITTED, wrongWp: NOT_PERMITTED, none: NO_TOKEN };
    await check('v3 peers list', row, (t) => api.post(`/v3/workspaces/${ws}/peers/list`, {}, auth(t)), (r) =>
      expect(r.body.items.map((p: { id: string }) => p.id)).toContain('carol'),
    );
  });

  it('v3 queue jobs list and retry (workspace routes): admin or {w} only', async () => {
    const row: Row = { admin: 200, w: 200, wp: NOT_PERMITTED, wpOther: NOT_PERMITTED, ws: NOT_PERMITTED, wsOther: NOT_PERMITTED, wrongW: NOT_PERMITTED, wrongWp: NOT_PERMITTED, none: NO_TOKEN };
    await check('v3 queue jobs list', row, (t) => api.post(`/v3/workspaces/${ws}/queue/jobs/list`, { status: 'pending' }, auth(t)), (r) =>
      expect(r.body).toMatchObject({ page: 1, size: 50 }),
    );
    // no such dead job: the allowed tokens reach the route's 404, the others its 401
    const retry: Row = { ...row, admin: 404, w: 404 };
    await check('v3 queue job retry', retry, (t) => api.post(`/v3/workspaces/${ws}/queue/jobs/no-such-job/retry`, undefined, auth(t)), (r) =>
      expect(r.body).toEqual({ detail: `Dead job no-such-job not found in workspace ${ws}` }),
    );
  });

  it('v3 workspace statistics: admin or {w} only', async () => {
    const row: Row = { admin: 200, w: 200, wp: NOT_PERMITTED, wpOther: NOT_PERMITTED, ws: NOT_PERMITTED, wsOther: NOT_PERMITTED, wrongW: NOT_PERMITTED, wrongWp: NOT_PERMITTED, none: NO_TOKEN };
    await check('v3 workspace statistics', row, (t) => api.get(`/v3/workspaces/${ws}/statistics`, auth(t)), (r) =>
      expect(r.body).toMatchObject({ workspace_id: ws, model_usage: { hours: 24, modules: [] } }),
    );
  });

  it('v2 peers list: any token whose w matches', async () => {
    const row: Row = { admin: 200, w: 200, wp: 200, wpOther: 200, ws: 200, wsOther: 200, wrongW: NOT_PERMITTED, wrongWp: NOT_PERMITTED, none: NO_TOKEN };
    await check('v2 peers list', row, (t) => api.post(`/v2/workspaces/${ws}/peers/list`, {}, auth(t)), (r) =>
      expect(r.body.items.map((p: { id: string }) => p.id)).toContain('carol'),
    );
  });

  it('v3 delete webhook: admin or {w} (204); peer and session tokens refused', async () => {
    const row: Row = { admin: 204, w: 204, wp: NOT_PERMITTED, wpOther: NOT_PERMITTED, ws: NOT_PERMITTED, wsOther: NOT_PERMITTED, wrongW: NOT_PERMITTED, wrongWp: NOT_PERMITTED, none: NO_TOKEN };
    for (const column of columns) {
      const id = await newWebhook(ws);
      const response = await api.delete(`/v3/workspaces/${ws}/webhooks/${id}`, undefined, auth(tokens[column]));
      const expected = row[column];
      if (typeof expected === 'number') {
        expect(response.status, column).toBe(204);
        expect(response.text).toBe('');
      } else {
        expectDenied(response, expected, column);
        // refused means not deleted
        expect((await api.delete(`/v3/workspaces/${ws}/webhooks/${id}`, undefined, { token: admin })).status).toBe(204);
      }
    }
  });

  it('v2 delete webhook is self-authorizing: any token whose w is absent or matches (200 null)', async () => {
    const row: Row = { admin: 200, w: 200, wp: 200, wpOther: 200, ws: 200, wsOther: 200, wrongW: UNAUTHORIZED, wrongWp: UNAUTHORIZED, none: NO_TOKEN };
    for (const column of columns) {
      const id = await newWebhook(ws);
      const response = await api.delete(`/v2/workspaces/${ws}/webhooks/${id}`, undefined, auth(tokens[column]));
      const expected = row[column];
      if (typeof expected === 'number') {
        expect(response.status, column).toBe(200);
        expect(response.text).toBe('null');
      } else {
        expectDenied(response, expected, column);
        expect((await api.delete(`/v2/workspaces/${ws}/webhooks/${id}`, undefined, { token: admin })).status).toBe(200);
      }
    }
    // a token without `w` passes the v2 webhook check
    const id = await newWebhook(ws);
    const peerOnly = await api.delete(`/v2/workspaces/${ws}/webhooks/${id}`, undefined, { token: api.token({ peerId: 'alice' }) });
    expect(peerOnly.status).toBe(200);
  });

  it('v2 refuses a token without w even when p equals the path peer (no missing-workspace check)', async () => {
    const peerOnly = api.token({ peerId: 'alice' });
    expectDenied(await api.post(`/v2/workspaces/${ws}/peers/alice/sessions`, {}, { token: peerOnly }), NOT_PERMITTED);
    const sessionOnly = api.token({ sessionId: 's1' });
    expectDenied(await api.post(`/v2/workspaces/${ws}/sessions/s1/peers`, {}, { token: sessionOnly }), NOT_PERMITTED);
  });
});

describe('§2.3 token verification bodies', () => {
  let ws: string;
  let url: string;
  beforeAll(async () => {
    ({ ws } = await seedWorkspace());
    url = `/v3/workspaces/${ws}/peers/list`;
  });

  it('no header, another scheme or an empty token: No access token provided', async () => {
    expectDenied(await api.post(url), NO_TOKEN, 'no header');
    for (const header of ['Basic dXNlcjpwYXNz', 'Token abc', 'Bearer', 'Bearer ', 'Bearer    ', `Basic ${admin}`, admin]) {
      expectDenied(await api.post(url, undefined, { headers: { authorization: header } }), NO_TOKEN, header.slice(0, 20));
    }
    expectDenied(await api.post(`/v2/workspaces/${ws}/peers/list`), NO_TOKEN, 'v2');
  });

  it('the scheme is case-insensitive', async () => {
    for (const scheme of ['bearer', 'BEARER', 'Bearer', 'bEaReR']) {
      const response = await api.post(url, undefined, { headers: { authorization: `${scheme} ${admin}` } });
      expect(response.status, scheme).toBe(200);
    }
  });

  it('malformed, wrongly signed or non-HS256 tokens: Invalid JWT', async () => {
    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"ad":true}').toString('base64url')}.`;
    const bad = [
      'garbage',
      'a.b.c',
      `${admin}x`,
      sign({ ad: true }, { key: 'another-secret-of-reasonable-length' }),
      sign({ w: ws }, { key: `${TEST_SECRET}!` }),
      sign({ ad: true }, { algorithm: 'HS384' }),
      sign({ ad: true }, { algorithm: 'HS512' }),
      none,
    ];
    for (const token of bad) {
      expectDenied(await api.post(url, undefined, { token }), INVALID, token.slice(0, 30));
      expectDenied(await api.post(`/v2/workspaces/${ws}/peers/list`, undefined, { token }), INVALID, `v2 ${token.slice(0, 30)}`);
    }
  });

  it('a numeric exp in the past: Invalid JWT', async () => {
    const expired = sign({ w: ws, exp: Math.floor(Date.now() / 1000) - 60 });
    expectDenied(await api.post(url, undefined, { token: expired }), INVALID);
    expectDenied(await api.post(`/v2/workspaces/${ws}/peers/list`, undefined, { token: expired }), INVALID, 'v2');
    const adminExpired = sign({ ad: true, exp: 1 });
    expectDenied(await api.post('/v3/workspaces/list', undefined, { token: adminExpired }), INVALID, 'admin');
  });

  it('v3: a peer or session claim without a workspace claim is refused on every kind of route', async () => {
    const tokens = [
      api.token({ peerId: 'alice' }),
      api.token({ sessionId: 's1' }),
      api.token({ peerId: 'alice', sessionId: 's1' }),
      sign({ w: '', p: 'alice' }),
    ];
    for (const token of tokens) {
      expectDenied(await api.post(url, undefined, { token }), MISSING_WORKSPACE, 'W route');
      expectDenied(await api.post(`/v3/workspaces/${ws}/peers/alice/sessions`, undefined, { token }), MISSING_WORKSPACE, 'WP route');
      expectDenied(await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, {}, { token }), MISSING_WORKSPACE, 'WS route');
      expectDenied(await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1' }, { token }), MISSING_WORKSPACE, 'SELF route');
      expectDenied(await api.post('/v3/workspaces/list', undefined, { token }), MISSING_WORKSPACE, 'admin route');
    }
  });

  it('empty-string claims count as absent; any truthy `ad` is admin', async () => {
    // {"w": ws, "p": ""} is a plain workspace token: allowed on a W route
    expect((await api.post(url, undefined, { token: sign({ w: ws, p: '', s: '' }) })).status).toBe(200);
    for (const ad of [true, 1, 'yes', [1], { a: 1 }]) {
      const response = await api.post('/v3/workspaces/list', { filters: { id: ws } }, { token: sign({ ad }) });
      expect(response.status, JSON.stringify(ad)).toBe(200);
      expect(response.body.total).toBe(1);
    }
    for (const ad of [false, 0, '', [], {}]) {
      expectDenied(await api.post('/v3/workspaces/list', undefined, { token: sign({ ad, w: ws }) }), ADMIN_ONLY, JSON.stringify(ad));
    }
  });

  it('a token with no w/p/s (and not admin) reaches no workspace-scoped route', async () => {
    const bare = api.token({});
    expectDenied(await api.post(url, undefined, { token: bare }), NOT_PERMITTED, 'v3');
    expectDenied(await api.post(`/v2/workspaces/${ws}/peers/list`, undefined, { token: bare }), NOT_PERMITTED, 'v2');
  });
});

describe('admin-only routes', () => {
  it('refuse every non-admin token with Resource requires admin privileges', async () => {
    const ws = uniqueId();
    const nonAdmin = [
      api.token({ workspaceId: ws }),
      api.token({ workspaceId: ws, peerId: 'alice' }),
      api.token({ workspaceId: ws, sessionId: 's1' }),
      api.token({}),
    ];
    const routes: [string, string][] = [
      ['POST', '/v3/workspaces/list'],
      ['POST', `/v3/keys?workspace_id=${ws}`],
      ['POST', '/v2/workspaces/list'],
      ['POST', `/v2/keys?workspace_id=${ws}`],
    ];
    for (const [method, route] of routes) {
      for (const token of nonAdmin) expectDenied(await api.request(method, route, undefined, { token }), ADMIN_ONLY, route);
      expectDenied(await api.request(method, route), NO_TOKEN, `${route} without token`);
      const ok = await api.request(method, route, undefined, { token: admin });
      expect(ok.status, route).toBe(200);
    }
  });
});

describe('self-authorizing create routes (§2.5)', () => {
  it('POST /v3/workspaces: a non-admin token needs w == body id', async () => {
    const a = uniqueId();
    const b = uniqueId();
    expectDenied(await api.post('/v3/workspaces', { id: b }, { token: api.token({ workspaceId: a }) }), UNAUTHORIZED, 'w != id');
    expectDenied(await api.post('/v3/workspaces', { id: b }, { token: api.token({ workspaceId: a, peerId: 'p', sessionId: 's' }) }), UNAUTHORIZED);
    expectDenied(await api.post('/v3/workspaces', { id: b }, { token: api.token({}) }), UNAUTHORIZED, 'no claims');
    expectDenied(await api.post('/v3/workspaces', { id: b }), NO_TOKEN);
    expectDenied(await api.post('/v2/workspaces', { id: b }, { token: api.token({ workspaceId: a }) }), UNAUTHORIZED, 'v2');
    // nothing was created for b
    expect((await api.post('/v3/workspaces/list', { filters: { id: b } }, { token: admin })).body.total).toBe(0);

    const created = await api.post('/v3/workspaces', { id: a }, { token: api.token({ workspaceId: a }) });
    expect(created.status).toBe(201);
    expect(created.body.id).toBe(a);
    // peer and session tokens of that workspace pass too
    expect((await api.post('/v3/workspaces', { id: a }, { token: api.token({ workspaceId: a, peerId: 'x' }) })).status).toBe(200);
    expect((await api.post('/v3/workspaces', { id: a }, { token: api.token({ workspaceId: a, sessionId: 'y' }) })).status).toBe(200);
    expect((await api.post('/v2/workspaces', { id: a }, { token: api.token({ workspaceId: a }) })).status).toBe(200);
  });

  it('POST /v3/workspaces/{w}/peers: w must equal the path, p the body id; session tokens create any peer', async () => {
    const { ws } = await seedWorkspace();
    const url = `/v3/workspaces/${ws}/peers`;
    expectDenied(await api.post(url, { id: 'zoe' }, { token: api.token({ workspaceId: uniqueId() }) }), UNAUTHORIZED, 'other w');
    expectDenied(await api.post(url, { id: 'zoe' }, { token: api.token({ workspaceId: ws, peerId: 'alice' }) }), UNAUTHORIZED, 'p != id');
    expectDenied(await api.post(url, { id: 'zoe' }), NO_TOKEN);
    expect((await api.post(url, { id: 'alice' }, { token: api.token({ workspaceId: ws, peerId: 'alice' }) })).status).toBe(200);
    expect((await api.post(url, { id: 'zoe' }, { token: api.token({ workspaceId: ws }) })).status).toBe(201);
    expect((await api.post(url, { id: 'yan' }, { token: api.token({ workspaceId: ws, sessionId: 's1' }) })).status).toBe(201);
    expect((await api.post(url, { id: 'xi' }, { token: api.token({ workspaceId: ws, sessionId: 'nope' }) })).status).toBe(201);
    const peers = await api.post(`${url}/list`, { filters: { id: { in: ['zoe', 'yan', 'xi'] } } }, { token: admin });
    expect(peers.body.total).toBe(3);
  });

  it('POST /v3/workspaces/{w}/sessions: w must equal the path, s the body id; peer tokens create any session', async () => {
    const { ws } = await seedWorkspace();
    const url = `/v3/workspaces/${ws}/sessions`;
    expectDenied(await api.post(url, { id: 'n1' }, { token: api.token({ workspaceId: uniqueId() }) }), UNAUTHORIZED, 'other w');
    expectDenied(await api.post(url, { id: 'n1' }, { token: api.token({ workspaceId: ws, sessionId: 's1' }) }), UNAUTHORIZED, 's != id');
    expectDenied(await api.post(url, { id: 'n1' }), NO_TOKEN);
    expect((await api.post(url, { id: 's1' }, { token: api.token({ workspaceId: ws, sessionId: 's1' }) })).status).toBe(200);
    expect((await api.post(url, { id: 'n1' }, { token: api.token({ workspaceId: ws }) })).status).toBe(201);
    expect((await api.post(url, { id: 'n2' }, { token: api.token({ workspaceId: ws, peerId: 'alice' }) })).status).toBe(201);
    expect((await api.post(url, { id: 'n3' }, { token: api.token({ workspaceId: ws, peerId: 'nobody' }) })).status).toBe(201);
    const sessions = await api.post(`${url}/list`, { filters: { id: { in: ['n1', 'n2', 'n3'] } } }, { token: admin });
    expect(sessions.body.total).toBe(3);
  });

  it('quirk: a token with no claims passes the peer/session create checks in any workspace', async () => {
    const ws = uniqueId();
    const bare = api.token({});
    expect((await api.post(`/v3/workspaces/${ws}/peers`, { id: 'p' }, { token: bare })).status).toBe(201);
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's' }, { token: bare })).status).toBe(201);
    expectDenied(await api.post('/v3/workspaces', { id: ws }, { token: bare }), UNAUTHORIZED);
  });
});

describe('member-read routes (WS+MR)', () => {
  it('a peer token lists the members of a session it actively belongs to, and no longer after leaving', async () => {
    const { ws } = await seedWorkspace();
    const url = `/v3/workspaces/${ws}/sessions/s1/peers`;
    const alice = api.token({ workspaceId: ws, peerId: 'alice' });
    const listed = await api.get(url, { token: alice });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((p: { id: string }) => p.id).sort()).toEqual(['alice', 'bob']);

    // carol exists but is not a member; alice is not a member of s2
    expectDenied(await api.get(url, { token: api.token({ workspaceId: ws, peerId: 'carol' }) }), NOT_PERMITTED, 'non-member');
    expectDenied(await api.get(`/v3/workspaces/${ws}/sessions/s2/peers`, { token: alice }), NOT_PERMITTED, 'other session');
    expect((await api.get(url, { token: api.token({ workspaceId: ws, sessionId: 's1' }) })).status).toBe(200);
    expectDenied(await api.get(url, { token: api.token({ workspaceId: ws, sessionId: 's2' }) }), NOT_PERMITTED, 'other session token');

    expect((await api.delete(url, ['alice'], { token: admin })).status).toBe(200);
    expectDenied(await api.get(url, { token: alice }), NOT_PERMITTED, 'after leaving');
    // the check is made on every request: rejoining restores access
    expect((await api.post(url, { alice: {} }, { token: admin })).status).toBe(200);
    expect((await api.get(url, { token: alice })).status).toBe(200);
  });

  it('a peer token reads only its own session-level config', async () => {
    const { ws } = await seedWorkspace();
    const base = `/v3/workspaces/${ws}/sessions/s1/peers`;
    const bob = api.token({ workspaceId: ws, peerId: 'bob' });
    expectDenied(await api.get(`${base}/alice/config`, { token: bob }), NOT_PERMITTED, "another peer's config");
    const own = await api.get(`${base}/bob/config`, { token: bob });
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ observe_me: null, observe_others: null });
    // a non-member cannot read even its own config
    expectDenied(await api.get(`/v3/workspaces/${ws}/sessions/s2/peers/carol/config`, { token: api.token({ workspaceId: ws, peerId: 'carol' }) }), NOT_PERMITTED);
    // workspace and session tokens read anyone's
    expect((await api.get(`${base}/alice/config`, { token: api.token({ workspaceId: ws }) })).status).toBe(200);
    expect((await api.get(`${base}/alice/config`, { token: api.token({ workspaceId: ws, sessionId: 's1' }) })).status).toBe(200);
    // the WS route that writes it is not member-read
    expectDenied(await api.put(`${base}/bob/config`, { observe_me: true }, { token: bob }), NOT_PERMITTED, 'set config');
  });
});

describe('processing order (§1.3)', () => {
  it('malformed JSON is a 422 before authentication', async () => {
    const ws = uniqueId();
    for (const route of [`/v3/workspaces/${ws}/peers/list`, `/v2/workspaces/${ws}/peers/list`, `/v3/workspaces/${ws}/sessions/s/peers`]) {
      const response = await api.post(route, undefined, { raw: '{"filters": }', headers: { 'content-type': 'application/json' } });
      expect(response.status, route).toBe(422);
      expect(response.body).toEqual({
        detail: [{ type: 'json_invalid', loc: ['body', 12], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }],
      });
    }
  });

  it('routing answers (404, 405, 307) come before authentication', async () => {
    expect((await api.get('/v3/nowhere')).body).toEqual({ detail: 'Not Found' });
    const wrongMethod = await api.get('/v3/keys');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.body).toEqual({ detail: 'Method Not Allowed' });
    const slash = await api.post(`/v3/workspaces/${uniqueId()}/peers/list/`);
    expect(slash.status).toBe(307);
    expect((await api.get('/health')).body).toEqual({ status: 'ok' });
  });

  it('authentication runs before parameter and body validation', async () => {
    const ws = uniqueId();
    expectDenied(await api.post(`/v3/workspaces/${ws}/peers/list?page=0`), NO_TOKEN, 'page=0');
    expectDenied(await api.post(`/v2/workspaces/${ws}/peers/alice/sessions?size=1000`), NO_TOKEN, 'v2 size');
    expectDenied(await api.post(`/v3/workspaces/${ws}/sessions/s/peers`), NO_TOKEN, 'missing body');
    expectDenied(await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, ['not', 'a', 'map']), NO_TOKEN, 'bad body');
    expectDenied(await api.post(`/v3/workspaces/${ws}/peers/list?page=0`, undefined, { token: api.token({ workspaceId: uniqueId() }) }), NOT_PERMITTED);
    // with a valid token the same request reaches validation
    const validated = await api.post(`/v3/workspaces/${ws}/peers/list?page=0`, undefined, { token: api.token({ workspaceId: ws }) });
    expect(validated.status).toBe(422);
    expect(validated.body.detail[0]).toMatchObject({ type: 'greater_than_equal', loc: ['query', 'page'] });
  });
});

describe('keys (§7.7)', () => {
  const keysOf = async (route: string, query: string, token = admin) => api.post(`${route}${query}`, undefined, { token });

  it('v3 and v2 refuse a key with no scope; v3 also a peer/session key without a workspace', async () => {
    for (const route of ['/v3/keys', '/v2/keys']) {
      const none = await keysOf(route, '');
      expect(none.status, route).toBe(422);
      expect(none.body).toEqual({ detail: 'At least one of workspace_id, peer_id, or session_id must be provided' });
    }
    for (const query of ['?peer_id=alice', '?session_id=s1', '?peer_id=alice&session_id=s1']) {
      const response = await keysOf('/v3/keys', query);
      expect(response.status, query).toBe(422);
      expect(response.body).toEqual({ detail: 'workspace_id is required when scoping a key to a peer or session' });
    }
    // v2 has no such rule, but a key without `w` is useless on v2 routes
    const v2 = await keysOf('/v2/keys', '?peer_id=alice');
    expect(v2.status).toBe(200);
    expect(decodePayload(v2.body.key)).toMatchObject({ p: 'alice' });
    expect(decodePayload(v2.body.key)).not.toHaveProperty('w');
    expectDenied(await api.post(`/v2/workspaces/${uniqueId()}/peers/alice/sessions`, {}, { token: v2.body.key }), NOT_PERMITTED);
  });

  it('a workspace key works on its workspace and never on another; it cannot reach admin routes', async () => {
    const { ws } = await seedWorkspace();
    const { ws: other } = await seedWorkspace();
    for (const route of ['/v3/keys', '/v2/keys']) {
      const minted = await keysOf(route, `?workspace_id=${ws}`);
      expect(minted.status, route).toBe(200);
      expect(Object.keys(minted.body)).toEqual(['key']);
      const key = minted.body.key as string;
      const claims = decodePayload(key);
      expect(claims).toMatchObject({ w: ws });
      expect(claims.t).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      for (const absent of ['p', 's', 'ad', 'exp']) expect(claims, absent).not.toHaveProperty(absent);

      expect((await api.post(`/v3/workspaces/${ws}/peers/list`, {}, { token: key })).status).toBe(200);
      expect((await api.post(`/v2/workspaces/${ws}/peers/list`, {}, { token: key })).status).toBe(200);
      expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, {}, { token: key })).status).toBe(200);
      expectDenied(await api.post(`/v3/workspaces/${other}/peers/list`, {}, { token: key }), NOT_PERMITTED, 'other ws v3');
      expectDenied(await api.post(`/v2/workspaces/${other}/peers/list`, {}, { token: key }), NOT_PERMITTED, 'other ws v2');
      expectDenied(await api.put(`/v3/workspaces/${other}`, { metadata: { x: 1 } }, { token: key }), NOT_PERMITTED, 'other ws update');
      expectDenied(await api.post('/v3/workspaces/list', {}, { token: key }), ADMIN_ONLY, 'list');
      expectDenied(await keysOf('/v3/keys', `?workspace_id=${other}`, key), ADMIN_ONLY, 'mint');
    }
  });

  it('peer and session keys carry their claims and the narrowing of §2.4', async () => {
    const { ws } = await seedWorkspace();
    const peerKey = (await keysOf('/v3/keys', `?workspace_id=${ws}&peer_id=alice`)).body.key;
    expect(decodePayload(peerKey)).toMatchObject({ w: ws, p: 'alice' });
    expect((await api.post(`/v3/workspaces/${ws}/peers/alice/sessions`, {}, { token: peerKey })).status).toBe(200);
    expectDenied(await api.post(`/v3/workspaces/${ws}/peers/bob/sessions`, {}, { token: peerKey }), NOT_PERMITTED, 'other peer');
    expectDenied(await api.post(`/v3/workspaces/${ws}/peers/list`, {}, { token: peerKey }), NOT_PERMITTED, 'peers list');

    const sessionKey = (await keysOf('/v3/keys', `?workspace_id=${ws}&session_id=s1`)).body.key;
    expect(decodePayload(sessionKey)).toMatchObject({ w: ws, s: 's1' });
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, {}, { token: sessionKey })).status).toBe(200);
    expectDenied(await api.post(`/v3/workspaces/${ws}/sessions/s2/peers`, {}, { token: sessionKey }), NOT_PERMITTED, 'other session');
  });

  it('a key with expires_at in the future works; one in the past is Invalid JWT', async () => {
    const { ws } = await seedWorkspace();
    for (const route of ['/v3/keys', '/v2/keys']) {
      const future = await keysOf(route, `?workspace_id=${ws}&expires_at=${encodeURIComponent('2099-01-01T00:00:00Z')}`);
      expect(future.status, route).toBe(200);
      expect(decodePayload(future.body.key)).toHaveProperty('exp');
      const ok = await api.post(`/v3/workspaces/${ws}/peers/list`, {}, { token: future.body.key });
      expect(ok.status, `${route} future`).toBe(200);
      expectDenied(await api.post(`/v3/workspaces/${uniqueId()}/peers/list`, {}, { token: future.body.key }), NOT_PERMITTED);

      const past = await keysOf(route, `?workspace_id=${ws}&expires_at=${encodeURIComponent('2001-01-01T00:00:00Z')}`);
      expect(past.status, route).toBe(200);
      expectDenied(await api.post(`/v3/workspaces/${ws}/peers/list`, {}, { token: past.body.key }), INVALID, `${route} past`);
      expectDenied(await api.post(`/v2/workspaces/${ws}/peers/list`, {}, { token: past.body.key }), INVALID, `${route} past v2`);
    }
  });

  it('a key that expired at or before 1970 is minted expired, not a 500', async () => {
    const { ws } = await seedWorkspace();
    for (const route of ['/v3/keys', '/v2/keys']) {
      for (const value of ['-1', '0', '1960-01-01T00:00:00Z', '1970-01-01T00:00:00Z']) {
        const minted = await keysOf(route, `?workspace_id=${ws}&expires_at=${encodeURIComponent(value)}`);
        expect(minted.status, `${route} ${value}`).toBe(200);
        // the earliest `exp` a JWT library signs
        expect(decodePayload(minted.body.key), `${route} ${value}`).toMatchObject({ exp: 1, w: ws });
        expectDenied(await api.post(`/v3/workspaces/${ws}/peers/list`, {}, { token: minted.body.key }), INVALID, `${route} ${value}`);
      }
    }
  });

  it('reads expires_at as pydantic does: unix seconds or milliseconds, and `_` between date and time', async () => {
    const ws = uniqueId();
    const cases: [string, number][] = [
      ['4102444800', 4_102_444_800],
      ['4102444800.5', 4_102_444_800],
      ['4102444800000', 4_102_444_800],
      ['+4102444800', 4_102_444_800],
      ['2100-01-01_00:00', 4_102_444_800],
      ['2100-01-01T00:00:00Z', 4_102_444_800],
    ];
    for (const [value, exp] of cases) {
      const response = await keysOf('/v3/keys', `?workspace_id=${ws}&expires_at=${encodeURIComponent(value)}`);
      expect(response.status, value).toBe(200);
      expect(decodePayload(response.body.key), value).toMatchObject({ exp });
    }
    // beyond year 9999 as seconds: refused, the input echoed as sent
    const far = await keysOf('/v3/keys', `?workspace_id=${ws}&expires_at=300000000000000`);
    expect(far.status).toBe(422);
    expect(far.body.detail).toEqual([expect.objectContaining({ type: 'datetime_parsing', input: '300000000000000' })]);
  });

  it('validates expires_at as a datetime, after authentication', async () => {
    const ws = uniqueId();
    expectDenied(await api.post(`/v3/keys?workspace_id=${ws}&expires_at=tomorrow`), NO_TOKEN);
    for (const route of ['/v3/keys', '/v2/keys']) {
      const response = await keysOf(route, `?workspace_id=${ws}&expires_at=tomorrow`);
      expect(response.status, route).toBe(422);
      expect(response.body).toEqual({
        detail: [
          {
            type: 'datetime_from_date_parsing',
            loc: ['query', 'expires_at'],
            msg: 'Input should be a valid datetime or date, input is too short',
            input: 'tomorrow',
            ctx: { error: 'input is too short' },
          },
        ],
      });
    }
  });

  it('minting requires an admin token', async () => {
    const ws = uniqueId();
    expectDenied(await api.post(`/v3/keys?workspace_id=${ws}`), NO_TOKEN);
    expectDenied(await keysOf('/v3/keys', `?workspace_id=${ws}`, api.token({ workspaceId: ws })), ADMIN_ONLY);
    expectDenied(await keysOf('/v2/keys', `?workspace_id=${ws}`, api.token({ workspaceId: ws, peerId: 'p' })), ADMIN_ONLY);
  });
});

describe('a token for workspace A never reads or changes workspace B', () => {
  interface Fixture {
    ws: string;
    hook3: string;
    hook2: string;
  }
  interface RouteCase {
    method: 'GET' | 'POST' | 'PUT' | 'DELETE';
    url: (f: Fixture) => string;
    body?: (f: Fixture) => unknown;
    /** The 401 detail a foreign token gets. */
    denied: string;
    adminOnly?: boolean;
  }

  const routes: RouteCase[] = [
    // v3
    { method: 'POST', url: () => '/v3/workspaces', body: (f) => ({ id: f.ws, metadata: { hacked: true } }), denied: UNAUTHORIZED },
    { method: 'POST', url: () => '/v3/workspaces/list', body: (f) => ({ filters: { id: f.ws } }), denied: ADMIN_ONLY, adminOnly: true },
    { method: 'POST', url: (f) => `/v3/keys?workspace_id=${f.ws}`, denied: ADMIN_ONLY, adminOnly: true },
    { method: 'PUT', url: (f) => `/v3/workspaces/${f.ws}`, body: () => ({ metadata: { hacked: true } }), denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v3/workspaces/${f.ws}/peers`, body: () => ({ id: 'alice', metadata: { hacked: true } }), denied: UNAUTHORIZED },
    { method: 'POST', url: (f) => `/v3/workspaces/${f.ws}/peers/list`, body: () => ({}), denied: NOT_PERMITTED },
    { method: 'PUT', url: (f) => `/v3/workspaces/${f.ws}/peers/alice`, body: () => ({ metadata: { hacked: true } }), denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v3/workspaces/${f.ws}/peers/alice/sessions`, body: () => ({}), denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v3/workspaces/${f.ws}/sessions`, body: () => ({ id: 's1', metadata: { hacked: true } }), denied: UNAUTHORIZED },
    { method: 'POST', url: (f) => `/v3/workspaces/${f.ws}/sessions/list`, body: () => ({}), denied: NOT_PERMITTED },
    { method: 'PUT', url: (f) => `/v3/workspaces/${f.ws}/sessions/s1`, body: () => ({ metadata: { hacked: true } }), denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v3/workspaces/${f.ws}/sessions/s1/clone`, denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v3/workspaces/${f.ws}/sessions/s1/peers`, body: () => ({ mallory: {} }), denied: NOT_PERMITTED },
    { method: 'PUT', url: (f) => `/v3/workspaces/${f.ws}/sessions/s1/peers`, body: () => ({ mallory: {} }), denied: NOT_PERMITTED },
    { method: 'GET', url: (f) => `/v3/workspaces/${f.ws}/sessions/s1/peers`, denied: NOT_PERMITTED },
    { method: 'GET', url: (f) => `/v3/workspaces/${f.ws}/sessions/s1/peers/alice/config`, denied: NOT_PERMITTED },
    { method: 'PUT', url: (f) => `/v3/workspaces/${f.ws}/sessions/s1/peers/alice/config`, body: () => ({ observe_me: false }), denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v3/workspaces/${f.ws}/webhooks`, body: () => ({ url: 'https://evil.example.com/' }), denied: NOT_PERMITTED },
    { method: 'GET', url: (f) => `/v3/workspaces/${f.ws}/webhooks`, denied: NOT_PERMITTED },
    { method: 'DELETE', url: (f) => `/v3/workspaces/${f.ws}/webhooks/${f.hook3}`, denied: NOT_PERMITTED },
    { method: 'DELETE', url: (f) => `/v3/workspaces/${f.ws}/sessions/s1/peers`, body: () => ['alice'], denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v3/workspaces/${f.ws}/queue/jobs/list`, body: () => ({ status: 'dead' }), denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v3/workspaces/${f.ws}/queue/jobs/some-job/retry`, denied: NOT_PERMITTED },
    { method: 'GET', url: (f) => `/v3/workspaces/${f.ws}/statistics`, denied: NOT_PERMITTED },
    // removing memory (docs/forgetting.md): a dry run and a forget's preview change nothing
    { method: 'DELETE', url: (f) => `/v3/workspaces/${f.ws}/peers/alice?dry_run=true`, denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v3/workspaces/${f.ws}/forget`, body: () => ({ observed: 'alice', query: 'anything' }), denied: NOT_PERMITTED },
    { method: 'GET', url: (f) => `/v3/workspaces/${f.ws}/forget/records`, denied: ADMIN_ONLY, adminOnly: true },
    { method: 'POST', url: (f) => `/v3/workspaces/${f.ws}/conclusions/list?include_superseded=true`, body: () => ({}), denied: NOT_PERMITTED },
    { method: 'GET', url: (f) => `/v3/workspaces/${f.ws}/conclusions/anything/history`, denied: NOT_PERMITTED },
    { method: 'GET', url: (f) => `/v3/workspaces/${f.ws}/export`, denied: NOT_PERMITTED },
    // v2
    { method: 'POST', url: () => '/v2/workspaces', body: (f) => ({ id: f.ws }), denied: UNAUTHORIZED },
    { method: 'POST', url: () => '/v2/workspaces/list', body: (f) => ({ filters: { id: f.ws } }), denied: ADMIN_ONLY, adminOnly: true },
    { method: 'POST', url: (f) => `/v2/keys?workspace_id=${f.ws}`, denied: ADMIN_ONLY, adminOnly: true },
    { method: 'PUT', url: (f) => `/v2/workspaces/${f.ws}`, body: () => ({ metadata: { hacked: true } }), denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v2/workspaces/${f.ws}/peers`, body: () => ({ id: 'alice', metadata: { hacked: true } }), denied: UNAUTHORIZED },
    { method: 'POST', url: (f) => `/v2/workspaces/${f.ws}/peers/list`, body: () => ({}), denied: NOT_PERMITTED },
    { method: 'PUT', url: (f) => `/v2/workspaces/${f.ws}/peers/alice`, body: () => ({ metadata: { hacked: true } }), denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v2/workspaces/${f.ws}/peers/alice/sessions`, body: () => ({}), denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v2/workspaces/${f.ws}/sessions`, body: () => ({ id: 's1', metadata: { hacked: true } }), denied: UNAUTHORIZED },
    { method: 'POST', url: (f) => `/v2/workspaces/${f.ws}/sessions/list`, body: () => ({}), denied: NOT_PERMITTED },
    { method: 'PUT', url: (f) => `/v2/workspaces/${f.ws}/sessions/s1`, body: () => ({ metadata: { hacked: true } }), denied: NOT_PERMITTED },
    { method: 'GET', url: (f) => `/v2/workspaces/${f.ws}/sessions/s1/clone`, denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v2/workspaces/${f.ws}/sessions/s1/peers`, body: () => ({ mallory: {} }), denied: NOT_PERMITTED },
    { method: 'PUT', url: (f) => `/v2/workspaces/${f.ws}/sessions/s1/peers`, body: () => ({ mallory: {} }), denied: NOT_PERMITTED },
    { method: 'GET', url: (f) => `/v2/workspaces/${f.ws}/sessions/s1/peers`, denied: NOT_PERMITTED },
    { method: 'GET', url: (f) => `/v2/workspaces/${f.ws}/sessions/s1/peers/alice/config`, denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v2/workspaces/${f.ws}/sessions/s1/peers/alice/config`, body: () => ({ observe_me: false }), denied: NOT_PERMITTED },
    { method: 'POST', url: (f) => `/v2/workspaces/${f.ws}/webhooks`, body: () => ({ url: 'https://evil.example.com/' }), denied: UNAUTHORIZED },
    { method: 'GET', url: (f) => `/v2/workspaces/${f.ws}/webhooks`, denied: UNAUTHORIZED },
    { method: 'DELETE', url: (f) => `/v2/workspaces/${f.ws}/webhooks/${f.hook2}`, denied: UNAUTHORIZED },
    { method: 'DELETE', url: (f) => `/v2/workspaces/${f.ws}/sessions/s1/peers`, body: () => ['alice'], denied: NOT_PERMITTED },
    // destructive ones last, so the positive control below keeps its fixture until the end
    { method: 'DELETE', url: (f) => `/v3/workspaces/${f.ws}/peers/alice`, denied: NOT_PERMITTED },
    { method: 'DELETE', url: (f) => `/v3/workspaces/${f.ws}/sessions/s1`, denied: NOT_PERMITTED },
    { method: 'DELETE', url: (f) => `/v2/workspaces/${f.ws}/sessions/s2`, denied: NOT_PERMITTED },
    { method: 'DELETE', url: (f) => `/v3/workspaces/${f.ws}`, denied: NOT_PERMITTED },
    { method: 'DELETE', url: (f) => `/v2/workspaces/${f.ws}`, denied: NOT_PERMITTED },
  ];

  const send = (route: RouteCase, f: Fixture, token: string, extraQuery = '') => {
    let url = route.url(f);
    if (extraQuery !== '') url += (url.includes('?') ? '&' : '?') + extraQuery;
    return api.request(route.method, url, route.body?.(f), { token });
  };

  /** Everything an admin can see of a workspace, to prove nothing changed. */
  async function snapshot(ws: string) {
    const opts = { token: admin };
    return {
      workspace: (await api.post('/v3/workspaces/list', { filters: { id: ws } }, opts)).body,
      peers: (await api.post(`/v3/workspaces/${ws}/peers/list`, {}, opts)).body,
      sessions: (await api.post(`/v3/workspaces/${ws}/sessions/list`, {}, opts)).body,
      aliceSessions: (await api.post(`/v3/workspaces/${ws}/peers/alice/sessions`, {}, opts)).body,
      members: (await api.get(`/v3/workspaces/${ws}/sessions/s1/peers`, opts)).body,
      config: (await api.get(`/v3/workspaces/${ws}/sessions/s1/peers/alice/config`, opts)).body,
      webhooks: (await api.get(`/v3/workspaces/${ws}/webhooks`, opts)).body,
    };
  }

  it('every route refuses tokens of another workspace, whatever their peer and session claims', async () => {
    const a = await seedWorkspace();
    const b = await seedWorkspace();
    const before = await snapshot(b.ws);
    expect(before.peers.total).toBe(3);
    expect(before.webhooks.total).toBe(2);

    const foreign = [
      api.token({ workspaceId: a.ws }),
      api.token({ workspaceId: a.ws, peerId: 'alice' }),
      api.token({ workspaceId: a.ws, sessionId: 's1' }),
      api.token({ workspaceId: a.ws, peerId: 'alice', sessionId: 's1' }),
    ];
    // the second pass smuggles A's ids in as query parameters: the path must win
    const smuggled = `workspace_id=${a.ws}&peer_id=alice&session_id=s1`;
    for (const extra of ['', smuggled]) {
      for (const token of foreign) {
        for (const route of routes) {
          const response = await send(route, b, token, extra);
          expectDenied(response, route.denied, `${route.method} ${route.url(b)} ${JSON.stringify(decodePayload(token))} ${extra}`);
        }
      }
    }
    expect(await snapshot(b.ws)).toEqual(before);
  });

  it('positive control: the same routes accept a token of the workspace itself', async () => {
    const a = await seedWorkspace();
    const token = api.token({ workspaceId: a.ws });
    for (const route of routes) {
      const response = await send(route, a, token);
      if (route.adminOnly) expectDenied(response, ADMIN_ONLY, route.url(a));
      else expect(response.status, `${route.method} ${route.url(a)} ${response.text}`).not.toBe(401);
    }
    // the last route (v2 delete workspace) really deleted it
    expect((await api.post('/v3/workspaces/list', { filters: { id: a.ws } }, { token: admin })).body.total).toBe(0);
  });
});
