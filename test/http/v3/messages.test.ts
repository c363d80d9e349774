import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const messagesUrl = (ws: string, s = 's') => `/v3/workspaces/${ws}/sessions/${s}/messages`;

describe('POST /v3/.../sessions/{s}/messages', () => {
  it('creates a batch in order with 201, auto-creating session, peers and memberships', async () => {
    const ws = uniqueId();
    const response = await api.post(messagesUrl(ws), {
      messages: [
        { peer_id: 'alice', content: 'Hello there, how are you today?', metadata: { mood: 'happy' } },
        { peer_id: 'bot', content: '' },
        { peer_id: 'alice', content: 'Fine.' },
      ],
    });
    expect(response.status).toBe(201);
    expect(response.body).toHaveLength(3);
    const [first, second, third] = response.body;
    expect(Object.keys(first)).toEqual(['id', 'content', 'peer_id', 'session_id', 'metadata', 'created_at', 'workspace_id', 'token_count']);
    expect(first).toMatchObject({ content: 'Hello there, how are you today?', peer_id: 'alice', session_id: 's', workspace_id: ws, metadata: { mood: 'happy' } });
    expect(first.id).toMatch(/^[A-Za-z0-9_-]{21}$/);
    // o200k_base: "Hello", " there", ",", " how", " are", " you", " today", "?"
    expect(first.token_count).toBe(8);
    expect(second.token_count).toBe(0);
    expect(third.content).toBe('Fine.');
    expect(new Set(response.body.map((m: { created_at: string }) => m.created_at)).size).toBe(1);

    const members = await api.get(`/v3/workspaces/${ws}/sessions/s/peers`);
    expect(members.body.items.map((p: { id: string }) => p.id).sort()).toEqual(['alice', 'bot']);
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s/peers/bot/config`)).body).toEqual({ observe_me: null, observe_others: null });
  });

  it('keeps an active member config and rejoins a member who left', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, { alice: { observe_me: false }, bob: {} });
    await api.delete(`/v3/workspaces/${ws}/sessions/s/peers`, ['bob']);
    await api.post(messagesUrl(ws), { messages: [{ peer_id: 'alice', content: 'a' }, { peer_id: 'bob', content: 'b' }] });
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s/peers/alice/config`)).body.observe_me).toBe(false);
    const members = await api.get(`/v3/workspaces/${ws}/sessions/s/peers`);
    expect(members.body.total).toBe(2);
  });

  it('accepts the trailing-slash path and an explicit created_at', async () => {
    const ws = uniqueId();
    const response = await api.post(`${messagesUrl(ws)}/`, { messages: [{ peer_id: 'a', content: 'x', created_at: '2024-05-01T12:34:56.5Z' }] });
    expect(response.status).toBe(201);
    expect(response.body[0].created_at).toBe('2024-05-01T12:34:56.500000Z');
  });

  it('keeps the microseconds of a created_at it is given, in the answer, on reading and in filters', async () => {
    const ws = uniqueId();
    const times = ['2024-01-01T10:00:00.123456Z', '2024-01-01T10:00:00.000001Z', '2024-01-01T12:00:00.999999+02:00', '1969-12-31T23:59:59.999999Z'];
    const expected = ['2024-01-01T10:00:00.123456Z', '2024-01-01T10:00:00.000001Z', '2024-01-01T10:00:00.999999Z', '1969-12-31T23:59:59.999999Z'];
    const created = await api.post(messagesUrl(ws), { messages: times.map((created_at, i) => ({ peer_id: 'a', content: `m${i}`, created_at })) });
    expect(created.status).toBe(201);
    expect(created.body.map((m: { created_at: string }) => m.created_at)).toEqual(expected);
    const listed = await api.post(`${messagesUrl(ws)}/list`, {});
    expect(listed.body.items.map((m: { created_at: string }) => m.created_at)).toEqual(expected);
    const one = await api.get(`${messagesUrl(ws)}/${created.body[0].id}`);
    expect(one.body.created_at).toBe(expected[0]);
    // a seventh digit is dropped, as the reference's parser drops it
    const seventh = await api.post(messagesUrl(ws, 't'), { messages: [{ peer_id: 'a', content: 'x', created_at: '2024-01-01T10:00:00.1234567Z' }] });
    expect(seventh.body[0].created_at).toBe('2024-01-01T10:00:00.123456Z');

    const filtered = async (created_at: object) =>
      (await api.post(`${messagesUrl(ws)}/list`, { filters: { created_at } })).body.items.map((m: { content: string }) => m.content);
    expect(await filtered({ gte: '2024-01-01T10:00:00.123456Z' })).toEqual(['m0', 'm2']);
    expect(await filtered({ gt: '2024-01-01T10:00:00.123456Z' })).toEqual(['m2']);
    expect(await filtered({ lt: '2024-01-01T10:00:00.000002Z', gte: '2024-01-01T00:00:00Z' })).toEqual(['m1']);
    expect(await filtered({ lte: '1969-12-31T23:59:59.999998Z' })).toEqual([]);
  });

  it('refuses bad batches before writing anything', async () => {
    const ws = uniqueId();
    const url = messagesUrl(ws);
    const empty = await api.post(url, { messages: [] });
    expect(empty.status).toBe(422);
    expect(empty.body.detail[0]).toEqual({
      type: 'too_short',
      loc: ['body', 'messages'],
      msg: 'List should have at least 1 item after validation, not 0',
      input: [],
      ctx: { field_type: 'List', min_length: 1, actual_length: 0 },
    });
    const many = Array.from({ length: 101 }, () => ({ peer_id: 'a', content: 'x' }));
    expect((await api.post(url, { messages: many })).body.detail[0]).toMatchObject({ type: 'too_long', ctx: { max_length: 100, actual_length: 101 } });
    const long = await api.post(url, { messages: [{ peer_id: 'a', content: 'x'.repeat(25_001) }] });
    expect(long.body.detail[0]).toMatchObject({ type: 'string_too_long', loc: ['body', 'messages', 0, 'content'], ctx: { max_length: 25000 } });
    const nameKey = await api.post(url, { messages: [{ peer_name: 'a', content: 'x' }] });
    expect(nameKey.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'messages', 0, 'peer_id'] });
    const badPeer = await api.post(url, { messages: [{ peer_id: 'ok', content: 'x' }, { peer_id: 'not ok', content: 'y' }] });
    expect(badPeer.status).toBe(422);
    expect(badPeer.body.detail[0]).toMatchObject({ type: 'string_pattern_mismatch', loc: ['body', 'messages', 1, 'peer_id'] });
    const badDate = await api.post(url, { messages: [{ peer_id: 'a', content: 'x', created_at: '2024-13-01' }] });
    expect(badDate.body.detail[0]).toMatchObject({
      type: 'datetime_from_date_parsing',
      loc: ['body', 'messages', 0, 'created_at'],
      msg: 'Input should be a valid datetime or date, month value is outside expected range of 1-12',
    });
    // nothing was written by any of these
    expect((await api.post(`/v3/workspaces/${ws}/peers/list`)).body.total).toBe(0);
  });

  it('answers 404 on a deleted session', async () => {
    const ws = uniqueId();
    await api.post(messagesUrl(ws), { messages: [{ peer_id: 'a', content: 'x' }] });
    await api.delete(`/v3/workspaces/${ws}/sessions/s`);
    const response = await api.post(messagesUrl(ws), { messages: [{ peer_id: 'a', content: 'y' }] });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ detail: `Session s not found in workspace ${ws}` });
  });
});

