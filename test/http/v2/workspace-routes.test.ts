import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

/*
 * The v2 generation (contract-v3 §9, seed 4.3): every route mounted in src/http/v2, with auth
 * off. Expected values come from the contract, not from the server's output.
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$/;
const SESSION_KEYS = ['id', 'is_active', 'workspace_id', 'metadata', 'configuration', 'created_at'];
const PAGE_KEYS = ['items', 'total', 'page', 'size', 'pages'];

const idsOf = (page: { items: { id: string }[] }) => page.items.map((item) => item.id);
const sortedIds = (page: { items: { id: string }[] }) => idsOf(page).sort();

/** v2 orders by created_at only (no tie-break), so fixtures that test order need distinct times. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('v2 workspaces', () => {
  it('get-or-create answers 200 when creating and when the workspace exists (body ignored then)', async () => {
    const ws = uniqueId();
    const created = await api.post('/v2/workspaces', { id: ws, metadata: { a: 1 }, configuration: { deriver: { enabled: false } } });
    expect(created.status).toBe(200);
    expect(Object.keys(created.body)).toEqual(['id', 'metadata', 'configuration', 'created_at']);
    expect(created.body).toMatchObject({ id: ws, metadata: { a: 1 }, configuration: { deriver: { enabled: false } } });
    expect(created.body.created_at).toMatch(ISO);

    const again = await api.post('/v2/workspaces', { id: ws, metadata: { b: 2 } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(created.body);
    const byName = await api.post('/v2/workspaces', { name: ws });
    expect(byName.status).toBe(200);
    expect(byName.body).toEqual(created.body);
  });

  it('validates the v2 configuration key `deriver`', async () => {
    const response = await api.post('/v2/workspaces', { id: uniqueId(), configuration: { deriver: { enabled: 'perhaps' } } });
    expect(response.status).toBe(422);
    expect(response.body).toEqual({
      detail: [
        {
          type: 'bool_parsing',
          loc: ['body', 'configuration', 'deriver', 'enabled'],
          msg: 'Input should be a valid boolean, unable to interpret input',
          input: 'perhaps',
        },
      ],
    });
  });

  it('limits ids to 100 characters (v3 allows 512)', async () => {
    const long = `w${'x'.repeat(100)}`;
    const refused = await api.post('/v2/workspaces', { id: long });
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({
      detail: [
        {
          type: 'string_too_long',
          loc: ['body', 'id'],
          msg: 'String should have at most 100 characters',
          input: long,
          ctx: { max_length: 100 },
        },
      ],
    });
    const exact = `${uniqueId()}-${'y'.repeat(100)}`.slice(0, 100);
    expect(exact).toHaveLength(100);
    const accepted = await api.post('/v2/workspaces', { id: exact });
    expect(accepted.status).toBe(200);
    expect(accepted.body.id).toBe(exact);
  });

  it('has no metadata limits in v2', async () => {
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i]));
    const deep = { a: { b: { c: { d: { e: { f: 1 } } } } } };
    const response = await api.post('/v2/workspaces', { id: uniqueId(), metadata: { ...many, deep } });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body.metadata)).toHaveLength(102);
    expect(response.body.metadata.deep).toEqual(deep);
  });

  it('lists workspaces oldest first, filtered; `reverse` does not exist in v2', async () => {
    const tag = uniqueId('tag');
    const names = [uniqueId(), uniqueId(), uniqueId()];
    for (const id of names) {
      expect((await api.post('/v2/workspaces', { id, metadata: { tag } })).status).toBe(200);
      await tick();
    }
    const listed = await api.post('/v2/workspaces/list?size=2', { filters: { metadata: { tag } } });
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body)).toEqual(PAGE_KEYS);
    expect(listed.body).toMatchObject({ total: 3, page: 1, size: 2, pages: 2 });
    expect(idsOf(listed.body)).toEqual(names.slice(0, 2));
    const reverse = await api.post('/v2/workspaces/list?size=10&reverse=true', { filters: { metadata: { tag } } });
    expect(idsOf(reverse.body)).toEqual(names);
    const junk = await api.post('/v2/workspaces/list?reverse=maybe', { filters: { metadata: { tag } } });
    expect(junk.status).toBe(200);
    const bad = await api.post('/v2/workspaces/list', { filters: { workspace_id: 'x' } });
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({ detail: "Column 'workspace_id' does not exist on Workspace" });
  });

  it('update creates a missing workspace (200), replaces metadata and merges configuration', async () => {
    const ws = uniqueId();
    const created = await api.put(`/v2/workspaces/${ws}`, { metadata: { a: 1 }, configuration: { deriver: { enabled: true }, x: 1 } });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ id: ws, metadata: { a: 1 }, configuration: { deriver: { enabled: true }, x: 1 } });
    const updated = await api.put(`/v2/workspaces/${ws}`, { metadata: { b: 2 }, configuration: { dream: { enabled: false } } });
    expect(updated.status).toBe(200);
    expect(updated.body.metadata).toEqual({ b: 2 });
    expect(updated.body.configuration).toEqual({ deriver: { enabled: true }, x: 1, dream: { enabled: false } });
    const unchanged = await api.put(`/v2/workspaces/${ws}`, {});
    expect(unchanged.body).toEqual(updated.body);
    expect((await api.put(`/v2/workspaces/${ws}`)).body).toEqual({
      detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }],
    });
  });

  it('delete is synchronous: 200 with the deleted workspace even with active sessions, then 404', async () => {
    const ws = uniqueId();
    const workspace = (await api.post('/v2/workspaces', { id: ws, metadata: { gone: true } })).body;
    await api.post(`/v2/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {} } });
    await api.post(`/v2/workspaces/${ws}/webhooks`, { url: 'https://example.com/h' });

    const deleted = await api.delete(`/v2/workspaces/${ws}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual(workspace);

    // everything in it went at once
    expect((await api.post(`/v2/workspaces/${ws}/peers/list`)).body.total).toBe(0);
    expect((await api.post(`/v2/workspaces/${ws}/sessions/list`)).body.total).toBe(0);
    expect((await api.post(`/v2/workspaces/${ws}/peers/alice/sessions`)).body.total).toBe(0);
    expect((await api.get(`/v2/workspaces/${ws}/webhooks`)).body.total).toBe(0);
    expect((await api.post('/v2/workspaces/list', { filters: { id: ws } })).body.total).toBe(0);

    const again = await api.delete(`/v2/workspaces/${ws}`);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: 'Resource not found' });
    const unknown = await api.delete(`/v2/workspaces/${uniqueId()}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'Resource not found' });
  });
});

describe('v2 peers', () => {
  it('get-or-create answers 200 both times, auto-creates the workspace, replaces given metadata', async () => {
    const ws = uniqueId();
    const created = await api.post(`/v2/workspaces/${ws}/peers`, { id: 'alice', metadata: { a: 1 } });
    expect(created.status).toBe(200);
    expect(Object.keys(created.body)).toEqual(['id', 'workspace_id', 'created_at', 'metadata', 'configuration']);
    expect(created.body).toMatchObject({ id: 'alice', workspace_id: ws, metadata: { a: 1 }, configuration: {} });
    const same = await api.post(`/v2/workspaces/${ws}/peers`, { id: 'alice' });
    expect(same.status).toBe(200);
    expect(same.body).toEqual(created.body);
    const replaced = await api.post(`/v2/workspaces/${ws}/peers`, { id: 'alice', metadata: { b: 2 } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.metadata).toEqual({ b: 2 });
    expect((await api.post('/v2/workspaces/list', { filters: { id: ws } })).body.total).toBe(1);

    const long = 'p'.repeat(101);
    const tooLong = await api.post(`/v2/workspaces/${ws}/peers`, { id: long });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.detail).toEqual([
      { type: 'string_too_long', loc: ['body', 'id'], msg: 'String should have at most 100 characters', input: long, ctx: { max_length: 100 } },
    ]);
  });

  it('lists peers oldest first with the page wrapper; no `reverse`; bare lists match nothing', async () => {
    const ws = uniqueId();
    for (const id of ['p0', 'p1', 'p2', 'p3', 'p4']) {
      await api.post(`/v2/workspaces/${ws}/peers`, { id, metadata: { even: Number(id[1]) % 2 === 0 } });
      await tick();
    }
    const page2 = await api.post(`/v2/workspaces/${ws}/peers/list?page=2&size=2`);
    expect(page2.status).toBe(200);
    expect(page2.body).toMatchObject({ total: 5, page: 2, size: 2, pages: 3 });
    expect(idsOf(page2.body)).toEqual(['p2', 'p3']);
    const reverse = await api.post(`/v2/workspaces/${ws}/peers/list?reverse=true`);
    expect(idsOf(reverse.body)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
    const even = await api.post(`/v2/workspaces/${ws}/peers/list`, { filters: { metadata: { even: true } } });
    expect(idsOf(even.body)).toEqual(['p0', 'p2', 'p4']);
    const bareList = await api.post(`/v2/workspaces/${ws}/peers/list`, { filters: { id: ['p1', 'p3'] } });
    expect(bareList.status).toBe(200);
    expect(bareList.body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
    const inList = await api.post(`/v2/workspaces/${ws}/peers/list`, { filters: { id: { in: ['p1', 'p3'] } } });
    expect(idsOf(inList.body)).toEqual(['p1', 'p3']);
  });

  it('update creates a missing peer (200) and replaces non-null fields', async () => {
    const ws = uniqueId();
    const created = await api.put(`/v2/workspaces/${ws}/peers/zed`, { metadata: { a: 1 } });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ id: 'zed', workspace_id: ws, metadata: { a: 1 }, configuration: {} });
    const kept = await api.put(`/v2/workspaces/${ws}/peers/zed`, { metadata: null, configuration: { observe_me: false } });
    expect(kept.body).toMatchObject({ metadata: { a: 1 }, configuration: { observe_me: false } });
  });
});

describe('seed 4.3: POST /v2/workspaces/{w}/peers/{p}/sessions', () => {
  /**
   * alice is in s1..s5 (created in that order); she left s2, s3 was deleted (inactive).
   * bob is only in `other`. The same peer name in another workspace must not leak in.
   */
  async function fixture() {
    const ws = uniqueId();
    const sessions = ['s1', 's2', 's3', 's4', 's5'];
    for (const [i, s] of sessions.entries()) {
      const r = await api.post(`/v2/workspaces/${ws}/sessions`, { id: s, metadata: { i, odd: i % 2 === 1 }, peers: { alice: {} } });
      expect(r.status).toBe(200);
      await tick();
    }
    await api.post(`/v2/workspaces/${ws}/sessions`, { id: 'other', peers: { bob: {} } });
    expect((await api.delete(`/v2/workspaces/${ws}/sessions/s2/peers`, ['alice'])).status).toBe(200);
    expect((await api.delete(`/v2/workspaces/${ws}/sessions/s3`)).status).toBe(202);
    await api.post(`/v2/workspaces/${uniqueId()}/sessions`, { id: 'elsewhere', peers: { alice: {} } });
    return { ws, url: `/v2/workspaces/${ws}/peers/alice/sessions` };
  }

  it('defaults to page 1 of 50, oldest first, left and inactive sessions included', async () => {
    const { ws, url } = await fixture();
    const response = await api.post(url);
    expect(response.status).toBe(200);
    expect(Object.keys(response.body)).toEqual(PAGE_KEYS);
    expect(response.body).toMatchObject({ total: 5, page: 1, size: 50, pages: 1 });
    expect(idsOf(response.body)).toEqual(['s1', 's2', 's3', 's4', 's5']);
    for (const item of response.body.items) {
      expect(Object.keys(item)).toEqual(SESSION_KEYS);
      expect(item.workspace_id).toBe(ws);
      expect(item.created_at).toMatch(ISO);
    }
    const byId = Object.fromEntries(response.body.items.map((s: { id: string }) => [s.id, s]));
    expect(byId.s3.is_active).toBe(false);
    expect(byId.s2.is_active).toBe(true);
    expect(byId.s1).toMatchObject({ is_active: true, metadata: { i: 0, odd: false }, configuration: {} });
    const times = response.body.items.map((s: { created_at: string }) => Date.parse(s.created_at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it('pages with offset (page-1)*size, real total and ceil(total/size) pages, empty past the end', async () => {
    const { url } = await fixture();
    const pages: string[][] = [];
    for (const page of [1, 2, 3]) {
      const response = await api.post(`${url}?page=${page}&size=2`);
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ total: 5, page, size: 2, pages: 3 });
      pages.push(idsOf(response.body));
    }
    expect(pages).toEqual([['s1', 's2'], ['s3', 's4'], ['s5']]);
    const past = await api.post(`${url}?page=4&size=2`);
    expect(past.status).toBe(200);
    expect(past.body).toEqual({ items: [], total: 5, page: 4, size: 2, pages: 3 });
    const farPast = await api.post(`${url}?page=1000`);
    expect(farPast.body).toEqual({ items: [], total: 5, page: 1000, size: 50, pages: 1 });
    const one = await api.post(`${url}?size=1&page=5`);
    expect(one.body).toMatchObject({ total: 5, page: 5, size: 1, pages: 5 });
    expect(idsOf(one.body)).toEqual(['s5']);
    const max = await api.post(`${url}?size=100`);
    expect(max.body).toMatchObject({ total: 5, size: 100, pages: 1 });
    // numeric strings are coerced
    const padded = await api.post(`${url}?page=02&size=003`);
    expect(padded.body).toMatchObject({ page: 2, size: 3, pages: 2 });
    expect(idsOf(padded.body)).toEqual(['s4', 's5']);
  });

  it('lists each session once, even after the peer left and rejoined', async () => {
    const ws = uniqueId();
    const url = `/v2/workspaces/${ws}/sessions/s/peers`;
    await api.post(url, { alice: {} });
    await api.delete(url, ['alice']);
    await api.post(url, { alice: {} });
    const response = await api.post(`/v2/workspaces/${ws}/peers/alice/sessions`);
    expect(response.body).toMatchObject({ total: 1, pages: 1 });
    expect(idsOf(response.body)).toEqual(['s']);
  });

  it('reports page and size bounds with the pydantic body (input and ctx included in v2)', async () => {
    const { url } = await fixture();
    const cases: [string, object[]][] = [
      ['page=0', [{ type: 'greater_than_equal', loc: ['query', 'page'], msg: 'Input should be greater than or equal to 1', input: '0', ctx: { ge: 1 } }]],
      ['page=-3', [{ type: 'greater_than_equal', loc: ['query', 'page'], msg: 'Input should be greater than or equal to 1', input: '-3', ctx: { ge: 1 } }]],
      ['size=0', [{ type: 'greater_than_equal', loc: ['query', 'size'], msg: 'Input should be greater than or equal to 1', input: '0', ctx: { ge: 1 } }]],
      ['size=101', [{ type: 'less_than_equal', loc: ['query', 'size'], msg: 'Input should be less than or equal to 100', input: '101', ctx: { le: 100 } }]],
      [
        'page=abc',
        [{ type: 'int_parsing', loc: ['query', 'page'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: 'abc' }],
      ],
      [
        'size=1.5',
        [{ type: 'int_parsing', loc: ['query', 'size'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: '1.5' }],
      ],
      [
        'size=500&page=0',
        [
          { type: 'greater_than_equal', loc: ['query', 'page'], msg: 'Input should be greater than or equal to 1', input: '0', ctx: { ge: 1 } },
          { type: 'less_than_equal', loc: ['query', 'size'], msg: 'Input should be less than or equal to 100', input: '500', ctx: { le: 100 } },
        ],
      ],
    ];
    for (const [query, detail] of cases) {
      const response = await api.post(`${url}?${query}`);
      expect(response.status, query).toBe(422);
      expect(response.body, query).toEqual({ detail });
    }
    // query errors come before body errors
    const both = await api.post(`${url}?size=0`, { filters: 7 });
    expect(both.body).toEqual({
      detail: [
        { type: 'greater_than_equal', loc: ['query', 'size'], msg: 'Input should be greater than or equal to 1', input: '0', ctx: { ge: 1 } },
        { type: 'dict_type', loc: ['body', 'filters'], msg: 'Input should be a valid dictionary', input: 7 },
      ],
    });
  });

  it('ignores `reverse`, which v2 does not have', async () => {
    const { url } = await fixture();
    for (const query of ['reverse=true', 'reverse=1', 'reverse=maybe']) {
      const response = await api.post(`${url}?${query}`);
      expect(response.status, query).toBe(200);
      expect(idsOf(response.body), query).toEqual(['s1', 's2', 's3', 's4', 's5']);
    }
  });

  it('treats an absent body, null, {}, {"filters": null} and {"filters": {}} as no filter; extra keys ignored', async () => {
    const { url } = await fixture();
    const bodies: [string, () => ReturnType<TestApi['post']>][] = [
      ['absent', () => api.post(url)],
      ['null', () => api.post(url, null)],
      ['{}', () => api.post(url, {})],
      ['filters null', () => api.post(url, { filters: null })],
      ['filters {}', () => api.post(url, { filters: {} })],
      ['extra key', () => api.post(url, { unknown: 1, reverse: true })],
      ['empty text', () => api.post(url, undefined, { raw: '', headers: { 'content-type': 'application/json' } })],
    ];
    for (const [name, send] of bodies) {
      const response = await send();
      expect(response.status, name).toBe(200);
      expect(response.body.total, name).toBe(5);
      expect(idsOf(response.body), name).toEqual(['s1', 's2', 's3', 's4', 's5']);
    }
  });

  it('filters on is_active, metadata, id and created_at; counts and pages matches only', async () => {
    const { url } = await fixture();
    const active = await api.post(url, { filters: { is_active: true } });
    expect(active.body).toMatchObject({ total: 4, pages: 1 });
    expect(idsOf(active.body)).toEqual(['s1', 's2', 's4', 's5']);
    const inactive = await api.post(url, { filters: { is_active: false } });
    expect(idsOf(inactive.body)).toEqual(['s3']);

    const odd = await api.post(`${url}?size=1`, { filters: { metadata: { odd: true } } });
    expect(odd.body).toMatchObject({ total: 2, page: 1, size: 1, pages: 2 });
    expect(idsOf(odd.body)).toEqual(['s2']);
    const gte = await api.post(url, { filters: { AND: [{ metadata: { i: { gte: 2 } } }, { is_active: true }] } });
    expect(idsOf(gte.body)).toEqual(['s4', 's5']);

    expect(idsOf((await api.post(url, { filters: { id: 's4' } })).body)).toEqual(['s4']);
    // the path pins the peer, not the session: bob's session never shows up
    expect((await api.post(url, { filters: { id: 'other' } })).body.total).toBe(0);
    const inOp = await api.post(url, { filters: { id: { in: ['s1', 's5', 'nope'] } } });
    expect(idsOf(inOp.body)).toEqual(['s1', 's5']);
    const not = await api.post(url, { filters: { NOT: [{ id: 's1' }, { id: 's2' }] } });
    expect(idsOf(not.body)).toEqual(['s3', 's4', 's5']);
    const or = await api.post(url, { filters: { OR: [{ id: 's1' }, { is_active: false }] } });
    expect(idsOf(or.body)).toEqual(['s1', 's3']);
    expect((await api.post(url, { filters: { id: '*' } })).body.total).toBe(5);

    const future = await api.post(url, { filters: { created_at: { gte: '2999-01-01T00:00:00Z' } } });
    expect(future.body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
    const past = await api.post(url, { filters: { created_at: { gte: '2000-01-01' } } });
    expect(past.body.total).toBe(5);
  });

  it('v2 list sugar differs: a bare list on a plain column matches nothing', async () => {
    const { url } = await fixture();
    const bare = await api.post(url, { filters: { id: ['s1', 's2'] } });
    expect(bare.status).toBe(200);
    expect(bare.body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
    const bareActive = await api.post(url, { filters: { is_active: [true, false] } });
    expect(bareActive.status).toBe(200);
    expect(bareActive.body.total).toBe(0);
    // the same filter on v3 is `in` sugar (contract §5.3)
    const v3 = await api.post(url.replace('/v2/', '/v3/'), { filters: { id: ['s1', 's2'] } });
    expect(idsOf(v3.body)).toEqual(['s1', 's2']);
  });

  it('refuses unknown filter columns with the contract strings', async () => {
    const { url } = await fixture();
    const peerId = await api.post(url, { filters: { peer_id: 'alice' } });
    expect(peerId.status).toBe(422);
    expect(peerId.body).toEqual({ detail: "Column 'peer_id' does not exist on Session" });
    const configuration = await api.post(url, { filters: { configuration: {} } });
    expect(configuration.status).toBe(422);
    expect(configuration.body).toEqual({ detail: "Column 'configuration' is not allowed to be filtered on or does not exist on Session" });
    const badAnd = await api.post(url, { filters: { AND: 'x' } });
    expect(badAnd.status).toBe(422);
    expect(badAnd.body).toEqual({ detail: 'AND operator must contain a list, got str' });
  });

  it('answers an empty page for an unknown workspace or peer', async () => {
    const { ws } = await fixture();
    const empty = { items: [], total: 0, page: 1, size: 50, pages: 0 };
    const unknownPeer = await api.post(`/v2/workspaces/${ws}/peers/nobody/sessions`);
    expect(unknownPeer.status).toBe(200);
    expect(unknownPeer.body).toEqual(empty);
    const unknownWorkspace = await api.post(`/v2/workspaces/${uniqueId()}/peers/alice/sessions`);
    expect(unknownWorkspace.status).toBe(200);
    expect(unknownWorkspace.body).toEqual(empty);
    const sized = await api.post(`/v2/workspaces/${uniqueId()}/peers/alice/sessions?page=3&size=7`);
    expect(sized.body).toEqual({ items: [], total: 0, page: 3, size: 7, pages: 0 });
    // a peer with no session at all
    await api.post(`/v2/workspaces/${ws}/peers`, { id: 'loner' });
    expect((await api.post(`/v2/workspaces/${ws}/peers/loner/sessions`)).body).toEqual(empty);
  });

  it('refuses `filters` that is not an object with dict_type', async () => {
    const { url } = await fixture();
    for (const filters of ['x', 7, ['a'], true]) {
      const response = await api.post(url, { filters });
      expect(response.status, JSON.stringify(filters)).toBe(422);
      expect(response.body).toEqual({
        detail: [{ type: 'dict_type', loc: ['body', 'filters'], msg: 'Input should be a valid dictionary', input: filters }],
      });
    }
  });

  it('refuses a body that is not an object with model_attributes_type', async () => {
    const { url } = await fixture();
    for (const body of [[1], 'text', 5, false]) {
      const response = await api.post(url, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body).toEqual({
        detail: [
          { type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: body },
        ],
      });
    }
  });

  it('answers malformed JSON with json_invalid', async () => {
    const { url } = await fixture();
    const response = await api.post(url, undefined, { raw: '{"filters": }', headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(422);
    expect(response.body).toEqual({
      detail: [{ type: 'json_invalid', loc: ['body', 12], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }],
    });
  });

  it('parses a JSON body sent without a Content-Type header (v3 would not)', async () => {
    const { url } = await fixture();
    const raw = JSON.stringify({ filters: { is_active: false } });
    const response = await api.post(url, undefined, { raw });
    expect(response.status).toBe(200);
    expect(idsOf(response.body)).toEqual(['s3']);
    const v3 = await api.post(url.replace('/v2/', '/v3/'), undefined, { raw });
    expect(v3.status).toBe(422);
    expect(v3.body.detail[0]).toMatchObject({ type: 'model_attributes_type', loc: ['body'], input: raw });
  });

  it('does not parse a body declared as another type, like FastAPI', async () => {
    const { url } = await fixture();
    const raw = JSON.stringify({ filters: { is_active: false } });
    const response = await api.post(url, undefined, { raw, headers: { 'content-type': 'text/plain' } });
    expect(response.status).toBe(422);
    expect(response.body.detail).toEqual([
      { type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: raw },
    ]);
  });
});

describe('v2 sessions', () => {
  it('get-or-create answers 200 both times; metadata replaced, configuration merged, peers added', async () => {
    const ws = uniqueId();
    const created = await api.post(`/v2/workspaces/${ws}/sessions`, {
      id: 's',
      metadata: { a: 1 },
      configuration: { deriver: { enabled: true }, custom: 'kept' },
      peers: { alice: {} },
    });
    expect(created.status).toBe(200);
    expect(Object.keys(created.body)).toEqual(SESSION_KEYS);
    expect(created.body).toMatchObject({ id: 's', is_active: true, workspace_id: ws, metadata: { a: 1 } });
    expect(created.body.configuration).toEqual({ deriver: { enabled: true }, custom: 'kept' });
    const again = await api.post(`/v2/workspaces/${ws}/sessions`, {
      id: 's',
      metadata: { b: 2 },
      configuration: { dream: { enabled: false } },
      peer_names: { bob: {} },
    });
    expect(again.status).toBe(200);
    expect(again.body.metadata).toEqual({ b: 2 });
    expect(again.body.configuration).toEqual({ deriver: { enabled: true }, custom: 'kept', dream: { enabled: false } });
    expect(again.body.created_at).toBe(created.body.created_at);
    expect(sortedIds((await api.get(`/v2/workspaces/${ws}/sessions/s/peers`)).body)).toEqual(['alice', 'bob']);

    const long = 's'.repeat(101);
    const tooLong = await api.post(`/v2/workspaces/${ws}/sessions`, { id: long });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.detail).toEqual([
      { type: 'string_too_long', loc: ['body', 'id'], msg: 'String should have at most 100 characters', input: long, ctx: { max_length: 100 } },
    ]);
  });

  it('get-or-create of a deleted session is a 404', async () => {
    const ws = uniqueId();
    await api.post(`/v2/workspaces/${ws}/sessions`, { id: 'gone' });
    expect((await api.delete(`/v2/workspaces/${ws}/sessions/gone`)).status).toBe(202);
    const response = await api.post(`/v2/workspaces/${ws}/sessions`, { id: 'gone' });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ detail: `Session gone not found in workspace ${ws}` });
  });

  it('lists active sessions only, oldest first, without `reverse`', async () => {
    const ws = uniqueId();
    for (const s of ['a', 'b', 'c']) {
      await api.post(`/v2/workspaces/${ws}/sessions`, { id: s });
      await tick();
    }
    await api.delete(`/v2/workspaces/${ws}/sessions/b`);
    const listed = await api.post(`/v2/workspaces/${ws}/sessions/list?reverse=true`);
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body)).toEqual(PAGE_KEYS);
    expect(listed.body).toMatchObject({ total: 2, page: 1, size: 50, pages: 1 });
    expect(idsOf(listed.body)).toEqual(['a', 'c']);
    const bare = await api.post(`/v2/workspaces/${ws}/sessions/list`, { filters: { id: ['a', 'c'] } });
    expect(bare.body.total).toBe(0);
  });

  it('update creates when missing (200), replaces metadata, merges configuration; deleted is 404', async () => {
    const ws = uniqueId();
    const created = await api.put(`/v2/workspaces/${ws}/sessions/s`, { metadata: { x: 1 }, configuration: { a: 1 } });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ id: 's', is_active: true, workspace_id: ws, metadata: { x: 1 }, configuration: { a: 1 } });
    const updated = await api.put(`/v2/workspaces/${ws}/sessions/s`, { metadata: { y: 2 }, configuration: { b: 2 } });
    expect(updated.body).toMatchObject({ metadata: { y: 2 }, configuration: { a: 1, b: 2 } });
    await api.delete(`/v2/workspaces/${ws}/sessions/s`);
    const gone = await api.put(`/v2/workspaces/${ws}/sessions/s`, {});
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ detail: `Session s not found in workspace ${ws}` });
  });

  it('delete is 202 with a message, then 404', async () => {
    const ws = uniqueId();
    await api.post(`/v2/workspaces/${ws}/sessions`, { id: 's' });
    const deleted = await api.delete(`/v2/workspaces/${ws}/sessions/s`);
    expect(deleted.status).toBe(202);
    expect(deleted.body).toEqual({ message: 'Session deleted successfully' });
    const again = await api.delete(`/v2/workspaces/${ws}/sessions/s`);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: `Session s not found in workspace ${ws}` });
    expect((await api.delete(`/v2/workspaces/${ws}/sessions/never`)).status).toBe(404);
  });

  it('clone is a GET answering 200; POST is 405', async () => {
    const ws = uniqueId();
    await api.post(`/v2/workspaces/${ws}/sessions`, { id: 's', metadata: { m: 1 }, configuration: { c: 1 }, peers: { a: { observe_me: true }, b: {} } });
    await api.delete(`/v2/workspaces/${ws}/sessions/s/peers`, ['b']);
    const clone = await api.get(`/v2/workspaces/${ws}/sessions/s/clone`);
    expect(clone.status).toBe(200);
    expect(Object.keys(clone.body)).toEqual(SESSION_KEYS);
    expect(clone.body.id).toMatch(/^[A-Za-z0-9_-]{21}$/);
    expect(clone.body).toMatchObject({ is_active: true, workspace_id: ws, metadata: { m: 1 }, configuration: { c: 1 } });
    expect(sortedIds((await api.get(`/v2/workspaces/${ws}/sessions/${clone.body.id}/peers`)).body)).toEqual(['a', 'b']);
    expect((await api.get(`/v2/workspaces/${ws}/sessions/${clone.body.id}/peers/a/config`)).body).toEqual({
      observe_me: true,
      observe_others: null,
    });

    const post = await api.post(`/v2/workspaces/${ws}/sessions/s/clone`);
    expect(post.status).toBe(405);
    expect(post.body).toEqual({ detail: 'Method Not Allowed' });
    expect(post.headers.allow).toBe('GET');
    const missing = await api.get(`/v2/workspaces/${ws}/sessions/nope/clone`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: 'Original session not found' });
    const badMessage = await api.get(`/v2/workspaces/${ws}/sessions/s/clone?message_id=xyz`);
    expect(badMessage.status).toBe(404);
    expect(badMessage.body).toEqual({ detail: 'Session not found' });
  });

  it('session peers: add (200 session), list, set, remove', async () => {
    const ws = uniqueId();
    const url = `/v2/workspaces/${ws}/sessions/s/peers`;
    const added = await api.post(url, { a: {}, b: { observe_others: true } });
    expect(added.status).toBe(200);
    expect(Object.keys(added.body)).toEqual(SESSION_KEYS);
    expect(added.body).toMatchObject({ id: 's', is_active: true, workspace_id: ws, metadata: {}, configuration: {} });
    const listed = await api.get(url);
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body)).toEqual(PAGE_KEYS);
    expect(listed.body).toMatchObject({ total: 2, page: 1, size: 50, pages: 1 });
    expect(sortedIds(listed.body)).toEqual(['a', 'b']);
    expect(listed.body.items[0]).toMatchObject({ workspace_id: ws });

    const set = await api.put(url, { c: {}, a: { observe_me: false } });
    expect(set.status).toBe(200);
    expect(set.body.id).toBe('s');
    expect(sortedIds((await api.get(url)).body)).toEqual(['a', 'c']);
    expect((await api.get(`${url}/a/config`)).body).toEqual({ observe_me: false, observe_others: null });

    const removed = await api.delete(url, ['a', 'ghost']);
    expect(removed.status).toBe(200);
    expect(removed.body.id).toBe('s');
    expect(sortedIds((await api.get(url)).body)).toEqual(['c']);
    const notList = await api.delete(url, { a: 1 });
    expect(notList.status).toBe(422);
    expect(notList.body).toEqual({ detail: [{ type: 'list_type', loc: ['body'], msg: 'Input should be a valid list', input: { a: 1 } }] });
    const notMap = await api.post(url, ['x']);
    expect(notMap.body).toEqual({ detail: [{ type: 'dict_type', loc: ['body'], msg: 'Input should be a valid dictionary', input: ['x'] }] });

    const paged = await api.get(`${url}?size=0`);
    expect(paged.status).toBe(422);
    expect(paged.body.detail).toEqual([
      { type: 'greater_than_equal', loc: ['query', 'size'], msg: 'Input should be greater than or equal to 1', input: '0', ctx: { ge: 1 } },
    ]);
  });

  it('peer config: GET reads, POST merges and answers 200 with an empty body; PUT is 405', async () => {
    const ws = uniqueId();
    await api.post(`/v2/workspaces/${ws}/sessions/s/peers`, { a: {} });
    await api.post(`/v2/workspaces/${ws}/peers`, { id: 'b' });
    const config = `/v2/workspaces/${ws}/sessions/s/peers`;
    expect((await api.get(`${config}/a/config`)).body).toEqual({ observe_me: null, observe_others: null });
    const missing = await api.get(`${config}/b/config`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: `Session peer b not found in session s in workspace ${ws}` });

    const set = await api.post(`${config}/b/config`, { observe_others: true });
    expect(set.status).toBe(200);
    expect(set.text).toBe('');
    const merged = await api.post(`${config}/b/config`, { observe_me: false });
    expect(merged.status).toBe(200);
    expect((await api.get(`${config}/b/config`)).body).toEqual({ observe_me: false, observe_others: true });
    expect(sortedIds((await api.get(config)).body)).toEqual(['a', 'b']);

    const ghost = await api.post(`${config}/ghost/config`, {});
    expect(ghost.status).toBe(404);
    expect(ghost.body).toEqual({ detail: `Peer ghost not found in workspace ${ws}` });
    const put = await api.put(`${config}/b/config`, { observe_me: true });
    expect(put.status).toBe(405);
    expect(put.body).toEqual({ detail: 'Method Not Allowed' });
  });
});

