import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$/;

describe('POST /v3/workspaces/{w}/peers (get or create)', () => {
  it('creates with 201, then returns the same peer with 200', async () => {
    const ws = uniqueId();
    const created = await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice', metadata: { tier: 'pro' } });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body)).toEqual(['id', 'workspace_id', 'created_at', 'metadata', 'configuration']);
    expect(created.body).toMatchObject({ id: 'alice', workspace_id: ws, metadata: { tier: 'pro' }, configuration: {} });
    expect(created.body.created_at).toMatch(ISO);

    const again = await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(created.body);
  });

  it('replaces metadata of an existing peer when given', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'p', metadata: { a: 1 } });
    const updated = await api.post(`/v3/workspaces/${ws}/peers`, { id: 'p', metadata: { b: 2 }, configuration: { observe_me: false } });
    expect(updated.status).toBe(200);
    expect(updated.body.metadata).toEqual({ b: 2 });
    expect(updated.body.configuration).toEqual({ observe_me: false });
  });

  it('accepts `name` as an alias of `id`; `id` wins when both are sent', async () => {
    const ws = uniqueId();
    expect((await api.post(`/v3/workspaces/${ws}/peers`, { name: 'bob' })).body.id).toBe('bob');
    expect((await api.post(`/v3/workspaces/${ws}/peers`, { name: 'x', id: 'carol' })).body.id).toBe('carol');
  });

  it('reports each id rule with the pydantic body', async () => {
    const ws = uniqueId();
    const cases: [unknown, object][] = [
      [{}, { type: 'missing', loc: ['body', 'id'], msg: 'Field required', input: {} }],
      [{ id: '' }, { type: 'string_too_short', loc: ['body', 'id'], msg: 'String should have at least 1 character', input: '', ctx: { min_length: 1 } }],
      [
        { id: 'a'.repeat(513) },
        { type: 'string_too_long', loc: ['body', 'id'], msg: 'String should have at most 512 characters', input: 'a'.repeat(513), ctx: { max_length: 512 } },
      ],
      [
        { id: 'a b' },
        {
          type: 'string_pattern_mismatch',
          loc: ['body', 'id'],
          msg: "String should match pattern '^[a-zA-Z0-9_-]+$'",
          input: 'a b',
          ctx: { pattern: '^[a-zA-Z0-9_-]+$' },
        },
      ],
      [{ id: 5 }, { type: 'string_type', loc: ['body', 'id'], msg: 'Input should be a valid string', input: 5 }],
      [{ name: 7 }, { type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string', input: 7 }],
      [{ id: 'ok', metadata: [] }, { type: 'dict_type', loc: ['body', 'metadata'], msg: 'Input should be a valid dictionary', input: [] }],
    ];
    for (const [body, item] of cases) {
      const response = await api.post(`/v3/workspaces/${ws}/peers`, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body).toEqual({ detail: [item] });
    }
    const listed = await api.post(`/v3/workspaces/${ws}/peers/list`, {});
    expect(listed.body.total).toBe(0);
  });

  it('enforces the metadata limits of v3 and strips NUL characters', async () => {
    const ws = uniqueId();
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i]));
    const tooMany = await api.post(`/v3/workspaces/${ws}/peers`, { id: 'p', metadata: many });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.detail[0]).toEqual({
      type: 'value_error',
      loc: ['body', 'metadata'],
      msg: 'Value error, Metadata exceeds maximum of 100 top-level keys',
      input: many,
      ctx: { error: {} },
    });
    const deep = { a: { b: { c: { d: { e: { f: 1 } } } } } };
    const tooDeep = await api.post(`/v3/workspaces/${ws}/peers`, { id: 'p', metadata: deep });
    expect(tooDeep.body.detail[0].msg).toBe('Value error, Metadata nesting exceeds maximum depth of 5');
    const okDeep = { a: { b: { c: { d: { e: 1 } } } } };
    expect((await api.post(`/v3/workspaces/${ws}/peers`, { id: 'p', metadata: okDeep })).status).toBe(201);

    const nul = await api.post(`/v3/workspaces/${ws}/peers`, { id: 'q', metadata: { 'k\u0000ey': 'va\u0000lue', list: ['x\u0000'] } });
    expect(nul.body.metadata).toEqual({ key: 'value', list: ['x'] });
  });

  it('answers malformed JSON with json_invalid before anything else', async () => {
    const ws = uniqueId();
    const response = await api.post(`/v3/workspaces/${ws}/peers`, undefined, {
      raw: '{"id": }',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(422);
    expect(response.body).toEqual({
      detail: [{ type: 'json_invalid', loc: ['body', 7], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }],
    });
  });

  it('refuses a body that is not UTF-8 with 400, creating nothing (v1 and v3 alike)', async () => {
    const ws = uniqueId();
    const latin1 = (text: string) => Buffer.from(text, 'latin1');
    for (const [url, body] of [
      ['/v3/workspaces', `{"id":"${ws}","metadata":{"city":"Orl\xe9ans"}}`],
      ['/v1/apps', `{"name":"caf\xe9 ${ws}"}`],
    ]) {
      const response = await api.app.inject({ method: 'POST', url, payload: latin1(body), headers: { 'content-type': 'application/json' } });
      expect(response.statusCode, url).toBe(400);
      expect(JSON.parse(response.body), url).toEqual({ detail: 'There was an error parsing the body' });
    }
    expect((await api.post('/v3/workspaces/list', { filters: { id: ws } })).body.items).toEqual([]);
    expect((await api.get(`/v1/apps/name/${encodeURIComponent(`café ${ws}`)}`)).status).toBe(404);
    // the same text as UTF-8 is stored as sent
    const utf8 = await api.app.inject({ method: 'POST', url: '/v3/workspaces', payload: Buffer.from(`{"id":"${ws}","metadata":{"city":"Orléans"}}`, 'utf8'), headers: { 'content-type': 'application/json' } });
    expect(utf8.statusCode).toBe(201);
    expect(JSON.parse(utf8.body).metadata).toEqual({ city: 'Orléans' });
  });

  it('reads a Content-Type that is no media type as not JSON, and an empty one as none (v1 parses it, v3 does not)', async () => {
    const ws = uniqueId();
    expect((await api.post('/v3/workspaces', { id: ws })).status).toBe(201);
    for (const type of ['foo', 'application', 'undefined', ' ', '']) {
      const response = await api.app.inject({ method: 'POST', url: `/v3/workspaces/${ws}/peers/list`, payload: '{}', headers: { 'content-type': type } });
      expect(response.statusCode, JSON.stringify(type)).toBe(422);
      expect(JSON.parse(response.body), JSON.stringify(type)).toEqual({
        detail: [{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: '{}' }],
      });
    }
    const v1Empty = await api.app.inject({ method: 'POST', url: '/v1/apps/list', payload: '{}', headers: { 'content-type': '' } });
    expect(v1Empty.statusCode).toBe(200);
    const v1Foo = await api.app.inject({ method: 'POST', url: '/v1/apps/list', payload: '{}', headers: { 'content-type': 'foo' } });
    expect(v1Foo.statusCode).toBe(422);
    expect(JSON.parse(v1Foo.body).detail[0].type).toBe('model_attributes_type');
  });

  it('does not parse a body sent without a JSON content type (v3)', async () => {
    const ws = uniqueId();
    const response = await api.post(`/v3/workspaces/${ws}/peers`, undefined, {
      raw: '{"id":"p"}',
      headers: { 'content-type': 'text/plain' },
    });
    expect(response.status).toBe(422);
    expect(response.body.detail).toEqual([
      {
        type: 'model_attributes_type',
        loc: ['body'],
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: '{"id":"p"}',
      },
    ]);
  });

  it('refuses a missing body, and an invalid workspace id in the path with 422 instead of 500', async () => {
    const missing = await api.post(`/v3/workspaces/${uniqueId()}/peers`);
    expect(missing.body).toEqual({ detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] });
    const badPath = await api.post(`/v3/workspaces/bad%20id/peers`, { id: 'p' });
    expect(badPath.status).toBe(422);
    expect(badPath.body.detail[0]).toMatchObject({ type: 'string_pattern_mismatch', loc: ['path', 'workspace_id'], input: 'bad id' });
  });
});

