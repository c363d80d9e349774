import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApi } from '../../support/test-app.js';
import { ISO, V1_ID, makeMessages, makeMetamessage, makeOtherUser, makeScope, makeSession, type V1Scope } from './fixtures.js';

/*
 * Metamessages: seed part 2 (the Metamessage resource) and 4.1 (update), contract-v1 §1.
 * Expected values come from those texts; Engram's deviations (docs/compatibility.md, "v1
 * generation") are marked where a test relies on one.
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const KEYS = ['id', 'label', 'content', 'user_id', 'app_id', 'session_id', 'message_id', 'metadata', 'created_at', 'metamessage_type'];
const SESSION_NOT_FOUND = { detail: 'Session not found or does not belong to user' };
const UPDATE_MESSAGE_NOT_FOUND = { detail: "Message not found or doesn't belong to session" };
const NO_SESSION_FOR_MESSAGE = { detail: 'Cannot specify message_id without session_id' };

/**
 * A user with two sessions (S1, S2) holding one message each (M1, M2), another user of the app
 * with a session and message of their own, and a metamessage linked to S1/M1 with metadata
 * {"a":1,"b":2}.
 */
async function world() {
  const scope = await makeScope(api);
  const [s1, s2] = [await makeSession(api, scope), await makeSession(api, scope)];
  const [m1] = await makeMessages(api, scope, s1.id, [{ content: 'in s1', is_user: true }]);
  const [m2] = await makeMessages(api, scope, s2.id, [{ content: 'in s2', is_user: false }]);
  const other = await makeOtherUser(api, scope);
  const otherSession = await makeSession(api, other);
  const [otherMessage] = await makeMessages(api, other, otherSession.id, [{ content: 'theirs', is_user: true }]);
  const meta = await makeMetamessage(api, scope, {
    metamessage_type: 'L1',
    content: 'original content',
    session_id: s1.id,
    message_id: m1.id,
    metadata: { a: 1, b: 2 },
  });
  const url = `${scope.base}/metamessages/${meta.id}`;
  return { scope, s1, s2, m1, m2, other, otherSession, otherMessage, meta, url };
}

async function current(scope: V1Scope, id: string) {
  const response = await api.get(`${scope.base}/metamessages/${id}`);
  expect(response.status).toBe(200);
  return response.body;
}

