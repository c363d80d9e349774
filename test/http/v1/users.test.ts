import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';
import { ISO, V1_ID, makeApp, makeMessages, makeScope, makeSession, makeUser } from './fixtures.js';

/* contract-v1 §2.2 (users), with the one-store rules of §5 (a user is a peer). */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const ASSISTANT = 'v1-assistant';

describe('POST /v1/apps/{app_id}/users', () => {
  it('creates a user: 200, keys in reference order', async () => {
    const app = await makeApp(api);
    const response = await api.post(`/v1/apps/${app.id}/users`, { name: 'alice', metadata: { age: 30 } });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body)).toEqual(['id', 'name', 'app_id', 'created_at', 'metadata']);
    expect(response.body).toMatchObject({ name: 'alice', app_id: app.id, metadata: { age: 30 } });
    expect(response.body.id).toMatch(V1_ID);
    expect(response.body.created_at).toMatch(ISO);
  });

  it('answers 409 for a taken name, 404 for an unknown app (the reference says 409)', async () => {
    const app = await makeApp(api);
    await makeUser(api, app.id, 'alice');
    const taken = await api.post(`/v1/apps/${app.id}/users`, { name: 'alice' });
    expect(taken.status).toBe(409);
    expect(taken.body).toEqual({ detail: 'User with this name already exists' });

    const noApp = await api.post('/v1/apps/no-such-app/users', { name: 'alice' });
    expect(noApp.status).toBe(404);
    expect(noApp.body).toEqual({ detail: 'App with ID no-such-app not found' });
  });

  it('keeps the assistant peer name for the assistant', async () => {
    const app = await makeApp(api);
    const response = await api.post(`/v1/apps/${app.id}/users`, { name: ASSISTANT });
    expect(response.status).toBe(422);
    expect(response.body).toEqual({ detail: `User name '${ASSISTANT}' is reserved for the assistant that sends messages with is_user=false` });
  });

  it('reports validation errors with loc, msg and type only', async () => {
    const app = await makeApp(api);
    const cases: [unknown, object[]][] = [
      [{}, [{ loc: ['body', 'name'], msg: 'Field required', type: 'missing' }]],
      [{ name: 'x'.repeat(101) }, [{ loc: ['body', 'name'], msg: 'String should have at most 100 characters', type: 'string_too_long' }]],
      [
        { name: 1, metadata: 2 },
        [
          { loc: ['body', 'name'], msg: 'Input should be a valid string', type: 'string_type' },
          { loc: ['body', 'metadata'], msg: 'Input should be a valid dictionary', type: 'dict_type' },
        ],
      ],
      [{ name: 'a\u0000b' }, [{ loc: ['body', 'name'], msg: 'Value error, Name cannot contain NUL characters', type: 'value_error' }]],
    ];
    for (const [body, detail] of cases) {
      const response = await api.post(`/v1/apps/${app.id}/users`, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body).toEqual({ detail });
    }
  });
});

describe('GET /v1/apps/{app_id}/users, .../name/{name}', () => {
  it('gets a user by id and by name, scoped by the app', async () => {
    const { app, user } = await makeScope(api);
    expect(await api.get(`/v1/apps/${app.id}/users?user_id=${user.id}`)).toMatchObject({ status: 200, body: user });
    expect(await api.get(`/v1/apps/${app.id}/users/name/${user.name}`)).toMatchObject({ status: 200, body: user });

    const otherApp = await makeApp(api);
    const wrongApp = await api.get(`/v1/apps/${otherApp.id}/users?user_id=${user.id}`);
    expect(wrongApp.status).toBe(404);
    expect(wrongApp.body).toEqual({ detail: `User with ID '${user.id}' not found` });
    const unknownName = await api.get(`/v1/apps/${otherApp.id}/users/name/${user.name}`);
    expect(unknownName.status).toBe(404);
    expect(unknownName.body).toEqual({ detail: `User with name '${user.name}' not found` });
  });

  it('needs a user id in the query or the token, even with auth off', async () => {
    const app = await makeApp(api);
    const response = await api.get(`/v1/apps/${app.id}/users`);
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ detail: 'User ID not found in query parameter or JWT' });
  });
});

