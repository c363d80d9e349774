import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

/*
 * Scopes through HTTP (shared/reference/scopes.md S1-S4, S7): the seven routes, `scopes` on
 * session create, `kind` on the peer list, memberships, the observer limit, and the guardrails.
 * Backfill, removal and the scoped reads are in scope-memory.test.ts.
 */

let api: TestApi;
let authApi: TestApi;
beforeAll(async () => {
  api = await buildTestApp({ SESSION_OBSERVERS_LIMIT: '3' });
  authApi = await buildTestApp({ AUTH_USE_AUTH: 'true' });
});
afterAll(async () => {
  await api.close();
  await authApi.close();
});

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$/;

/** A peer that holds a reserved name without being a scope (only legacy data makes one). */
async function squat(ws: string, name: string): Promise<void> {
  const { store } = api.database;
  await store.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, new Date());
  await store.peers.createIfAbsent(ws, { id: `scope.${name}`, metadata: {}, configuration: {} }, new Date());
}

describe('POST /v3/workspaces/{w}/scopes', () => {
  it('creates with 201 and answers 200 after; given metadata replaces, omitted keeps', async () => {
    const ws = uniqueId();
    const created = await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'therapy', metadata: { purpose: 'testing' } });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body)).toEqual(['id', 'metadata', 'created_at']);
    expect(created.body).toMatchObject({ id: 'therapy', metadata: { purpose: 'testing' } });
    expect(created.body.created_at).toMatch(ISO);

    const again = await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'therapy' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(created.body);
    const replaced = await api.post(`/v3/workspaces/${ws}/scopes`, { name: 'therapy', metadata: { k: 'v' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.metadata).toEqual({ k: 'v' });
    expect((await api.get(`/v3/workspaces/${ws}/scopes/therapy`)).body.metadata).toEqual({ k: 'v' });
  });

  it('refuses bad names with the reference 422s, in its order', async () => {
    const ws = uniqueId();
    const cases: [unknown, string][] = [
      ['', 'String should have at least 1 character'],
      ['x'.repeat(507), 'Value error, Scope name must be between 1 and 506 characters'],
      ['scope.therapy', "Value error, Scope name must not start with the reserved prefix 'scope.' (scope names are unprefixed)"],
      ['bad name!', 'Value error, Scope name must match pattern ^[a-zA-Z0-9_-]+$'],
    ];
    for (const [id, msg] of cases) {
      const res = await api.post(`/v3/workspaces/${ws}/scopes`, { id });
      expect(res.status).toBe(422);
      expect(res.body.detail).toHaveLength(1);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'id'], msg });
    }
    expect((await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'x'.repeat(506) })).status).toBe(201);
    expect((await api.post(`/v3/workspaces/${ws}/scopes`, {})).body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'id'] });
  });

  it('never adopts a squatter: 409, and it stays an ordinary peer', async () => {
    const ws = uniqueId();
    await squat(ws, 'x');
    const res = await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'x' });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      detail: `A peer named 'scope.x' already exists in workspace ${ws} but is not a scope. Rename or delete that peer before creating this scope.`,
    });
    expect((await api.get(`/v3/workspaces/${ws}/scopes/x`)).status).toBe(404);
    expect((await api.post(`/v3/workspaces/${ws}/scopes/list`)).body.items).toEqual([]);
    const peers = await api.post(`/v3/workspaces/${ws}/peers/list`, {});
    expect(peers.body.items.map((p: { id: string }) => p.id)).toEqual(['scope.x']);
  });

  it('a forged configuration kind makes no scope', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'forged', configuration: { kind: 'scope' } });
    expect((await api.post(`/v3/workspaces/${ws}/scopes/list`)).body.items).toEqual([]);
    expect((await api.post(`/v3/workspaces/${ws}/peers/list`, {})).body.total).toBe(1);
  });
});