describe('listing, reading and updating messages', () => {
  async function seed(ws: string, n: number) {
    const messages = Array.from({ length: n }, (_, i) => ({ peer_id: i % 2 === 0 ? 'alice' : 'bob', content: `message ${i}`, metadata: { i } }));
    return (await api.post(messagesUrl(ws), { messages })).body as { id: string }[];
  }

  it('pages in insertion order, reverses, filters, and counts', async () => {
    const ws = uniqueId();
    const created = await seed(ws, 7);
    const page = await api.post(`${messagesUrl(ws)}/list?size=3&page=2`);
    expect(page.body).toMatchObject({ total: 7, page: 2, size: 3, pages: 3 });
    expect(page.body.items.map((m: { id: string }) => m.id)).toEqual(created.slice(3, 6).map((m) => m.id));
    const reversed = await api.post(`${messagesUrl(ws)}/list?size=2&reverse=true`);
    expect(reversed.body.items.map((m: { content: string }) => m.content)).toEqual(['message 6', 'message 5']);
    const bob = await api.post(`${messagesUrl(ws)}/list`, { filters: { peer_id: 'bob', metadata: { i: { gte: 3 } } } });
    expect(bob.body.items.map((m: { content: string }) => m.content)).toEqual(['message 3', 'message 5']);
    expect(bob.body.total).toBe(2);
    const badKey = await api.post(`${messagesUrl(ws)}/list`, { filters: { content: 'x' } });
    expect(badKey.body).toEqual({ detail: "Column 'content' is not allowed to be filtered on or does not exist on Message" });
    expect((await api.post(`${messagesUrl(ws, 'unknown')}/list`)).body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
  });

  it('keeps only what a peer could see with peer_perspective', async () => {
    const ws = uniqueId();
    await api.post(messagesUrl(ws), { messages: [{ peer_id: 'alice', content: 'before carol' }] });
    await new Promise((resolve) => setTimeout(resolve, 5));
    await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, { carol: {} });
    await new Promise((resolve) => setTimeout(resolve, 5));
    await api.post(messagesUrl(ws), { messages: [{ peer_id: 'alice', content: 'after carol' }] });
    const seen = await api.post(`${messagesUrl(ws)}/list`, { filters: { peer_perspective: 'carol' } });
    expect(seen.body.items.map((m: { content: string }) => m.content)).toEqual(['after carol']);
  });

  it('gets one message, 404 with the contract text otherwise', async () => {
    const ws = uniqueId();
    const [first] = await seed(ws, 2);
    const got = await api.get(`${messagesUrl(ws)}/${first.id}`);
    expect(got.body).toMatchObject({ id: first.id, content: 'message 0' });
    const missing = await api.get(`${messagesUrl(ws)}/nope`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: 'Message with ID nope not found' });
    expect((await api.get(`${messagesUrl(ws, 'other')}/${first.id}`)).status).toBe(404);
  });

  it('replaces metadata on update; null leaves it', async () => {
    const ws = uniqueId();
    const [first] = await seed(ws, 1);
    const updated = await api.put(`${messagesUrl(ws)}/${first.id}`, { metadata: { tag: 'x' } });
    expect(updated.body.metadata).toEqual({ tag: 'x' });
    expect((await api.put(`${messagesUrl(ws)}/${first.id}`, { metadata: null })).body.metadata).toEqual({ tag: 'x' });
    expect((await api.put(`${messagesUrl(ws)}/nope`, { metadata: {} })).body).toEqual({ detail: 'Message not found' });
  });

  it('clone copies messages up to and including message_id', async () => {
    const ws = uniqueId();
    const created = await seed(ws, 4);
    const clone = await api.post(`/v3/workspaces/${ws}/sessions/s/clone?message_id=${created[1].id}`);
    expect(clone.status).toBe(201);
    const copied = await api.post(`${messagesUrl(ws, clone.body.id)}/list`);
    expect(copied.body.items.map((m: { content: string }) => m.content)).toEqual(['message 0', 'message 1']);
    expect(copied.body.items[0].id).not.toBe(created[0].id);
  });
});

