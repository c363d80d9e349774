import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApi } from '../../support/test-app.js';
import { ISO, V1_ID, makeMessages, makeMetamessage, makeOtherUser, makeScope, makeSession } from './fixtures.js';

/* contract-v1 §2.3 (sessions; chat is not served). */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const NOT_FOUND = { detail: 'Session not found or does not belong to user' };
const ids = (page: { items: { id: string }[] }) => page.items.map((item) => item.id);

describe('POST .../sessions', () => {
  it('creates an active session: 200, keys in reference order', async () => {
    const scope = await makeScope(api);
    const response = await api.post(`${scope.base}/sessions`, { metadata: { topic: 'x' } });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body)).toEqual(['id', 'is_active', 'user_id', 'app_id', 'metadata', 'created_at']);
    expect(response.body).toMatchObject({ is_active: true, user_id: scope.user.id, app_id: scope.app.id, metadata: { topic: 'x' } });
    expect(response.body.id).toMatch(V1_ID);
    expect(response.body.created_at).toMatch(ISO);
    expect((await api.post(`${scope.base}/sessions`, {})).body.metadata).toEqual({});
  });

  it('answers 404 for an unknown user and 422 for a missing body or bad metadata', async () => {
    const scope = await makeScope(api);
    const unknown = await api.post(`/v1/apps/${scope.app.id}/users/nobody/sessions`, {});
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: "User with ID 'nobody' not found" });
    expect((await api.post(`${scope.base}/sessions`)).body).toEqual({ detail: [{ loc: ['body'], msg: 'Field required', type: 'missing' }] });
    expect((await api.post(`${scope.base}/sessions`, { metadata: null })).body).toEqual({
      detail: [{ loc: ['body', 'metadata'], msg: 'Input should be a valid dictionary', type: 'dict_type' }],
    });
  });
});

describe('GET .../sessions?session_id=', () => {
  it('gets the session; another user of the app cannot', async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope, { a: 1 });
    const got = await api.get(`${scope.base}/sessions?session_id=${session.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(session);

    const other = await makeOtherUser(api, scope);
    const foreign = await api.get(`${other.base}/sessions?session_id=${session.id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(NOT_FOUND);
    expect((await api.get(`${scope.base}/sessions?session_id=unknown`)).body).toEqual(NOT_FOUND);
  });

  it('needs a session id in the query or the token, even with auth off', async () => {
    const scope = await makeScope(api);
    const response = await api.get(`${scope.base}/sessions`);
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ detail: 'Session ID not found in query parameter or JWT' });
  });
});