describe('scope list, get, sessions and status', () => {
  it('lists real scopes only, unprefixed, oldest first (reverse flips), paged', async () => {
    const ws = uniqueId();
    for (const id of ['a', 'b', 'c']) await api.post(`/v3/workspaces/${ws}/scopes`, { id });
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    const list = await api.post(`/v3/workspaces/${ws}/scopes/list?size=2`);
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 3, page: 1, size: 2, pages: 2 });
    expect(list.body.items.map((s: { id: string }) => s.id)).toEqual(['a', 'b']);
    const reversed = await api.post(`/v3/workspaces/${ws}/scopes/list?reverse=true`);
    expect(reversed.body.items.map((s: { id: string }) => s.id)).toEqual(['c', 'b', 'a']);
    expect((await api.post(`/v3/workspaces/${ws}/scopes/list?size=0`)).status).toBe(422);
  });

  it('GET answers 404 with the reference text for an unknown scope', async () => {
    const ws = uniqueId();
    const res = await api.get(`/v3/workspaces/${ws}/scopes/nope`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Scope nope not found in workspace ${ws}` });
  });

  it('adds sessions (204), lists them in join order, removes one (204), keeps its row with left_at', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'x' });
    for (const id of ['s1', 's2', 's3']) await api.post(`/v3/workspaces/${ws}/sessions`, { id });
    const add = await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['s2', 's1', 's2'] });
    expect(add.status).toBe(204);
    expect(add.text).toBe('');
    await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['s3'] });
    const listed = await api.post(`/v3/workspaces/${ws}/scopes/x/sessions/list`);
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((s: { id: string }) => s.id).slice(2)).toEqual(['s3']);
    expect(new Set(listed.body.items.slice(0, 2).map((s: { id: string }) => s.id))).toEqual(new Set(['s1', 's2']));
    expect(Object.keys(listed.body.items[0])).toEqual(['id', 'is_active', 'workspace_id', 'metadata', 'configuration', 'created_at']);
    const newestFirst = await api.post(`/v3/workspaces/${ws}/scopes/x/sessions/list?reverse=true`);
    expect(newestFirst.body.items[0].id).toBe('s3');

    // the membership is the same as a hand-made observer's
    const member = await api.database.store.sessions.findMembership(ws, 's1', 'scope.x');
    expect(member).toMatchObject({ configuration: { observe_me: false, observe_others: true }, leftAt: null });

    expect((await api.delete(`/v3/workspaces/${ws}/scopes/x/sessions/s1`)).status).toBe(204);
    const after = await api.post(`/v3/workspaces/${ws}/scopes/x/sessions/list`);
    expect(after.body.items.map((s: { id: string }) => s.id).sort()).toEqual(['s2', 's3']);
    expect((await api.database.store.sessions.findMembership(ws, 's1', 'scope.x'))?.leftAt).toBeInstanceOf(Date);
    // removing a session that is no member is a 204 too
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's4' });
    expect((await api.delete(`/v3/workspaces/${ws}/scopes/x/sessions/s4`)).status).toBe(204);
  });

  it('answers the reference 404s and 422s of the session routes', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'x' });
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 'here' });
    const unknownScope = await api.post(`/v3/workspaces/${ws}/scopes/nope/sessions`, { session_ids: ['here'] });
    expect(unknownScope.status).toBe(404);
    expect(unknownScope.body).toEqual({ detail: `Scope nope not found in workspace ${ws}` });
    const missing = await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['here', 'zz', 'gone'] });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: `Session(s) ['gone', 'zz'] not found in workspace ${ws}` });
    // nothing of a refused add is kept
    expect((await api.post(`/v3/workspaces/${ws}/scopes/x/sessions/list`)).body.total).toBe(0);
    // an inactive session is not found
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 'old' });
    await api.delete(`/v3/workspaces/${ws}/sessions/old`);
    expect((await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['old'] })).status).toBe(404);

    const empty = await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: [] });
    expect(empty.status).toBe(422);
    expect(empty.body.detail[0].msg).toBe('List should have at least 1 item after validation, not 0');
    const tooMany = await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: Array.from({ length: 101 }, (_, i) => `s${i}`) });
    expect(tooMany.body.detail[0].msg).toBe('List should have at most 100 items after validation, not 101');

    expect((await api.delete(`/v3/workspaces/${ws}/scopes/nope/sessions/here`)).status).toBe(404);
    const noSession = await api.delete(`/v3/workspaces/${ws}/scopes/x/sessions/zz`);
    expect(noSession.status).toBe(404);
    expect(noSession.body).toEqual({ detail: `Session zz not found in workspace ${ws}` });
    expect((await api.post(`/v3/workspaces/${ws}/scopes/nope/sessions/list`)).status).toBe(404);
    expect((await api.get(`/v3/workspaces/${ws}/scopes/nope/status`)).status).toBe(404);
    // an existing empty scope lists nothing; its status is {}
    expect((await api.post(`/v3/workspaces/${ws}/scopes/x/sessions/list`)).body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
    expect((await api.get(`/v3/workspaces/${ws}/scopes/x/status`)).body).toEqual({ backfill_status: {} });
  });

  it('a queued backfill shows in the queue status, of the session and of the scope as observer', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {} } });
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'hi' }] });
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'x' });
    await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['s1'] });
    const status = await api.get(`/v3/workspaces/${ws}/queue/status`);
    expect(status.body).toMatchObject({ total_work_units: 1, pending_work_units: 1, sessions: { s1: { pending_work_units: 1 } } });
    expect((await api.get(`/v3/workspaces/${ws}/queue/status?observer_id=scope.x`)).body.pending_work_units).toBe(1);
    expect((await api.get(`/v3/workspaces/${ws}/queue/status?observer_id=alice`)).body.pending_work_units).toBe(0);
    expect((await api.get(`/v3/workspaces/${ws}/queue/status?session_id=s1`)).body.pending_work_units).toBe(1);
    // a deleted session's status entry goes with it
    await api.delete(`/v3/workspaces/${ws}/sessions/s1`);
  });

  it('is v3 only', async () => {
    const ws = uniqueId();
    expect((await api.post(`/v2/workspaces/${ws}/scopes`, { id: 'x' })).status).toBe(404);
  });
});

describe('sessions with `scopes`, peers with `kind`', () => {
  it('joins a new session to scopes it creates; the scope peer is hidden from members and the default peer list', async () => {
    const ws = uniqueId();
    const res = await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', peers: { alice: {} }, scopes: ['a', 'b'] });
    expect(res.status).toBe(201);
    expect((await api.post(`/v3/workspaces/${ws}/scopes/a/sessions/list`)).body.items.map((s: { id: string }) => s.id)).toEqual(['s']);
    expect((await api.post(`/v3/workspaces/${ws}/scopes/b/sessions/list`)).body.total).toBe(1);
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s/peers`)).body.items.map((p: { id: string }) => p.id)).toEqual(['alice']);

    const plain = await api.post(`/v3/workspaces/${ws}/peers/list`, {});
    expect(plain.body).toMatchObject({ total: 1, items: [{ id: 'alice' }] });
    const scopes = await api.post(`/v3/workspaces/${ws}/peers/list`, { kind: 'scope' });
    expect(scopes.body.total).toBe(2);
    expect(scopes.body.items.map((p: { id: string }) => p.id)).toEqual(['scope.a', 'scope.b']);
    expect(scopes.body.items[0].configuration).toEqual({ observe_me: false });
    expect(Object.keys(scopes.body.items[0])).toEqual(['id', 'workspace_id', 'created_at', 'metadata', 'configuration']);
    const all = await api.post(`/v3/workspaces/${ws}/peers/list`, { kind: 'all' });
    expect(all.body.total).toBe(3);
    const filtered = await api.post(`/v3/workspaces/${ws}/peers/list`, { kind: 'all', filters: { id: 'scope.b' } });
    expect(filtered.body.items.map((p: { id: string }) => p.id)).toEqual(['scope.b']);
    const bad = await api.post(`/v3/workspaces/${ws}/peers/list`, { kind: 'scopes' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ type: 'literal_error', loc: ['body', 'kind'] });

    // existing session: 200, and it joins the new scope
    const existing = await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', scopes: ['c'] });
    expect(existing.status).toBe(200);
    expect((await api.post(`/v3/workspaces/${ws}/scopes/c/sessions/list`)).body.total).toBe(1);
  });

  it('refuses bad scope names and more than 100, creating nothing; a squatter is 409 and nothing is kept', async () => {
    const ws = uniqueId();
    const prefixed = await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', scopes: ['ok', 'scope.x'] });
    expect(prefixed.status).toBe(422);
    expect(prefixed.body.detail[0]).toMatchObject({
      loc: ['body', 'scopes'],
      msg: "Value error, Scope name must not start with the reserved prefix 'scope.' (scope names are unprefixed)",
    });
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', scopes: ['bad name!'] })).status).toBe(422);
    const many = await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', scopes: Array.from({ length: 101 }, (_, i) => `x${i}`) });
    expect(many.body.detail[0].msg).toBe('List should have at most 100 items after validation, not 101');
    await squat(ws, 'taken');
    const conflictRes = await api.post(`/v3/workspaces/${ws}/sessions`, { id: 'new', scopes: ['fine', 'taken'] });
    expect(conflictRes.status).toBe(409);
    expect((await api.get(`/v3/workspaces/${ws}/scopes/fine`)).status).toBe(404);
    expect((await api.post(`/v3/workspaces/${ws}/sessions/list`, {})).body.total).toBe(0);
  });

  it('scope memberships never count towards SESSION_OBSERVERS_LIMIT; real observers still do', async () => {
    const ws = uniqueId();
    // the limit is 3 in this app
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', scopes: ['a', 'b', 'c', 'd', 'e'] });
    for (const id of ['f', 'g']) await api.post(`/v3/workspaces/${ws}/scopes`, { id });
    expect((await api.post(`/v3/workspaces/${ws}/scopes/f/sessions`, { session_ids: ['s'] })).status).toBe(204);
    const observers = { o1: { observe_others: true }, o2: { observe_others: true }, o3: { observe_others: true } };
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, observers)).status).toBe(200);
    const fourth = await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, { o4: { observe_others: true } });
    expect(fourth.status).toBe(400);
    // and a scope joins a session at its limit
    expect((await api.post(`/v3/workspaces/${ws}/scopes/g/sessions`, { session_ids: ['s'] })).status).toBe(204);
  });

  it('setting the peers of a session never detaches its scopes', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', peers: { bob: {} }, scopes: ['x'] });
    expect((await api.put(`/v3/workspaces/${ws}/sessions/s/peers`, { alice: {} })).status).toBe(200);
    expect((await api.put(`/v3/workspaces/${ws}/sessions/s/peers`, {})).status).toBe(200);
    expect((await api.database.store.sessions.findMembership(ws, 's', 'scope.x'))?.leftAt).toBeNull();
    expect((await api.database.store.sessions.findMembership(ws, 's', 'bob'))?.leftAt).toBeInstanceOf(Date);
  });

  it('a message of a member queues the scope as an observer', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', peers: { alice: {} }, scopes: ['x'] });
    const members = await api.database.store.sessions.memberships(ws, 's');
    expect(members.find((m) => m.peerId === 'scope.x')).toMatchObject({ isScope: true, configuration: { observe_others: true, observe_me: false } });
  });
});