describe('PUT .../metamessages/{metamessage_id} (seed 4.1)', () => {
  describe('each body field alone', () => {
    it('metadata replaces the stored object', async () => {
      const w = await world();
      const response = await api.put(w.url, { metadata: { c: 3 } });
      expect(response.status).toBe(200);
      expect(Object.keys(response.body)).toEqual(KEYS);
      expect(response.body).toEqual({ ...w.meta, metadata: { c: 3 } });
      expect(await current(w.scope, w.meta.id)).toEqual(response.body);
      // {} clears it
      expect((await api.put(w.url, { metadata: {} })).body.metadata).toEqual({});
    });

    it('metamessage_type changes the label; the response carries both keys with one value', async () => {
      const w = await world();
      const response = await api.put(w.url, { metamessage_type: 'L3' });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ ...w.meta, label: 'L3', metamessage_type: 'L3' });
    });

    it('label (the undocumented alias) changes the label too, and may be empty', async () => {
      const w = await world();
      expect((await api.put(w.url, { label: 'L4' })).body).toEqual({ ...w.meta, label: 'L4', metamessage_type: 'L4' });
      expect((await api.put(w.url, { label: '' })).body).toMatchObject({ label: '', metamessage_type: '' });
    });

    it("session_id moves the link to another of the user's sessions and keeps message_id", async () => {
      const w = await world();
      const response = await api.put(w.url, { session_id: w.s2.id });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ ...w.meta, session_id: w.s2.id, message_id: w.m1.id });
    });

    it('message_id is checked against the stored session', async () => {
      const w = await world();
      const [m1b] = await makeMessages(api, w.scope, w.s1.id, [{ content: 'also in s1', is_user: true }]);
      const response = await api.put(w.url, { message_id: m1b.id });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ ...w.meta, message_id: m1b.id });
    });
  });

  describe('fields in combination', () => {
    it('session_id and message_id together', async () => {
      const w = await world();
      const response = await api.put(w.url, { session_id: w.s2.id, message_id: w.m2.id });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ ...w.meta, session_id: w.s2.id, message_id: w.m2.id });
    });

    it('all four fields; content and created_at never change', async () => {
      const w = await world();
      const response = await api.put(w.url, {
        session_id: w.s2.id,
        message_id: w.m2.id,
        metamessage_type: 'ALL',
        metadata: { z: [1, { y: null }] },
        content: 'not updatable',
        created_at: '2000-01-01T00:00:00Z',
      });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        ...w.meta,
        session_id: w.s2.id,
        message_id: w.m2.id,
        label: 'ALL',
        metamessage_type: 'ALL',
        metadata: { z: [1, { y: null }] },
      });
      expect(response.body.content).toBe('original content');
      expect(response.body.created_at).toBe(w.meta.created_at);
    });

    it('a label with metadata, and null fields next to set ones', async () => {
      const w = await world();
      const response = await api.put(w.url, { label: 'L5', metadata: { k: 1 }, session_id: null, message_id: null });
      expect(response.body).toEqual({ ...w.meta, label: 'L5', metamessage_type: 'L5', metadata: { k: 1 } });
    });
  });

  describe('nothing to change', () => {
    it('{} answers 200 with the current record', async () => {
      const w = await world();
      const response = await api.put(w.url, {});
      expect(response.status).toBe(200);
      expect(response.body).toEqual(w.meta);
    });

    it('all-null answers 200 and changes nothing (links cannot be cleared)', async () => {
      const w = await world();
      const response = await api.put(w.url, { session_id: null, message_id: null, metamessage_type: null, metadata: null });
      expect(response.status).toBe(200);
      expect(response.body).toEqual(w.meta);
      expect((await api.put(w.url, { label: null })).body).toEqual(w.meta);
    });

    it('unknown body keys are ignored', async () => {
      const w = await world();
      expect((await api.put(w.url, { colour: 'red' })).body).toEqual(w.meta);
    });
  });

  describe('label versus metamessage_type', () => {
    it('metamessage_type wins when both are sent, even when it is null', async () => {
      const w = await world();
      expect((await api.put(w.url, { label: 'from-label', metamessage_type: 'from-type' })).body).toMatchObject({
        label: 'from-type',
        metamessage_type: 'from-type',
      });
      expect((await api.put(w.url, { label: 'L6', metamessage_type: null })).body).toMatchObject({
        label: 'from-type',
        metamessage_type: 'from-type',
      });
    });

    it('errors name the key that was sent; labels up to 512 characters are accepted', async () => {
      const w = await world();
      expect((await api.put(w.url, { label: 'x'.repeat(512) })).body.label).toHaveLength(512);
      const viaLabel = await api.put(w.url, { label: 'x'.repeat(513) });
      expect(viaLabel.status).toBe(422);
      expect(viaLabel.body).toEqual({
        detail: [{ loc: ['body', 'label'], msg: 'String should have at most 512 characters', type: 'string_too_long' }],
      });
      const viaType = await api.put(w.url, { metamessage_type: 7, label: 'ignored' });
      expect(viaType.body).toEqual({ detail: [{ loc: ['body', 'metamessage_type'], msg: 'Input should be a valid string', type: 'string_type' }] });
      expect((await current(w.scope, w.meta.id)).label).toHaveLength(512);
    });
  });

  describe('links to other sessions and messages', () => {
    it("a session of another user is a 404 (as on create), and nothing changes", async () => {
      const w = await world();
      const response = await api.put(w.url, { session_id: w.otherSession.id, metadata: { changed: true } });
      expect(response.status).toBe(404);
      expect(response.body).toEqual(SESSION_NOT_FOUND);
      expect(await current(w.scope, w.meta.id)).toEqual(w.meta);
    });

    it("another user's session with its message is a 404 on the message", async () => {
      const w = await world();
      const response = await api.put(w.url, { session_id: w.otherSession.id, message_id: w.otherMessage.id });
      expect(response.status).toBe(404);
      expect(response.body).toEqual(UPDATE_MESSAGE_NOT_FOUND);
    });

    it('a session that does not exist is a 404 (the reference answers 500)', async () => {
      const w = await world();
      for (const sessionId of ['nonexistent', '']) {
        const response = await api.put(w.url, { session_id: sessionId });
        expect(response.status, sessionId).toBe(404);
        expect(response.body).toEqual(SESSION_NOT_FOUND);
      }
    });

    it('a message outside the stored session is a 404', async () => {
      const w = await world();
      const response = await api.put(w.url, { message_id: w.m2.id });
      expect(response.status).toBe(404);
      expect(response.body).toEqual(UPDATE_MESSAGE_NOT_FOUND);
    });

    it('a message outside the given session is a 404', async () => {
      const w = await world();
      const response = await api.put(w.url, { session_id: w.s2.id, message_id: w.m1.id });
      expect(response.status).toBe(404);
      expect(response.body).toEqual(UPDATE_MESSAGE_NOT_FOUND);
      expect(await current(w.scope, w.meta.id)).toEqual(w.meta);
    });

    it('an unknown message is a 404', async () => {
      const w = await world();
      expect((await api.put(w.url, { message_id: 'nonexistent' })).body).toEqual(UPDATE_MESSAGE_NOT_FOUND);
    });

    it('a message_id on a metamessage without a session is a 422 with a string detail', async () => {
      const w = await world();
      const loose = await makeMetamessage(api, w.scope, { metamessage_type: 'loose' });
      const response = await api.put(`${w.scope.base}/metamessages/${loose.id}`, { message_id: w.m1.id });
      expect(response.status).toBe(422);
      expect(response.body).toEqual(NO_SESSION_FOR_MESSAGE);
      // linking the session first, then the message, works
      expect((await api.put(`${w.scope.base}/metamessages/${loose.id}`, { session_id: w.s1.id })).body.session_id).toBe(w.s1.id);
      expect((await api.put(`${w.scope.base}/metamessages/${loose.id}`, { message_id: w.m1.id })).body.message_id).toBe(w.m1.id);
    });
  });

  describe('unknown ids', () => {
    it('unknown metamessage, app or user, or a metamessage of another user: one 404', async () => {
      const w = await world();
      const cases = [
        [`${w.scope.base}/metamessages/nonexistent`, 'nonexistent'],
        [`/v1/apps/unknown-app/users/${w.scope.user.id}/metamessages/${w.meta.id}`, w.meta.id],
        [`/v1/apps/${w.scope.app.id}/users/unknown-user/metamessages/${w.meta.id}`, w.meta.id],
        [`${w.other.base}/metamessages/${w.meta.id}`, w.meta.id],
      ];
      for (const [url, id] of cases) {
        const response = await api.put(url, { metadata: { x: 1 } });
        expect(response.status, url).toBe(404);
        expect(response.body).toEqual({ detail: `Metamessage with ID ${id} not found` });
      }
      expect(await current(w.scope, w.meta.id)).toEqual(w.meta);
    });
  });

  describe('validation (loc, msg and type only)', () => {
    it('reports all type errors together, in the order session_id, message_id, label, metadata', async () => {
      const w = await world();
      const response = await api.put(w.url, { label: 5, metadata: [1], session_id: 3 });
      expect(response.status).toBe(422);
      expect(response.body).toEqual({
        detail: [
          { loc: ['body', 'session_id'], msg: 'Input should be a valid string', type: 'string_type' },
          { loc: ['body', 'label'], msg: 'Input should be a valid string', type: 'string_type' },
          { loc: ['body', 'metadata'], msg: 'Input should be a valid dictionary', type: 'dict_type' },
        ],
      });
      const messageId = await api.put(w.url, { message_id: false });
      expect(messageId.body).toEqual({ detail: [{ loc: ['body', 'message_id'], msg: 'Input should be a valid string', type: 'string_type' }] });
    });

    it('requires a body that is a JSON object', async () => {
      const w = await world();
      expect((await api.put(w.url)).body).toEqual({ detail: [{ loc: ['body'], msg: 'Field required', type: 'missing' }] });
      expect((await api.put(w.url, null)).body).toEqual({ detail: [{ loc: ['body'], msg: 'Field required', type: 'missing' }] });
      expect((await api.put(w.url, ['x'])).body).toEqual({
        detail: [{ loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', type: 'model_attributes_type' }],
      });
      const broken = await api.put(w.url, undefined, { raw: '{"metadata": {', headers: { 'content-type': 'application/json' } });
      expect(broken.status).toBe(422);
      expect(broken.body).toEqual({ detail: [{ loc: ['body', 14], msg: 'JSON decode error', type: 'json_invalid' }] });
    });

    it('validates before looking the metamessage up', async () => {
      const scope = await makeScope(api);
      const response = await api.put(`${scope.base}/metamessages/nonexistent`, { metadata: 'x' });
      expect(response.status).toBe(422);
    });
  });
});