describe('GET /v1/apps/{app_id}/users/get_or_create/{name}', () => {
  it('creates once, then returns the same user', async () => {
    const app = await makeApp(api);
    const created = await api.get(`/v1/apps/${app.id}/users/get_or_create/bob`);
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ name: 'bob', app_id: app.id, metadata: {} });
    expect((await api.get(`/v1/apps/${app.id}/users/get_or_create/bob`)).body).toEqual(created.body);
  });

  it('answers 404 for an unknown app and 422 for an over-long or reserved name', async () => {
    const unknown = await api.get('/v1/apps/nope/users/get_or_create/bob');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'App with ID nope not found' });
    const app = await makeApp(api);
    const long = await api.get(`/v1/apps/${app.id}/users/get_or_create/${'b'.repeat(101)}`);
    expect(long.status).toBe(422);
    expect(long.body).toEqual({
      detail: [{ loc: ['path', 'name'], msg: 'String should have at most 100 characters', type: 'string_too_long' }],
    });
    expect((await api.get(`/v1/apps/${app.id}/users/get_or_create/${ASSISTANT}`)).status).toBe(422);
  });
});

describe('POST /v1/apps/{app_id}/users/list', () => {
  it('lists users in insertion order with filter, paging and reverse, without the assistant peer', async () => {
    const scope = await makeScope(api);
    const more = [await makeUser(api, scope.app.id, 'u2'), await makeUser(api, scope.app.id, 'u3')];
    await api.put(`/v1/apps/${scope.app.id}/users/${more[1].id}`, { metadata: { vip: true } });
    // a message from the assistant creates the assistant peer in the workspace
    const session = await makeSession(api, scope);
    await makeMessages(api, scope, session.id, [{ content: 'hello', is_user: false }]);

    const url = `/v1/apps/${scope.app.id}/users/list`;
    const all = await api.post(url, {});
    expect(all.status).toBe(200);
    expect(all.body.items.map((u: { name: string }) => u.name)).toEqual([scope.user.name, 'u2', 'u3']);
    expect(all.body).toMatchObject({ total: 3, page: 1, size: 50, pages: 1 });
    expect((await api.post(`${url}?reverse=true`)).body.items.map((u: { name: string }) => u.name)).toEqual(['u3', 'u2', scope.user.name]);
    expect((await api.post(`${url}?size=1&page=3`)).body).toMatchObject({ total: 3, pages: 3, items: [{ name: 'u3' }] });
    expect((await api.post(url, { filter: { vip: true } })).body.items.map((u: { name: string }) => u.name)).toEqual(['u3']);
    // the assistant is not a user
    expect((await api.get(`/v1/apps/${scope.app.id}/users/name/${ASSISTANT}`)).status).toBe(404);
  });

  it('answers an empty page for an unknown app', async () => {
    const response = await api.post('/v1/apps/nope/users/list', {});
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
  });
});

describe('PUT /v1/apps/{app_id}/users/{user_id}', () => {
  it('replaces metadata and leaves null or absent fields unchanged', async () => {
    const { app, user } = await makeScope(api);
    const url = `/v1/apps/${app.id}/users/${user.id}`;
    const updated = await api.put(url, { metadata: { x: 1 } });
    expect(updated.status).toBe(200);
    expect(updated.body).toEqual({ ...user, metadata: { x: 1 } });
    expect((await api.put(url, { name: null, metadata: null })).body).toEqual(updated.body);
    expect((await api.put(url, {})).body).toEqual(updated.body);
    expect((await api.put(url, { name: user.name, metadata: {} })).body).toEqual(user);
    expect((await api.get(`/v1/apps/${app.id}/users?user_id=${user.id}`)).body).toEqual(user);
  });

  it('refuses a new name: 409 when taken, else 422 (the name is the peer id); 404 for an unknown user', async () => {
    const { app, user } = await makeScope(api);
    const other = await makeUser(api, app.id, 'taken');
    const taken = await api.put(`/v1/apps/${app.id}/users/${user.id}`, { name: other.name });
    expect(taken.status).toBe(409);
    expect(taken.body).toEqual({ detail: 'User update failed - unique constraint violation' });

    const renamed = await api.put(`/v1/apps/${app.id}/users/${user.id}`, { name: uniqueId('new'), metadata: { lost: true } });
    expect(renamed.status).toBe(422);
    expect(renamed.body).toEqual({ detail: `A user cannot be renamed: its name '${user.name}' is the id of its peer in v2 and v3` });
    expect((await api.get(`/v1/apps/${app.id}/users?user_id=${user.id}`)).body).toEqual(user);
    expect((await api.put(`/v1/apps/${app.id}/users/${user.id}`, { name: ASSISTANT })).status).toBe(422);

    const unknown = await api.put(`/v1/apps/${app.id}/users/nobody`, { metadata: {} });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: "User with ID 'nobody' not found" });
  });
});