describe('POST .../sessions/list', () => {
  it('lists all sessions by default and only active ones with is_active: true', async () => {
    const scope = await makeScope(api);
    const [a, b, c] = [await makeSession(api, scope, { n: 1 }), await makeSession(api, scope, { n: 2 }), await makeSession(api, scope, { n: 3 })];
    await api.delete(`${scope.base}/sessions/${b.id}`);
    const url = `${scope.base}/sessions/list`;

    const all = await api.post(url, {});
    expect(all.status).toBe(200);
    expect(ids(all.body)).toEqual([a.id, b.id, c.id]);
    expect(all.body.items[1].is_active).toBe(false);
    expect(ids((await api.post(url)).body)).toEqual([a.id, b.id, c.id]);
    expect(ids((await api.post(url, { is_active: false })).body)).toEqual([a.id, b.id, c.id]);
    expect(ids((await api.post(url, { is_active: true })).body)).toEqual([a.id, c.id]);
    expect(ids((await api.post(`${url}?reverse=true`, { is_active: 'true' })).body)).toEqual([c.id, a.id]);
    expect(ids((await api.post(url, { filter: { n: 2 } })).body)).toEqual([b.id]);
    expect((await api.post(`${url}?size=2&page=2`, {})).body).toMatchObject({ total: 3, page: 2, size: 2, pages: 2 });
  });

  it('refuses is_active: null and lists nothing for an unknown user', async () => {
    const scope = await makeScope(api);
    const bad = await api.post(`${scope.base}/sessions/list`, { is_active: null });
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({ detail: [{ loc: ['body', 'is_active'], msg: 'Input should be a valid boolean', type: 'bool_type' }] });
    const unknown = await api.post(`/v1/apps/${scope.app.id}/users/nobody/sessions/list`, {});
    expect(unknown.body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
  });

  it("does not list another user's sessions", async () => {
    const scope = await makeScope(api);
    await makeSession(api, scope);
    const other = await makeOtherUser(api, scope);
    expect((await api.post(`${other.base}/sessions/list`, {})).body.total).toBe(0);
  });
});

describe('PUT and DELETE .../sessions/{session_id}', () => {
  it('replaces metadata, which is required', async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope, { a: 1, b: 2 });
    const url = `${scope.base}/sessions/${session.id}`;
    const updated = await api.put(url, { metadata: { c: 3 } });
    expect(updated.status).toBe(200);
    expect(updated.body).toEqual({ ...session, metadata: { c: 3 } });
    expect((await api.get(`${scope.base}/sessions?session_id=${session.id}`)).body.metadata).toEqual({ c: 3 });

    const missing = await api.put(url, {});
    expect(missing.status).toBe(422);
    expect(missing.body).toEqual({ detail: [{ loc: ['body', 'metadata'], msg: 'Field required', type: 'missing' }] });
    expect((await api.put(url, { metadata: null })).status).toBe(422);
    expect((await api.put(`${scope.base}/sessions/unknown`, { metadata: {} })).body).toEqual(NOT_FOUND);
  });

  it('deactivates, idempotently; messages can still be added', async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope);
    const url = `${scope.base}/sessions/${session.id}`;
    for (let i = 0; i < 2; i++) {
      const deleted = await api.delete(url);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ message: 'Session deleted successfully' });
    }
    expect((await api.get(`${scope.base}/sessions?session_id=${session.id}`)).body.is_active).toBe(false);
    expect((await api.post(`${url}/messages`, { content: 'still here', is_user: true })).status).toBe(200);

    const other = await makeOtherUser(api, scope);
    const foreign = await api.delete(`${other.base}/sessions/${session.id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(NOT_FOUND);
  });
});

describe('GET .../sessions/{session_id}/clone', () => {
  it('copies metadata and messages up to the cutoff, with new ids', async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope, { k: 'v' });
    const messages = await makeMessages(api, scope, session.id, [
      { content: 'one', is_user: true, metadata: { i: 1 } },
      { content: 'two', is_user: false },
      { content: 'three', is_user: true },
    ]);

    const full = await api.get(`${scope.base}/sessions/${session.id}/clone`);
    expect(full.status).toBe(200);
    expect(full.body).toMatchObject({ is_active: true, user_id: scope.user.id, app_id: scope.app.id, metadata: { k: 'v' } });
    expect(full.body.id).not.toBe(session.id);
    const copied = (await api.post(`${scope.base}/sessions/${full.body.id}/messages/list`, {})).body.items;
    expect(copied.map((m: { content: string; is_user: boolean }) => [m.content, m.is_user])).toEqual([
      ['one', true],
      ['two', false],
      ['three', true],
    ]);
    expect(copied[0].metadata).toEqual({ i: 1 });
    expect(copied.map((m: { id: string }) => m.id)).not.toContain(messages[0].id);

    const cut = await api.get(`${scope.base}/sessions/${session.id}/clone?message_id=${messages[1].id}`);
    const cutMessages = (await api.post(`${scope.base}/sessions/${cut.body.id}/messages/list`, {})).body.items;
    expect(cutMessages.map((m: { content: string }) => m.content)).toEqual(['one', 'two']);
  });

  it('copies metamessages with deep_copy=true, re-pointed at the copied messages', async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope);
    const [first, second] = await makeMessages(api, scope, session.id, [
      { content: 'one', is_user: true },
      { content: 'two', is_user: true },
    ]);
    await makeMetamessage(api, scope, { metamessage_type: 'on-session', session_id: session.id });
    await makeMetamessage(api, scope, { metamessage_type: 'on-first', session_id: session.id, message_id: first.id });
    await makeMetamessage(api, scope, { metamessage_type: 'on-second', session_id: session.id, message_id: second.id });

    const shallow = await api.get(`${scope.base}/sessions/${session.id}/clone?message_id=${first.id}`);
    expect((await api.post(`${scope.base}/metamessages/list`, { session_id: shallow.body.id })).body.total).toBe(0);

    const deep = await api.get(`${scope.base}/sessions/${session.id}/clone?message_id=${first.id}&deep_copy=true`);
    const [copiedFirst] = (await api.post(`${scope.base}/sessions/${deep.body.id}/messages/list`, {})).body.items;
    const metas = (await api.post(`${scope.base}/metamessages/list`, { session_id: deep.body.id })).body.items;
    expect(metas.map((m: { label: string; message_id: string | null }) => [m.label, m.message_id])).toEqual([
      ['on-session', null],
      ['on-first', copiedFirst.id],
    ]);
  });

  it('stores the clone of a session without messages (the reference returns an unsaved one)', async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope);
    const clone = await api.get(`${scope.base}/sessions/${session.id}/clone`);
    expect(clone.status).toBe(200);
    expect((await api.get(`${scope.base}/sessions?session_id=${clone.body.id}`)).body).toEqual(clone.body);
  });

  it('answers 404 Session not found for an unknown session or a cutoff outside it', async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope);
    const elsewhere = await makeSession(api, scope);
    const [message] = await makeMessages(api, scope, elsewhere.id, [{ content: 'x', is_user: true }]);
    for (const url of [
      `${scope.base}/sessions/unknown/clone`,
      `${scope.base}/sessions/${session.id}/clone?message_id=${message.id}`,
      `${scope.base}/sessions/${session.id}/clone?message_id=unknown`,
    ]) {
      const response = await api.get(url);
      expect(response.status, url).toBe(404);
      expect(response.body).toEqual({ detail: 'Session not found' });
    }
    const bad = await api.get(`${scope.base}/sessions/${session.id}/clone?deep_copy=maybe`);
    expect(bad.body).toEqual({
      detail: [{ loc: ['query', 'deep_copy'], msg: 'Input should be a valid boolean, unable to interpret input', type: 'bool_parsing' }],
    });
  });
});