describe('guardrails (S4): a scope may observe, and is never observed', () => {
  it('answers each refused position with the reference text', async () => {
    const ws = uniqueId();
    const w = `/v3/workspaces/${ws}`;
    await api.post(`${w}/sessions`, { id: 's', peers: { alice: {} }, scopes: ['x'] });
    const cases: [string, () => Promise<{ status: number; body: any }>, string][] = [
      ['chat path', () => api.post(`${w}/peers/scope.x/chat`, { query: 'q' }), 'No representation is formed of a scope, so a scope cannot be a chat observer or target.'],
      ['chat target', () => api.post(`${w}/peers/alice/chat`, { query: 'q', target: 'scope.x' }), 'cannot be a chat observer or target.'],
      ['representation', () => api.post(`${w}/peers/alice/representation`, { target: 'scope.x' }), 'cannot be a representation observer or target.'],
      ['peer context', () => api.get(`${w}/peers/scope.x/context`), 'Use the `scope` option on the read routes instead.'],
      ['context target', () => api.get(`${w}/sessions/s/context?peer_target=scope.x`), 'so a scope cannot be a context target.'],
      ['context perspective', () => api.get(`${w}/sessions/s/context?peer_target=alice&peer_perspective=scope.x`), 'Use the `scope` parameter instead.'],
      ['card', () => api.put(`${w}/peers/alice/card?target=scope.x`, { peer_card: ['a'] }), 'No peer card is ever formed about a scope.'],
      ['self card', () => api.put(`${w}/peers/scope.x/card`, { peer_card: ['a'] }), 'No peer card is ever formed about a scope.'],
      ['conclusion', () => api.post(`${w}/conclusions`, { conclusions: [{ content: 'c', observer_id: 'alice', observed_id: 'scope.x', session_id: 's' }] }), 'No conclusion is ever formed about a scope.'],
      ['dream observed', () => api.post(`${w}/schedule_dream`, { observer: 'alice', observed: 'scope.x', dream_type: 'omni' }), 'so a scope cannot be the observed peer of a dream.'],
      ['dream observer as observed', () => api.post(`${w}/schedule_dream`, { observer: 'scope.x', dream_type: 'omni' }), 'so a scope cannot be the observed peer of a dream.'],
      ['message author', () => api.post(`${w}/sessions/s/messages`, { messages: [{ peer_id: 'scope.x', content: 'hi' }] }), 'Scope peers cannot author messages.'],
      ['session peers', () => api.post(`${w}/sessions/s/peers`, { 'scope.x': {} }), 'Scope membership is managed via the scopes routes (/v3/workspaces/{workspace_id}/scopes/{scope_id}/sessions)'],
      ['session create', () => api.post(`${w}/sessions`, { id: 's2', peers: { 'scope.x': {} } }), 'or the `scopes` field at session creation.'],
      ['remove peers', () => api.delete(`${w}/sessions/s/peers`, ['scope.x']), 'Scope membership is managed via the scopes routes'],
      ['member config', () => api.get(`${w}/sessions/s/peers/scope.x/config`), 'Scope membership is managed via the scopes routes.'],
      ['set member config', () => api.put(`${w}/sessions/s/peers/scope.x/config`, { observe_me: true }), 'Scope membership is managed via the scopes routes.'],
    ];
    for (const [name, call, text] of cases) {
      const res = await call();
      expect(res.status, name).toBe(422);
      expect(res.body.detail, name).toContain("Peer name(s) ['scope.x'] are scopes. ");
      expect(res.body.detail, name).toContain(text);
    }
    const update = await api.put(`${w}/peers/scope.x`, { metadata: { a: 1 } });
    expect(update.status).toBe(422);
    expect(update.body).toEqual({ detail: "Peer 'scope.x' is a scope. Use the scopes routes to manage scopes." });
    // the membership stayed as it was
    expect((await api.database.store.sessions.findMembership(ws, 's', 'scope.x'))?.configuration).toEqual({ observe_me: false, observe_others: true });
  });

  it('reserved names that name no peer: refused where the reference refuses them, never created', async () => {
    const ws = uniqueId();
    const w = `/v3/workspaces/${ws}`;
    await api.post(`${w}/sessions`, { id: 's', peers: { alice: {} } });
    const later = await api.post(`${w}/peers/alice/chat`, { query: 'q', target: 'scope.new' });
    expect(later.status).toBe(422);
    expect(later.body.detail).toBe(
      "Peer name(s) ['scope.new'] are in the reserved scope namespace and do not exist, so they may become scopes later. No representation is formed of a scope, so a scope cannot be a chat observer or target.",
    );
    const author = await api.post(`${w}/sessions/s/messages`, { messages: [{ peer_id: 'scope.new', content: 'hi' }] });
    expect(author.body).toEqual({ detail: "Peer name(s) ['scope.new'] use the reserved scope prefix 'scope.'. Use the scopes routes to create scopes." });
    expect((await api.put(`${w}/peers/scope.new`, { metadata: {} })).status).toBe(422);
    const observed = await api.post(`${w}/conclusions`, { conclusions: [{ content: 'c', observer_id: 'alice', observed_id: 'scope.new', session_id: 's' }] });
    expect(observed.status).toBe(404);
    expect(observed.body).toEqual({ detail: `Peer scope.new not found in workspace ${ws}` });
    expect((await api.delete(`${w}/sessions/s/peers`, ['scope.new'])).status).toBe(200);
    const dream = await api.post(`${w}/schedule_dream`, { observer: 'alice', observed: 'scope.new', dream_type: 'omni' });
    expect(dream.status).toBe(422);
    expect(dream.body.detail).toContain('are in the reserved scope namespace and do not exist');
    expect(await api.database.driver.all(`SELECT id FROM jobs WHERE workspace_id = ?`, [ws])).toEqual([]);
    expect(await api.database.store.peers.find(ws, 'scope.new')).toBeUndefined();
  });

  it('a squatter works in every position; a scope works where it observes', async () => {
    const ws = uniqueId();
    const w = `/v3/workspaces/${ws}`;
    await squat(ws, 'legacy');
    await api.post(`${w}/sessions`, { id: 's', peers: { alice: {}, 'scope.legacy': {} }, scopes: ['x'] });
    expect((await api.post(`${w}/sessions/s/messages`, { messages: [{ peer_id: 'scope.legacy', content: 'hi' }] })).status).toBe(201);
    expect((await api.put(`${w}/peers/scope.legacy`, { metadata: { a: 1 } })).status).toBe(200);
    const asObserver = await api.post(`${w}/conclusions`, { conclusions: [{ content: 'alice likes tea', observer_id: 'scope.x', observed_id: 'alice', session_id: 's' }] });
    expect(asObserver.status).toBe(201);
    expect((await api.put(`${w}/peers/scope.x/card?target=alice`, { peer_card: ['likes tea'] })).status).toBe(200);
    expect((await api.get(`${w}/peers/scope.x/card?target=alice`)).body).toEqual({ peer_card: ['likes tea'] });
    expect((await api.post(`${w}/peers/scope.x/sessions`, {})).body.items.map((s: { id: string }) => s.id)).toEqual(['s']);
  });
});

