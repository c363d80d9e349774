import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';
import { ISO, V1_ID, makeApp } from './fixtures.js';

/* contract-v1 §2.1 (apps), §0.3 (bodies), §0.5 (pages), §3 (422 items without input/ctx). */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

describe('POST /v1/apps', () => {
  it('creates an app: 200, keys in reference order, a 21-character id', async () => {
    const name = uniqueId('app');
    const response = await api.post('/v1/apps', { name, metadata: { plan: 'free', n: [1, 2] } });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body)).toEqual(['id', 'name', 'metadata', 'created_at']);
    expect(response.body).toMatchObject({ name, metadata: { plan: 'free', n: [1, 2] } });
    expect(response.body.id).toMatch(V1_ID);
    expect(response.body.created_at).toMatch(ISO);

    const bare = await api.post('/v1/apps', { name: uniqueId('app') });
    expect(bare.body.metadata).toEqual({});
  });

  it('answers 409 for a name that is taken', async () => {
    const app = await makeApp(api);
    const again = await api.post('/v1/apps', { name: app.name });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ detail: `App with name '${app.name}' already exists` });
  });

  it('reports validation errors with loc, msg and type only', async () => {
    const cases: [unknown, object[]][] = [
      [{}, [{ loc: ['body', 'name'], msg: 'Field required', type: 'missing' }]],
      [{ name: '' }, [{ loc: ['body', 'name'], msg: 'String should have at least 1 character', type: 'string_too_short' }]],
      [
        { name: 'a'.repeat(101) },
        [{ loc: ['body', 'name'], msg: 'String should have at most 100 characters', type: 'string_too_long' }],
      ],
      [{ name: 5 }, [{ loc: ['body', 'name'], msg: 'Input should be a valid string', type: 'string_type' }]],
      [
        { name: 'x', metadata: null },
        [{ loc: ['body', 'metadata'], msg: 'Input should be a valid dictionary', type: 'dict_type' }],
      ],
      [
        [],
        [{ loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', type: 'model_attributes_type' }],
      ],
    ];
    for (const [body, detail] of cases) {
      const response = await api.post('/v1/apps', body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body, JSON.stringify(body)).toEqual({ detail });
    }
    const missing = await api.post('/v1/apps');
    expect(missing.body).toEqual({ detail: [{ loc: ['body'], msg: 'Field required', type: 'missing' }] });
  });

  it('answers malformed JSON with json_invalid, and parses a body sent without Content-Type', async () => {
    const broken = await api.post('/v1/apps', undefined, { raw: '{"name": }', headers: { 'content-type': 'application/json' } });
    expect(broken.status).toBe(422);
    expect(broken.body).toEqual({ detail: [{ loc: ['body', 9], msg: 'JSON decode error', type: 'json_invalid' }] });

    const name = uniqueId('app');
    const untyped = await api.post('/v1/apps', undefined, { raw: JSON.stringify({ name }) });
    expect(untyped.status).toBe(200);
    expect(untyped.body.name).toBe(name);
  });
});

describe('GET /v1/apps, /v1/apps/name/{name}', () => {
  it('gets an app by id and by name', async () => {
    const app = await makeApp(api, { a: 1 });
    const byId = await api.get(`/v1/apps?app_id=${app.id}`);
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual(app);
    const byName = await api.get(`/v1/apps/name/${app.name}`);
    expect(byName.status).toBe(200);
    expect(byName.body).toEqual(app);
  });

  it('answers 404 for unknown ids and names', async () => {
    expect(await api.get('/v1/apps?app_id=nope')).toMatchObject({ status: 404, body: { detail: 'App with ID nope not found' } });
    expect(await api.get('/v1/apps/name/nope-nothing')).toMatchObject({
      status: 404,
      body: { detail: "App with name 'nope-nothing' not found" },
    });
    // an id containing NUL names nothing (and must not reach PostgreSQL)
    expect((await api.get('/v1/apps?app_id=a%00b')).status).toBe(404);
  });

  it('needs an app id in the query or the token, even with auth off', async () => {
    const response = await api.get('/v1/apps');
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ detail: 'App ID not found in query parameter or JWT' });
  });
});

