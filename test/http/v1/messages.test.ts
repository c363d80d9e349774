import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApi } from '../../support/test-app.js';
import { ISO, V1_ID, makeMessages, makeOtherUser, makeScope, makeSession, type V1Scope } from './fixtures.js';

/* contract-v1 §2.4 (messages). */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const SESSION_NOT_FOUND = { detail: 'Session not found or does not belong to user' };

async function sessionUrl(scope?: V1Scope): Promise<{ scope: V1Scope; session: string; url: string }> {
  const s = scope ?? (await makeScope(api));
  const session = await makeSession(api, s);
  return { scope: s, session: session.id, url: `${s.base}/sessions/${session.id}/messages` };
}

describe('POST .../messages', () => {
  it('creates a message: 200, keys in reference order', async () => {
    const { scope, session, url } = await sessionUrl();
    const response = await api.post(url, { content: 'hello', is_user: true, metadata: { m: 1 } });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body)).toEqual(['id', 'content', 'is_user', 'session_id', 'metadata', 'created_at', 'app_id', 'user_id']);
    expect(response.body).toMatchObject({
      content: 'hello',
      is_user: true,
      session_id: session,
      metadata: { m: 1 },
      app_id: scope.app.id,
      user_id: scope.user.id,
    });
    expect(response.body.id).toMatch(V1_ID);
    expect(response.body.created_at).toMatch(ISO);

    const assistant = await api.post(url, { content: '', is_user: 'no' });
    expect(assistant.body).toMatchObject({ content: '', is_user: false, metadata: {} });
  });

  it("answers 404 for an unknown session or another user's session", async () => {
    const { scope, url } = await sessionUrl();
    const other = await makeOtherUser(api, scope);
    const foreign = await api.post(url.replace(scope.base, other.base), { content: 'x', is_user: true });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(SESSION_NOT_FOUND);
    expect((await api.post(`${scope.base}/sessions/unknown/messages`, { content: 'x', is_user: true })).body).toEqual(SESSION_NOT_FOUND);
    expect((await api.post(`/v1/apps/nope/users/nope/sessions/nope/messages`, { content: 'x', is_user: true })).status).toBe(404);
  });

  it('reports validation errors with loc, msg and type only', async () => {
    const { url } = await sessionUrl();
    const cases: [unknown, object[]][] = [
      [
        {},
        [
          { loc: ['body', 'content'], msg: 'Field required', type: 'missing' },
          { loc: ['body', 'is_user'], msg: 'Field required', type: 'missing' },
        ],
      ],
      [{ content: 'x', is_user: 'maybe' }, [{ loc: ['body', 'is_user'], msg: 'Input should be a valid boolean, unable to interpret input', type: 'bool_parsing' }]],
      [{ content: 'x', is_user: null }, [{ loc: ['body', 'is_user'], msg: 'Input should be a valid boolean', type: 'bool_type' }]],
      // a whole number other than 0 and 1 is a boolean that cannot be read; a fraction is not one at all
      [{ content: 'x', is_user: 2 }, [{ loc: ['body', 'is_user'], msg: 'Input should be a valid boolean, unable to interpret input', type: 'bool_parsing' }]],
      [{ content: 'x', is_user: -1 }, [{ loc: ['body', 'is_user'], msg: 'Input should be a valid boolean, unable to interpret input', type: 'bool_parsing' }]],
      [{ content: 'x', is_user: 0.5 }, [{ loc: ['body', 'is_user'], msg: 'Input should be a valid boolean', type: 'bool_type' }]],
      [
        { content: 'x'.repeat(50_001), is_user: true },
        [{ loc: ['body', 'content'], msg: 'String should have at most 50000 characters', type: 'string_too_long' }],
      ],
    ];
    for (const [body, detail] of cases) {
      const response = await api.post(url, body);
      expect(response.status).toBe(422);
      expect(response.body).toEqual({ detail });
    }
    expect((await api.post(url, { content: 'x'.repeat(50_000), is_user: true })).status).toBe(200);
  });
});