describe('POST .../metamessages', () => {
  it('creates a metamessage: 200, both label keys, links optional', async () => {
    const scope = await makeScope(api);
    const response = await api.post(`${scope.base}/metamessages`, { metamessage_type: 'note', content: '' });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body)).toEqual(KEYS);
    expect(response.body).toMatchObject({
      label: 'note',
      metamessage_type: 'note',
      content: '',
      user_id: scope.user.id,
      app_id: scope.app.id,
      session_id: null,
      message_id: null,
      metadata: {},
    });
    expect(response.body.id).toMatch(V1_ID);
    expect(response.body.created_at).toMatch(ISO);
  });

  it('links a session and one of its messages', async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope);
    const [message] = await makeMessages(api, scope, session.id, [{ content: 'x', is_user: true }]);
    const response = await api.post(`${scope.base}/metamessages`, {
      label: 'via-label',
      content: 'c',
      session_id: session.id,
      message_id: message.id,
      metadata: { k: 'v' },
    });
    expect(response.body).toMatchObject({ label: 'via-label', session_id: session.id, message_id: message.id, metadata: { k: 'v' } });
  });

  it('metamessage_type wins over label, and the 422 names the key sent', async () => {
    const scope = await makeScope(api);
    const url = `${scope.base}/metamessages`;
    expect((await api.post(url, { label: 'x', metamessage_type: 'y', content: 'c' })).body.label).toBe('y');
    const empty = await api.post(url, { label: 'a', metamessage_type: '', content: 'c' });
    expect(empty.body).toEqual({
      detail: [{ loc: ['body', 'metamessage_type'], msg: 'String should have at least 1 character', type: 'string_too_short' }],
    });
    const long = await api.post(url, { label: 'x'.repeat(51), content: 'c' });
    expect(long.body).toEqual({ detail: [{ loc: ['body', 'label'], msg: 'String should have at most 50 characters', type: 'string_too_long' }] });
    const missing = await api.post(url, {});
    expect(missing.body).toEqual({
      detail: [
        { loc: ['body', 'metamessage_type'], msg: 'Field required', type: 'missing' },
        { loc: ['body', 'content'], msg: 'Field required', type: 'missing' },
      ],
    });
    const nullMetadata = await api.post(url, { label: 'x', content: 'c', metadata: null });
    expect(nullMetadata.body).toEqual({ detail: [{ loc: ['body', 'metadata'], msg: 'Input should be a valid dictionary', type: 'dict_type' }] });
  });

  it('answers the reference 404s and 422 in its order', async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope);
    const elsewhere = await makeSession(api, scope);
    const [message] = await makeMessages(api, scope, elsewhere.id, [{ content: 'x', is_user: true }]);
    const other = await makeOtherUser(api, scope);
    const otherSession = await makeSession(api, other);
    const url = `${scope.base}/metamessages`;
    const body = { metamessage_type: 't', content: 'c' };

    const noUser = await api.post(`/v1/apps/${scope.app.id}/users/nobody/metamessages`, { ...body, session_id: 'x' });
    expect(noUser.status).toBe(404);
    expect(noUser.body).toEqual({ detail: "User with ID 'nobody' not found" });
    for (const sessionId of ['unknown', '', otherSession.id]) {
      const response = await api.post(url, { ...body, session_id: sessionId, message_id: message.id });
      expect(response.status, sessionId).toBe(404);
      expect(response.body).toEqual(SESSION_NOT_FOUND);
    }
    const wrongMessage = await api.post(url, { ...body, session_id: session.id, message_id: message.id });
    expect(wrongMessage.status).toBe(404);
    expect(wrongMessage.body).toEqual({ detail: 'Message not found or does not belong to session' });
    const noSession = await api.post(url, { ...body, message_id: message.id });
    expect(noSession.status).toBe(422);
    expect(noSession.body).toEqual(NO_SESSION_FOR_MESSAGE);
    expect((await api.post(`${url}/list`, {})).body.total).toBe(0);
  });
});