describe('GET /v1/apps/get_or_create/{name}', () => {
  it('creates once, then returns the same app', async () => {
    const name = uniqueId('goc');
    const created = await api.get(`/v1/apps/get_or_create/${name}`);
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ name, metadata: {} });
    expect(created.body.id).toMatch(V1_ID);
    const again = await api.get(`/v1/apps/get_or_create/${name}`);
    expect(again.body).toEqual(created.body);
  });

  it('refuses a name over 100 characters with a 422 (the reference answers 500)', async () => {
    const response = await api.get(`/v1/apps/get_or_create/${'n'.repeat(101)}`);
    expect(response.status).toBe(422);
    expect(response.body).toEqual({
      detail: [{ loc: ['path', 'name'], msg: 'String should have at most 100 characters', type: 'string_too_long' }],
    });
    const longest = `${'n'.repeat(87)}${uniqueId('')}`;
    expect(longest).toHaveLength(100);
    expect((await api.get(`/v1/apps/get_or_create/${longest}`)).status).toBe(200);
  });
});

describe('POST /v1/apps/list', () => {
  it('filters by metadata containment, pages and reverses in insertion order', async () => {
    const tag = uniqueId('tag');
    const apps = [];
    for (let i = 0; i < 3; i++) apps.push(await makeApp(api, { tag, i, nested: { even: i % 2 === 0, list: [i, 'x'] } }));
    const ids = apps.map((a) => a.id);

    const all = await api.post('/v1/apps/list', { filter: { tag } });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 3, page: 1, size: 50, pages: 1 });
    expect(all.body.items.map((a: { id: string }) => a.id)).toEqual(ids);

    const reversed = await api.post('/v1/apps/list?reverse=true', { filter: { tag } });
    expect(reversed.body.items.map((a: { id: string }) => a.id)).toEqual([...ids].reverse());

    const second = await api.post('/v1/apps/list?page=2&size=2', { filter: { tag } });
    expect(second.body).toEqual({ items: [apps[2]], total: 3, page: 2, size: 2, pages: 2 });

    const nested = await api.post('/v1/apps/list', { filter: { tag, nested: { even: true } } });
    expect(nested.body.items.map((a: { id: string }) => a.id)).toEqual([ids[0], ids[2]]);
    const inList = await api.post('/v1/apps/list', { filter: { tag, nested: { list: [1] } } });
    expect(inList.body.items.map((a: { id: string }) => a.id)).toEqual([ids[1]]);

    const past = await api.post('/v1/apps/list?page=99', { filter: { tag } });
    expect(past.body).toEqual({ items: [], total: 3, page: 99, size: 50, pages: 1 });
    const none = await api.post('/v1/apps/list', { filter: { tag: uniqueId('none') } });
    expect(none.body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
  });

  it('takes no body, {} and a null filter as no filter', async () => {
    for (const body of [undefined, {}, { filter: null }, { filter: {} }]) {
      const response = await api.post('/v1/apps/list?size=1', body);
      expect(response.status).toBe(200);
      expect(response.body.total).toBeGreaterThan(0);
    }
  });

  it('checks page, size and reverse', async () => {
    const cases: [string, object][] = [
      ['page=0', { loc: ['query', 'page'], msg: 'Input should be greater than or equal to 1', type: 'greater_than_equal' }],
      ['size=0', { loc: ['query', 'size'], msg: 'Input should be greater than or equal to 1', type: 'greater_than_equal' }],
      ['size=101', { loc: ['query', 'size'], msg: 'Input should be less than or equal to 100', type: 'less_than_equal' }],
      ['reverse=maybe', { loc: ['query', 'reverse'], msg: 'Input should be a valid boolean, unable to interpret input', type: 'bool_parsing' }],
      ['reverse=', { loc: ['query', 'reverse'], msg: 'Input should be a valid boolean, unable to interpret input', type: 'bool_parsing' }],
    ];
    for (const [query, item] of cases) {
      const response = await api.post(`/v1/apps/list?${query}`, {});
      expect(response.status, query).toBe(422);
      expect(response.body, query).toEqual({ detail: [item] });
    }
    // integers as pydantic reads them: an all-zero fraction and underscores between digits
    for (const [query, size] of [['size=2.0', 2], ['size=3.00', 3], ['size=1_0', 10], ['size=%202%20', 2], ['size=2_0.0', 20]] as const) {
      const response = await api.post(`/v1/apps/list?${query}`, {});
      expect(response.status, query).toBe(200);
      expect(response.body.size, query).toBe(size);
    }
    for (const query of ['size=2.5', 'size=3.', 'size=.0', 'size=2.0.0', 'size=1__0', 'size=_1', 'size=2.0_0', 'size=1e1', 'size=0x10']) {
      const response = await api.post(`/v1/apps/list?${query}`, {});
      expect(response.status, query).toBe(422);
      expect(response.body.detail[0].type, query).toBe('int_parsing');
    }
    const filter = await api.post('/v1/apps/list', { filter: [1] });
    expect(filter.body).toEqual({ detail: [{ loc: ['body', 'filter'], msg: 'Input should be a valid dictionary', type: 'dict_type' }] });
  });
});