describe('POST .../messages/batch', () => {
  it('creates up to 100 messages in input order with one created_at', async () => {
    const { url } = await sessionUrl();
    const batch = Array.from({ length: 100 }, (_, i) => ({ content: `m${i}`, is_user: i % 2 === 0 }));
    const response = await api.post(`${url}/batch`, { messages: batch });
    expect(response.status).toBe(200);
    expect(response.body).toHaveLength(100);
    expect(response.body.map((m: { content: string }) => m.content)).toEqual(batch.map((m) => m.content));
    expect(response.body.map((m: { is_user: boolean }) => m.is_user)).toEqual(batch.map((m) => m.is_user));
    expect(new Set(response.body.map((m: { created_at: string }) => m.created_at)).size).toBe(1);
  });

  it('refuses 101 messages and an empty batch (the reference fails with 500) with 422', async () => {
    const { url } = await sessionUrl();
    const tooMany = await api.post(`${url}/batch`, { messages: Array.from({ length: 101 }, () => ({ content: 'x', is_user: true })) });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body).toEqual({
      detail: [{ loc: ['body', 'messages'], msg: 'List should have at most 100 items after validation, not 101', type: 'too_long' }],
    });
    const empty = await api.post(`${url}/batch`, { messages: [] });
    expect(empty.status).toBe(422);
    expect(empty.body).toEqual({
      detail: [{ loc: ['body', 'messages'], msg: 'List should have at least 1 item after validation, not 0', type: 'too_short' }],
    });
    const nested = await api.post(`${url}/batch`, { messages: [{ content: 'ok', is_user: true }, { content: 'x' }] });
    expect(nested.body).toEqual({ detail: [{ loc: ['body', 'messages', 1, 'is_user'], msg: 'Field required', type: 'missing' }] });
    // nothing of a refused batch is stored
    expect((await api.post(`${url}/list`, {})).body.total).toBe(0);
  });

  it('is all-or-nothing on a missing session', async () => {
    const scope = await makeScope(api);
    const response = await api.post(`${scope.base}/sessions/unknown/messages/batch`, { messages: [{ content: 'x', is_user: true }] });
    expect(response.status).toBe(404);
    expect(response.body).toEqual(SESSION_NOT_FOUND);
  });
});

describe('POST .../messages/list', () => {
  it('lists in insertion order with reverse, paging and metadata containment', async () => {
    const { scope, session, url } = await sessionUrl();
    const made = await makeMessages(api, scope, session, [
      { content: 'a', is_user: true, metadata: { topic: 'x', tags: ['red', 'blue'] } },
      { content: 'b', is_user: false, metadata: { topic: 'y' } },
      { content: 'c', is_user: true, metadata: { topic: 'x', deep: { k: 1 } } },
    ]);
    const contents = (body: { items: { content: string }[] }) => body.items.map((m) => m.content);
    const all = await api.post(`${url}/list`);
    expect(all.status).toBe(200);
    expect(contents(all.body)).toEqual(['a', 'b', 'c']);
    expect(all.body.items[0]).toEqual(made[0]);
    expect(contents((await api.post(`${url}/list?reverse=true`, {})).body)).toEqual(['c', 'b', 'a']);
    expect((await api.post(`${url}/list?size=2&page=2`, {})).body).toMatchObject({ total: 3, pages: 2, page: 2, size: 2 });
    expect(contents((await api.post(`${url}/list`, { filter: { topic: 'x' } })).body)).toEqual(['a', 'c']);
    expect(contents((await api.post(`${url}/list`, { filter: { tags: ['blue'] } })).body)).toEqual(['a']);
    expect(contents((await api.post(`${url}/list`, { filter: { deep: { k: 1 } } })).body)).toEqual(['c']);
    expect(contents((await api.post(`${url}/list`, { filter: { topic: 'z' } })).body)).toEqual([]);
  });

  it('answers an empty page for an unknown session', async () => {
    const scope = await makeScope(api);
    const response = await api.post(`${scope.base}/sessions/unknown/messages/list`, {});
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
  });
});

describe('GET and PUT .../messages/{message_id}', () => {
  it('gets a message of the session only', async () => {
    const { scope, session, url } = await sessionUrl();
    const [message] = await makeMessages(api, scope, session, [{ content: 'hi', is_user: true }]);
    const got = await api.get(`${url}/${message.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(message);

    const { url: otherUrl } = await sessionUrl(scope);
    const elsewhere = await api.get(`${otherUrl}/${message.id}`);
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body).toEqual({ detail: `Message with ID ${message.id} not found` });
  });

  it('replaces metadata only; metadata is required', async () => {
    const { scope, session, url } = await sessionUrl();
    const [message] = await makeMessages(api, scope, session, [{ content: 'hi', is_user: true, metadata: { a: 1 } }]);
    const updated = await api.put(`${url}/${message.id}`, { metadata: { b: 2 }, content: 'ignored' });
    expect(updated.status).toBe(200);
    expect(updated.body).toEqual({ ...message, metadata: { b: 2 } });

    const missing = await api.put(`${url}/${message.id}`, {});
    expect(missing.status).toBe(422);
    expect(missing.body).toEqual({ detail: [{ loc: ['body', 'metadata'], msg: 'Field required', type: 'missing' }] });
    const unknown = await api.put(`${url}/unknown`, { metadata: {} });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'Message not found' });
  });
});
