import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const ids = (page: { items: { id: string }[] }) => page.items.map((item) => item.id).sort();
const observers = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`o${i}`, { observe_others: true }]));

describe('POST /v3/workspaces/{w}/sessions/{s}/peers (seed 4.2)', () => {
  it('creates the session, workspace and unknown peers, answering 200 with the session', async () => {
    const ws = uniqueId();
    const response = await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, {
      alice: {},
      bob: { observe_me: false, observe_others: true },
    });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body)).toEqual(['id', 'is_active', 'workspace_id', 'metadata', 'configuration', 'created_at']);
    expect(response.body).toMatchObject({ id: 's1', is_active: true, workspace_id: ws, metadata: {}, configuration: {} });

    const peers = await api.post(`/v3/workspaces/${ws}/peers/list`);
    expect(ids(peers.body)).toEqual(['alice', 'bob']);
    const members = await api.get(`/v3/workspaces/${ws}/sessions/s1/peers`);
    expect(ids(members.body)).toEqual(['alice', 'bob']);
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s1/peers/alice/config`)).body).toEqual({ observe_me: null, observe_others: null });
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s1/peers/bob/config`)).body).toEqual({ observe_me: false, observe_others: true });
  });

  it('keeps an active member config, replaces a returning member config, and never duplicates', async () => {
    const ws = uniqueId();
    const url = `/v3/workspaces/${ws}/sessions/s/peers`;
    await api.post(url, { alice: { observe_me: true }, bob: {} });
    await api.post(url, { alice: { observe_me: false } });
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s/peers/alice/config`)).body.observe_me).toBe(true);

    expect((await api.delete(url, ['bob'])).status).toBe(200);
    expect(ids((await api.get(url)).body)).toEqual(['alice']);
    await api.post(url, { bob: { observe_others: true } });
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s/peers/bob/config`)).body).toEqual({ observe_me: null, observe_others: true });
    const members = await api.get(url);
    expect(members.body.total).toBe(2);
  });

  it('does not change existing peers or session fields', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice', metadata: { keep: 1 } });
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', metadata: { m: 1 }, configuration: { x: 1 } });
    const response = await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, { alice: {} });
    expect(response.body).toMatchObject({ metadata: { m: 1 }, configuration: { x: 1 } });
    const alice = await api.put(`/v3/workspaces/${ws}/peers/alice`, {});
    expect(alice.body.metadata).toEqual({ keep: 1 });
  });

  it('accepts an empty object: get-or-create of the session alone', async () => {
    const ws = uniqueId();
    const response = await api.post(`/v3/workspaces/${ws}/sessions/empty/peers`, {});
    expect(response.status).toBe(200);
    expect(response.body.id).toBe('empty');
    expect((await api.post(`/v3/workspaces/${ws}/sessions/list`)).body.total).toBe(1);
  });

  it('coerces lax booleans and drops unknown config keys', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, { a: { observe_me: 'yes', observe_others: 0, extra: 1 } });
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s/peers/a/config`)).body).toEqual({ observe_me: true, observe_others: false });
  });

  it('enforces the observer limit for a new session and combined with existing members', async () => {
    const ws = uniqueId();
    const tooMany = await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, observers(11));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toEqual({
      detail:
        "Cannot create session s with 11 observers. Maximum allowed is 10 observers per session. Observers are peers with 'observe_others' set to true.",
    });
    expect((await api.post(`/v3/workspaces/${ws}/sessions/list`)).body.total).toBe(0);

    expect((await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, observers(9))).status).toBe(200);
    const combined = await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, { x: { observe_others: true }, y: { observe_others: true } });
    expect(combined.status).toBe(400);
    expect(combined.body.detail).toContain('with 11 observers');
    // the failed request changed nothing: x and y were not created
    expect((await api.post(`/v3/workspaces/${ws}/peers/list`, { filters: { id: ['x', 'y'] } })).body.total).toBe(0);
    // re-sending existing observers counts them once
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, { o0: { observe_others: true }, z: { observe_others: true } })).status).toBe(200);
  });

  it('answers 404 for a deleted (inactive) session', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions/gone/peers`, { a: {} });
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/gone`)).status).toBe(202);
    const response = await api.post(`/v3/workspaces/${ws}/sessions/gone/peers`, { b: {} });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ detail: `Session gone not found in workspace ${ws}` });
  });

  it('reports body errors with the contract bodies', async () => {
    const url = `/v3/workspaces/${uniqueId()}/sessions/s/peers`;
    expect((await api.post(url)).body).toEqual({ detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] });
    expect((await api.post(url, null)).body.detail[0].type).toBe('missing');
    expect((await api.post(url, ['alice'])).body).toEqual({
      detail: [{ type: 'dict_type', loc: ['body'], msg: 'Input should be a valid dictionary', input: ['alice'] }],
    });
    expect((await api.post(url, { alice: true })).body).toEqual({
      detail: [
        {
          type: 'model_attributes_type',
          loc: ['body', 'alice'],
          msg: 'Input should be a valid dictionary or object to extract fields from',
          input: true,
        },
      ],
    });
    expect((await api.post(url, { alice: { observe_me: 'perhaps' } })).body).toEqual({
      detail: [
        {
          type: 'bool_parsing',
          loc: ['body', 'alice', 'observe_me'],
          msg: 'Input should be a valid boolean, unable to interpret input',
          input: 'perhaps',
        },
      ],
    });
    const badKey = await api.post(url, { 'not valid': {} });
    expect(badKey.status).toBe(422);
    expect(badKey.body.detail[0]).toMatchObject({ type: 'string_pattern_mismatch', loc: ['body', 'not valid'] });
    const badSession = await api.post(`/v3/workspaces/${uniqueId()}/sessions/bad.id/peers`, {});
    expect(badSession.status).toBe(422);
    expect(badSession.body.detail[0]).toMatchObject({ loc: ['path', 'session_id'] });
  });

  it('survives many parallel add-peers on one session without duplicates or errors', async () => {
    const ws = uniqueId();
    const url = `/v3/workspaces/${ws}/sessions/busy/peers`;
    const requests = Array.from({ length: 40 }, (_, i) => api.post(url, { shared: {}, [`p${i % 10}`]: {} }));
    const responses = await Promise.all(requests);
    expect(responses.map((r) => r.status)).toEqual(Array(40).fill(200));
    const members = await api.get(`${url}?size=100`);
    expect(members.body.total).toBe(11);
    expect(new Set(ids(members.body)).size).toBe(11);
    const peers = await api.post(`/v3/workspaces/${ws}/peers/list`);
    expect(peers.body.total).toBe(11);
  });
});

describe('sessions of a peer (v3 twin of seed 4.3)', () => {
  it('includes left and inactive sessions, in creation order, reversible, filterable', async () => {
    const ws = uniqueId();
    for (const s of ['s1', 's2', 's3']) await api.post(`/v3/workspaces/${ws}/sessions/${s}/peers`, { alice: {} });
    await api.post(`/v3/workspaces/${ws}/sessions/other/peers`, { bob: {} });
    await api.delete(`/v3/workspaces/${ws}/sessions/s2/peers`, ['alice']);
    await api.delete(`/v3/workspaces/${ws}/sessions/s3`);
    const page = await api.post(`/v3/workspaces/${ws}/peers/alice/sessions`);
    expect(page.status).toBe(200);
    expect(page.body.items.map((s: { id: string }) => s.id)).toEqual(['s1', 's2', 's3']);
    expect(page.body.items[2].is_active).toBe(false);
    expect(page.body).toMatchObject({ total: 3, page: 1, size: 50, pages: 1 });
    const reversed = await api.post(`/v3/workspaces/${ws}/peers/alice/sessions?reverse=true&size=2`);
    expect(reversed.body.items.map((s: { id: string }) => s.id)).toEqual(['s3', 's2']);
    expect(reversed.body.pages).toBe(2);
    const active = await api.post(`/v3/workspaces/${ws}/peers/alice/sessions`, { filters: { is_active: true } });
    expect(active.body.items.map((s: { id: string }) => s.id)).toEqual(['s1', 's2']);
    const unknown = await api.post(`/v3/workspaces/${ws}/peers/nobody/sessions`);
    expect(unknown.body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
  });
});

describe('session resources', () => {
  it('get-or-create: 201 then 200; metadata replaced, configuration merged, peers added', async () => {
    const ws = uniqueId();
    const created = await api.post(`/v3/workspaces/${ws}/sessions`, {
      id: 's',
      metadata: { a: 1 },
      configuration: { reasoning: { enabled: true, custom_instructions: null }, custom: 'kept' },
      peers: { alice: {} },
    });
    expect(created.status).toBe(201);
    expect(created.body.configuration).toEqual({ reasoning: { enabled: true }, custom: 'kept' });
    const again = await api.post(`/v3/workspaces/${ws}/sessions`, {
      id: 's',
      metadata: { b: 2 },
      configuration: { dream: { enabled: false } },
      peer_names: { bob: {} },
    });
    expect(again.status).toBe(200);
    expect(again.body.metadata).toEqual({ b: 2 });
    expect(again.body.configuration).toEqual({ reasoning: { enabled: true }, custom: 'kept', dream: { enabled: false } });
    expect(ids((await api.get(`/v3/workspaces/${ws}/sessions/s/peers`)).body)).toEqual(['alice', 'bob']);
  });

  it('validates configuration sections', async () => {
    const ws = uniqueId();
    const bad = await api.post(`/v3/workspaces/${ws}/sessions`, {
      id: 's',
      configuration: { summary: { messages_per_short_summary: 30, messages_per_long_summary: 20 } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({
      type: 'value_error',
      loc: ['body', 'configuration', 'summary'],
      msg: 'Value error, messages_per_short_summary must be less than messages_per_long_summary',
    });
    const low = await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', configuration: { summary: { messages_per_short_summary: 5 } } });
    expect(low.body.detail[0]).toMatchObject({ type: 'greater_than_equal', loc: ['body', 'configuration', 'summary', 'messages_per_short_summary'] });
  });

  it('limits reasoning.custom_instructions to 2000 tokens, in session, workspace and message configuration', async () => {
    const ws = uniqueId();
    // " cat" is one o200k_base token: 2000 of them fit, 2001 do not
    const fits = ' cat'.repeat(2000);
    const over = ' cat'.repeat(2001);
    const expected = (loc: (string | number)[]) => ({
      type: 'value_error',
      loc,
      msg: 'Value error, custom_instructions exceeds DERIVER.MAX_CUSTOM_INSTRUCTIONS_TOKENS (2000 tokens)',
      input: over,
      ctx: { error: {} },
    });
    const session = await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', configuration: { reasoning: { custom_instructions: over } } });
    expect(session.status).toBe(422);
    expect(session.body.detail).toEqual([expected(['body', 'configuration', 'reasoning', 'custom_instructions'])]);
    const workspace = await api.put(`/v3/workspaces/${ws}`, { configuration: { reasoning: { custom_instructions: over } } });
    expect(workspace.body.detail).toEqual([expected(['body', 'configuration', 'reasoning', 'custom_instructions'])]);
    const message = await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, {
      messages: [{ peer_id: 'alice', content: 'hi', configuration: { reasoning: { custom_instructions: over } } }],
    });
    expect(message.body.detail).toEqual([expected(['body', 'messages', 0, 'configuration', 'reasoning', 'custom_instructions'])]);
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s/context`)).body.messages).toEqual([]);

    const ok = await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', configuration: { reasoning: { custom_instructions: fits } } });
    expect(ok.status).toBe(201);
    expect(ok.body.configuration.reasoning.custom_instructions).toBe(fits);
  });

  it('lists active sessions only; update creates; delete is 202 then 404', async () => {
    const ws = uniqueId();
    expect((await api.put(`/v3/workspaces/${ws}/sessions/a`, { metadata: { x: 1 } })).status).toBe(200);
    await api.put(`/v3/workspaces/${ws}/sessions/b`, {});
    const deleted = await api.delete(`/v3/workspaces/${ws}/sessions/a`);
    expect(deleted.status).toBe(202);
    expect(deleted.body).toEqual({ message: 'Session deleted successfully' });
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/a`)).body).toEqual({ detail: `Session a not found in workspace ${ws}` });
    const listed = await api.post(`/v3/workspaces/${ws}/sessions/list`);
    expect(listed.body.items.map((s: { id: string }) => s.id)).toEqual(['b']);
    expect(listed.body.total).toBe(1);
    expect((await api.put(`/v3/workspaces/${ws}/sessions/a`, {})).status).toBe(404);
  });

  it('set peers replaces membership; remove ignores unknown ids', async () => {
    const ws = uniqueId();
    const url = `/v3/workspaces/${ws}/sessions/s/peers`;
    await api.post(url, { a: {}, b: {} });
    const set = await api.put(url, { c: { observe_me: true }, a: {} });
    expect(set.status).toBe(200);
    expect(ids((await api.get(url)).body)).toEqual(['a', 'c']);
    expect((await api.delete(url, ['a', 'ghost'])).status).toBe(200);
    expect(ids((await api.get(url)).body)).toEqual(['c']);
    expect((await api.delete(url, { a: 1 })).body.detail[0]).toMatchObject({ type: 'list_type', loc: ['body'] });
    expect((await api.put(`/v3/workspaces/${ws}/sessions/none/peers`, {})).status).toBe(404);
  });

  it('peer config: get 404 for non-members, set merges and returns 204', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, { a: {} });
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'b' });
    const missing = await api.get(`/v3/workspaces/${ws}/sessions/s/peers/b/config`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: `Session peer b not found in session s in workspace ${ws}` });
    const set = await api.put(`/v3/workspaces/${ws}/sessions/s/peers/b/config`, { observe_others: true });
    expect(set.status).toBe(204);
    expect(set.text).toBe('');
    await api.put(`/v3/workspaces/${ws}/sessions/s/peers/b/config`, { observe_me: false });
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s/peers/b/config`)).body).toEqual({ observe_me: false, observe_others: true });
    const ghost = await api.put(`/v3/workspaces/${ws}/sessions/s/peers/ghost/config`, {});
    expect(ghost.body).toEqual({ detail: `Peer ghost not found in workspace ${ws}` });
  });

  it('clone copies metadata, configuration and members (former members return)', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', metadata: { m: 1 }, peers: { a: { observe_me: true }, b: {} } });
    await api.delete(`/v3/workspaces/${ws}/sessions/s/peers`, ['b']);
    const clone = await api.post(`/v3/workspaces/${ws}/sessions/s/clone`);
    expect(clone.status).toBe(201);
    expect(clone.body.id).toMatch(/^[A-Za-z0-9_-]{21}$/);
    expect(clone.body.metadata).toEqual({ m: 1 });
    expect(ids((await api.get(`/v3/workspaces/${ws}/sessions/${clone.body.id}/peers`)).body)).toEqual(['a', 'b']);
    expect((await api.post(`/v3/workspaces/${ws}/sessions/nope/clone`)).body).toEqual({ detail: 'Original session not found' });
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s/clone?message_id=xyz`)).body).toEqual({ detail: 'Session not found' });
  });
});