describe('auth (S3)', () => {
  it('workspace and admin keys only on the scope routes and on `scopes` at session create', async () => {
    const ws = uniqueId();
    const admin = authApi.token({ isAdmin: true });
    const workspaceKey = authApi.token({ workspaceId: ws });
    const peerKey = authApi.token({ workspaceId: ws, peerId: 'alice' });
    const sessionKey = authApi.token({ workspaceId: ws, sessionId: 's' });
    expect((await authApi.post(`/v3/workspaces/${ws}/scopes`, { id: 'x' }, { token: workspaceKey })).status).toBe(201);
    expect((await authApi.post(`/v3/workspaces/${ws}/sessions`, { id: 's' }, { token: admin })).status).toBe(201);
    for (const token of [peerKey, sessionKey]) {
      for (const [method, url] of [
        ['POST', 'scopes'],
        ['POST', 'scopes/list'],
        ['GET', 'scopes/x'],
        ['POST', 'scopes/x/sessions/list'],
        ['GET', 'scopes/x/status'],
        ['DELETE', 'scopes/x/sessions/s'],
      ]) {
        const res = await authApi.request(method, `/v3/workspaces/${ws}/${url}`, method === 'POST' && url === 'scopes' ? { id: 'y' } : undefined, { token });
        expect(res.status, `${method} ${url}`).toBe(401);
        expect(res.body).toEqual({ detail: 'JWT not permissioned for this resource' });
      }
    }
    // another workspace's key reaches nothing
    const other = authApi.token({ workspaceId: uniqueId() });
    expect((await authApi.get(`/v3/workspaces/${ws}/scopes/x`, { token: other })).status).toBe(401);

    const bySession = await authApi.post(`/v3/workspaces/${ws}/sessions`, { id: 's', scopes: ['z'] }, { token: sessionKey });
    expect(bySession.status).toBe(401);
    expect(bySession.body).toEqual({ detail: 'Scope membership requires a workspace-level key' });
    const byPeer = await authApi.post(`/v3/workspaces/${ws}/sessions`, { id: 's9', scopes: ['z'] }, { token: peerKey });
    expect(byPeer.body).toEqual({ detail: 'Scope membership requires a workspace-level key' });
    expect((await authApi.get(`/v3/workspaces/${ws}/scopes/z`, { token: admin })).status).toBe(404);
    // an empty list is no membership
    expect((await authApi.post(`/v3/workspaces/${ws}/sessions`, { id: 's', scopes: [] }, { token: sessionKey })).status).toBe(200);
    expect((await authApi.post(`/v3/workspaces/${ws}/sessions`, { id: 's', scopes: ['z'] }, { token: workspaceKey })).status).toBe(200);
  });
});