describe('PUT /v1/apps/{app_id}', () => {
  it('replaces metadata and leaves null or absent fields unchanged', async () => {
    const app = await makeApp(api, { a: 1, b: 2 });
    const replaced = await api.put(`/v1/apps/${app.id}`, { metadata: { c: 3 } });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toEqual({ ...app, metadata: { c: 3 } });
    expect((await api.put(`/v1/apps/${app.id}`, {})).body).toEqual(replaced.body);
    expect((await api.put(`/v1/apps/${app.id}`, { name: null, metadata: null })).body).toEqual(replaced.body);
    expect((await api.put(`/v1/apps/${app.id}`, { metadata: {} })).body.metadata).toEqual({});
  });

  it('refuses a new name with 422 (the name is the workspace id); the current name is "unchanged"', async () => {
    const app = await makeApp(api, { a: 1 });
    const renamed = await api.put(`/v1/apps/${app.id}`, { name: uniqueId('renamed'), metadata: { moved: true } });
    expect(renamed.status).toBe(422);
    expect(renamed.body).toEqual({ detail: `An app cannot be renamed: its name '${app.name}' is the id of its workspace in v2 and v3` });
    expect((await api.get(`/v1/apps?app_id=${app.id}`)).body).toEqual(app);

    const same = await api.put(`/v1/apps/${app.id}`, { name: app.name, metadata: { b: 2 } });
    expect(same.status).toBe(200);
    expect(same.body).toEqual({ ...app, metadata: { b: 2 } });
  });

  it('answers 409 for a name that is taken and 404 for an unknown app', async () => {
    const [a, b] = [await makeApp(api), await makeApp(api)];
    const taken = await api.put(`/v1/apps/${a.id}`, { name: b.name });
    expect(taken.status).toBe(409);
    expect(taken.body).toEqual({ detail: 'App update failed - unique constraint violation' });
    expect((await api.get(`/v1/apps?app_id=${a.id}`)).body.name).toBe(a.name);

    const unknown = await api.put('/v1/apps/unknown-app', { metadata: {} });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'App with ID unknown-app not found' });
  });

  it('refuses an empty or over-long new name (the reference stores any string)', async () => {
    const app = await makeApp(api);
    const empty = await api.put(`/v1/apps/${app.id}`, { name: '' });
    expect(empty.status).toBe(422);
    expect(empty.body).toEqual({
      detail: [{ loc: ['body', 'name'], msg: 'String should have at least 1 character', type: 'string_too_short' }],
    });
    expect((await api.put(`/v1/apps/${app.id}`, { name: 'x'.repeat(101) })).status).toBe(422);
    expect((await api.put(`/v1/apps/${app.id}`, { metadata: 'x' })).body.detail[0]).toEqual({
      loc: ['body', 'metadata'],
      msg: 'Input should be a valid dictionary',
      type: 'dict_type',
    });
  });
});