describe('v2 webhooks', () => {
  it('create answers 200 for new and existing URLs, without the private-IP rule; list pages them', async () => {
    const ws = uniqueId();
    await api.post('/v2/workspaces', { id: ws });
    const created = await api.post(`/v2/workspaces/${ws}/webhooks`, { url: 'https://example.com/hook' });
    expect(created.status).toBe(200);
    expect(Object.keys(created.body)).toEqual(['id', 'workspace_id', 'url', 'created_at']);
    expect(created.body).toMatchObject({ workspace_id: ws, url: 'https://example.com/hook' });
    expect(created.body.id).toMatch(/^[A-Za-z0-9_-]{21}$/);
    expect(created.body.created_at).toMatch(ISO);
    const same = await api.post(`/v2/workspaces/${ws}/webhooks`, { url: 'https://example.com/hook' });
    expect(same.status).toBe(200);
    expect(same.body).toEqual(created.body);

    for (const url of ['http://127.0.0.1/x', 'http://10.1.2.3:8080/x', 'http://[::1]/x', 'http://169.254.169.254/latest']) {
      const response = await api.post(`/v2/workspaces/${ws}/webhooks`, { url });
      expect(response.status, url).toBe(200);
      expect(response.body.url).toBe(url);
    }
    const listed = await api.get(`/v2/workspaces/${ws}/webhooks?size=2`);
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ total: 5, page: 1, size: 2, pages: 3 });
    expect(listed.body.items).toHaveLength(2);
    const all = await api.get(`/v2/workspaces/${ws}/webhooks`);
    expect(all.body.items.map((e: { url: string }) => e.url).sort()).toEqual(
      ['https://example.com/hook', 'http://127.0.0.1/x', 'http://10.1.2.3:8080/x', 'http://[::1]/x', 'http://169.254.169.254/latest'].sort(),
    );
    expect((await api.get(`/v2/workspaces/${uniqueId()}/webhooks`)).body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });

    const missingUrl = await api.post(`/v2/workspaces/${ws}/webhooks`, {});
    expect(missingUrl.status).toBe(422);
    expect(missingUrl.body).toEqual({ detail: [{ type: 'missing', loc: ['body', 'url'], msg: 'Field required', input: {} }] });
  });

  it('delete answers 200 with the body null; unknown, repeated or foreign ids are 404', async () => {
    const ws = uniqueId();
    const other = uniqueId();
    await api.post('/v2/workspaces', { id: ws });
    await api.post('/v2/workspaces', { id: other });
    const endpoint = (await api.post(`/v2/workspaces/${ws}/webhooks`, { url: 'https://e.com/a' })).body;

    const foreign = await api.delete(`/v2/workspaces/${other}/webhooks/${endpoint.id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ detail: `Webhook endpoint ${endpoint.id} not found for workspace ${other}` });

    const deleted = await api.delete(`/v2/workspaces/${ws}/webhooks/${endpoint.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.text).toBe('null');
    expect(deleted.body).toBeNull();
    expect((await api.get(`/v2/workspaces/${ws}/webhooks`)).body.total).toBe(0);

    const again = await api.delete(`/v2/workspaces/${ws}/webhooks/${endpoint.id}`);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: `Webhook endpoint ${endpoint.id} not found for workspace ${ws}` });
    const unknownWs = uniqueId();
    const unknown = await api.delete(`/v2/workspaces/${unknownWs}/webhooks/nope`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: `Webhook endpoint nope not found for workspace ${unknownWs}` });
  });
});