describe('v2 messages', () => {
  it('creates at the trailing-slash path with 200 and redirects the slash-less one', async () => {
    const ws = uniqueId();
    const created = await api.post(`/v2/workspaces/${ws}/sessions/s/messages/`, { messages: [{ peer_id: 'a', content: 'hi' }] });
    expect(created.status).toBe(200);
    expect(created.body[0]).toMatchObject({ peer_id: 'a', content: 'hi', token_count: 1 });
    const redirected = await api.post(`/v2/workspaces/${ws}/sessions/s/messages`, { messages: [{ peer_id: 'a', content: 'hi' }] });
    expect(redirected.status).toBe(307);
    expect(redirected.headers.location).toBe(`/v2/workspaces/${ws}/sessions/s/messages/`);
    const listed = await api.post(`/v2/workspaces/${ws}/sessions/s/messages/list`);
    expect(listed.body.total).toBe(1);
  });

  it('lists messages newest first with reverse, which v2 also offers for messages', async () => {
    const ws = uniqueId();
    await api.post(`/v2/workspaces/${ws}/sessions/s/messages/`, {
      messages: [{ peer_id: 'a', content: 'first' }, { peer_id: 'a', content: 'second' }, { peer_id: 'a', content: 'third' }],
    });
    const listed = await api.post(`/v2/workspaces/${ws}/sessions/s/messages/list?reverse=true&size=2`);
    expect(listed.body.items.map((m: { content: string }) => m.content)).toEqual(['third', 'second']);
  });

  it('gives the v2 session context a Representation object for a peer target', async () => {
    const ws = uniqueId();
    await api.post(`/v2/workspaces/${ws}/sessions/s/messages/`, { messages: [{ peer_id: 'alice', content: 'hi' }, { peer_id: 'bob', content: 'yo' }] });
    expect((await api.post(`/v2/workspaces/${ws}/observations`, {
      observations: [{ content: 'Alice likes tea', observer_id: 'bob', observed_id: 'alice', session_id: 's' }],
    })).status).toBe(200);
    const context = await api.get(`/v2/workspaces/${ws}/sessions/s/context?peer_target=alice&peer_perspective=bob`);
    expect(context.body.peer_representation.explicit).toEqual([
      expect.objectContaining({ content: 'Alice likes tea', session_name: 's', message_ids: [] }),
    ]);
    expect(context.body.peer_representation.deductive).toEqual([]);
  });
});