describe('PUT /v3/workspaces/{w}/peers/{p}', () => {
  it('creates a missing peer, then replaces non-null fields only', async () => {
    const ws = uniqueId();
    const created = await api.put(`/v3/workspaces/${ws}/peers/zed`, { metadata: { a: 1 } });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ id: 'zed', workspace_id: ws, metadata: { a: 1 }, configuration: {} });
    const kept = await api.put(`/v3/workspaces/${ws}/peers/zed`, { metadata: null, configuration: { x: true } });
    expect(kept.body).toMatchObject({ metadata: { a: 1 }, configuration: { x: true } });
    const replaced = await api.put(`/v3/workspaces/${ws}/peers/zed`, { metadata: { b: 2 } });
    expect(replaced.body).toMatchObject({ metadata: { b: 2 }, configuration: { x: true } });
  });
});

describe('POST /v3/workspaces/{w}/peers/list (seed 4.4)', () => {
  async function seedPeers(ws: string, count: number) {
    for (let i = 0; i < count; i++) {
      const id = `p${String(i).padStart(3, '0')}`;
      const response = await api.post(`/v3/workspaces/${ws}/peers`, { id, metadata: { i, even: i % 2 === 0 } });
      expect(response.status).toBe(201);
    }
  }

  it('pages in creation order with the v3 wrapper, and reverses', async () => {
    const ws = uniqueId();
    await seedPeers(ws, 7);
    const first = await api.post(`/v3/workspaces/${ws}/peers/list?page=1&size=3`);
    expect(first.status).toBe(200);
    expect(Object.keys(first.body)).toEqual(['items', 'total', 'page', 'size', 'pages']);
    expect(first.body).toMatchObject({ total: 7, page: 1, size: 3, pages: 3 });
    expect(first.body.items.map((p: { id: string }) => p.id)).toEqual(['p000', 'p001', 'p002']);
    const last = await api.post(`/v3/workspaces/${ws}/peers/list?page=3&size=3`, {});
    expect(last.body.items.map((p: { id: string }) => p.id)).toEqual(['p006']);
    const past = await api.post(`/v3/workspaces/${ws}/peers/list?page=9&size=3`, { filters: null });
    expect(past.body).toEqual({ items: [], total: 7, page: 9, size: 3, pages: 3 });
    const reversed = await api.post(`/v3/workspaces/${ws}/peers/list?size=2&reverse=true`);
    expect(reversed.body.items.map((p: { id: string }) => p.id)).toEqual(['p006', 'p005']);
    const defaults = await api.post(`/v3/workspaces/${ws}/peers/list`);
    expect(defaults.body).toMatchObject({ page: 1, size: 50, total: 7, pages: 1 });
  });

  it('breaks created_at ties by creation order (peers auto-created in one request)', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { zeta: {}, alpha: {}, mid: {} });
    const listed = await api.post(`/v3/workspaces/${ws}/peers/list`);
    const times = new Set(listed.body.items.map((p: { created_at: string }) => p.created_at));
    expect(times.size).toBe(1);
    const forward = listed.body.items.map((p: { id: string }) => p.id);
    const backward = (await api.post(`/v3/workspaces/${ws}/peers/list?reverse=true`)).body.items.map((p: { id: string }) => p.id);
    expect(backward).toEqual([...forward].reverse());
  });

  it('filters by id, metadata and logic, and counts matches only', async () => {
    const ws = uniqueId();
    await seedPeers(ws, 6);
    const byList = await api.post(`/v3/workspaces/${ws}/peers/list`, { filters: { id: ['p001', 'p004', 'nope'] } });
    expect(byList.body.items.map((p: { id: string }) => p.id)).toEqual(['p001', 'p004']);
    expect(byList.body.total).toBe(2);
    const even = await api.post(`/v3/workspaces/${ws}/peers/list?size=2`, { filters: { metadata: { even: true } } });
    expect(even.body).toMatchObject({ total: 3, pages: 2 });
    expect(even.body.items.map((p: { id: string }) => p.id)).toEqual(['p000', 'p002']);
    const gt = await api.post(`/v3/workspaces/${ws}/peers/list`, {
      filters: { AND: [{ metadata: { i: { gte: 2 } } }, { NOT: [{ id: 'p003' }] }] },
    });
    expect(gt.body.items.map((p: { id: string }) => p.id)).toEqual(['p002', 'p004', 'p005']);
    const wildcard = await api.post(`/v3/workspaces/${ws}/peers/list`, { filters: { id: '*' } });
    expect(wildcard.body.total).toBe(6);
  });

  it('refuses filters on unknown columns with the contract strings', async () => {
    const ws = uniqueId();
    const bad = await api.post(`/v3/workspaces/${ws}/peers/list`, { filters: { peer_id: 'alice' } });
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({ detail: "Column 'peer_id' does not exist on Peer" });
    const other = await api.post(`/v3/workspaces/${ws}/peers/list`, { filters: { configuration: {} } });
    expect(other.body).toEqual({ detail: "Column 'configuration' is not allowed to be filtered on or does not exist on Peer" });
  });

  it('validates paging and body shapes in the reference order', async () => {
    const ws = uniqueId();
    const response = await api.post(`/v3/workspaces/${ws}/peers/list?page=0&size=101&reverse=maybe`, { filters: 'x' });
    expect(response.status).toBe(422);
    expect(response.body.detail).toEqual([
      { type: 'greater_than_equal', loc: ['query', 'page'], msg: 'Input should be greater than or equal to 1', input: '0', ctx: { ge: 1 } },
      { type: 'less_than_equal', loc: ['query', 'size'], msg: 'Input should be less than or equal to 100', input: '101', ctx: { le: 100 } },
      { type: 'bool_parsing', loc: ['query', 'reverse'], msg: 'Input should be a valid boolean, unable to interpret input', input: 'maybe' },
      { type: 'dict_type', loc: ['body', 'filters'], msg: 'Input should be a valid dictionary', input: 'x' },
    ]);
    const parsing = await api.post(`/v3/workspaces/${ws}/peers/list?page=1.5`);
    expect(parsing.body.detail).toEqual([
      { type: 'int_parsing', loc: ['query', 'page'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: '1.5' },
    ]);
    const notObject = await api.post(`/v3/workspaces/${ws}/peers/list`, [1]);
    expect(notObject.body.detail[0]).toMatchObject({ type: 'model_attributes_type', loc: ['body'] });
  });

  it('returns an empty page for an unknown workspace', async () => {
    const response = await api.post(`/v3/workspaces/${uniqueId()}/peers/list`);
    expect(response.body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
  });
});

describe('cached pages of peers', () => {
  it('reflect every change: new peers, changed metadata, a deleted and recreated workspace', async () => {
    const ws = uniqueId();
    const list = async () => (await api.post(`/v3/workspaces/${ws}/peers/list?size=10`)).body;
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'a' });
    expect((await list()).items.map((p: { id: string }) => p.id)).toEqual(['a']);
    expect((await list()).items.map((p: { id: string }) => p.id)).toEqual(['a']);
    await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, { b: {} });
    expect((await list()).total).toBe(2);
    await api.put(`/v3/workspaces/${ws}/peers/a`, { metadata: { changed: true } });
    expect((await list()).items[0].metadata).toEqual({ changed: true });

    await api.delete(`/v3/workspaces/${ws}/sessions/s`);
    expect((await api.delete(`/v3/workspaces/${ws}`)).status).toBe(202);
    // a new workspace with the same id and as many peer changes must not get the old page
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'x' });
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'y' });
    await api.put(`/v3/workspaces/${ws}/peers/x`, { metadata: { n: 1 } });
    const fresh = await list();
    expect(fresh.items.map((p: { id: string }) => p.id)).toEqual(['x', 'y']);
    expect(fresh.items[0].metadata).toEqual({ n: 1 });
  });
});