describe('GET .../metamessages/{metamessage_id}', () => {
  it('gets a metamessage of this user only', async () => {
    const scope = await makeScope(api);
    const meta = await makeMetamessage(api, scope);
    expect(await api.get(`${scope.base}/metamessages/${meta.id}`)).toMatchObject({ status: 200, body: meta });
    const other = await makeOtherUser(api, scope);
    const foreign = await api.get(`${other.base}/metamessages/${meta.id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ detail: `Metamessage with ID ${meta.id} not found` });
  });
});

describe('POST .../metamessages/list', () => {
  it('matches label (either key), session, message and metadata; "" and null match everything', async () => {
    const scope = await makeScope(api);
    const [s1, s2] = [await makeSession(api, scope), await makeSession(api, scope)];
    const [m1] = await makeMessages(api, scope, s1.id, [{ content: 'x', is_user: true }]);
    const a = await makeMetamessage(api, scope, { metamessage_type: 'alpha', session_id: s1.id, message_id: m1.id, metadata: { n: 1 } });
    const b = await makeMetamessage(api, scope, { metamessage_type: 'beta', session_id: s2.id, metadata: { n: 2, tags: ['t'] } });
    const c = await makeMetamessage(api, scope, { metamessage_type: 'alpha' });
    const url = `${scope.base}/metamessages/list`;
    const ids = async (body?: unknown, query = '') => (await api.post(`${url}${query}`, body)).body.items.map((m: { id: string }) => m.id);

    expect(await ids()).toEqual([a.id, b.id, c.id]);
    expect(await ids({}, '?reverse=true')).toEqual([c.id, b.id, a.id]);
    expect(await ids({ metamessage_type: 'alpha' })).toEqual([a.id, c.id]);
    expect(await ids({ label: 'beta' })).toEqual([b.id]);
    expect(await ids({ label: 'beta', metamessage_type: 'alpha' })).toEqual([a.id, c.id]);
    expect(await ids({ session_id: s2.id })).toEqual([b.id]);
    expect(await ids({ message_id: m1.id })).toEqual([a.id]);
    expect(await ids({ filter: { tags: ['t'] } })).toEqual([b.id]);
    expect(await ids({ metamessage_type: '', session_id: null, message_id: '', filter: null })).toEqual([a.id, b.id, c.id]);
    expect((await api.post(`${url}?size=2&page=2`, {})).body).toEqual({ items: [c], total: 3, page: 2, size: 2, pages: 2 });
  });

  it('answers an empty page for an unknown user and keeps users apart', async () => {
    const scope = await makeScope(api);
    await makeMetamessage(api, scope);
    const other = await makeOtherUser(api, scope);
    expect((await api.post(`${other.base}/metamessages/list`, {})).body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
    expect((await api.post(`/v1/apps/${scope.app.id}/users/nobody/metamessages/list`)).body.total).toBe(0);
  });
});
