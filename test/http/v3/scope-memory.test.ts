import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Worker } from '../../../src/jobs/worker.js';
import { createWorker } from '../../../src/runtime/runtime.js';
import { runScopeBackfill } from '../../../src/domain/scopes/scope-work.js';
import { createDomainContext } from '../../../src/domain/context.js';
import type { ConclusionRecord } from '../../../src/storage/store.js';
import { silent } from '../../support/polling.js';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';
import { type ScopeWorkPayload } from '../../../src/domain/job-kinds.js';

/*
 * What a scope remembers (shared/reference/scopes.md S5, S6): the backfill of sessions that held
 * conclusions before they joined, the removal of sessions that left, and the reads through the
 * `scope` option (representation, session context, workspace search; chat in scope-chat.test.ts).
 * No model is configured: backfills and removals need none.
 */

let api: TestApi;
let authApi: TestApi;
let worker: Worker;
beforeAll(async () => {
  api = await buildTestApp({ WORKER_POLL_MS: '20', JOB_RETRY_BASE_MS: '10', JOB_RETRY_MAX_MS: '20' }, { ownDatabase: true });
  authApi = await buildTestApp({ AUTH_USE_AUTH: 'true' });
  worker = createWorker(api.config, api.database, silent);
});
afterAll(async () => {
  await worker.stop(1000);
  await api.close();
  await authApi.close();
});

/** Runs the worker until the workspace has no open job. */
async function drain(ws: string): Promise<void> {
  worker.start();
  const deadline = Date.now() + 15_000;
  for (;;) {
    const row = await api.database.driver.get<{ n: number | string }>(`SELECT count(*) AS n FROM jobs WHERE workspace_id = ? AND status IN ('pending', 'running')`, [ws]);
    if (Number(row?.n ?? 0) === 0) break;
    if (Date.now() > deadline) {
      const open = await api.database.driver.all(`SELECT kind, status, attempts, last_error FROM jobs WHERE workspace_id = ? AND status IN ('pending', 'running')`, [ws]);
      throw new Error(`queue not drained: ${JSON.stringify(open)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function conclude(ws: string, items: { observer_id: string; observed_id: string; content: string; session_id?: string }[]): Promise<string[]> {
  const res = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: items });
  expect(res.status).toBe(201);
  return res.body.map((c: { id: string }) => c.id);
}

/** A session with members and one message each (so a backfill has something to look at). */
async function session(ws: string, id: string, peers: string[]): Promise<void> {
  await api.post(`/v3/workspaces/${ws}/sessions`, { id, peers: Object.fromEntries(peers.map((p) => [p, {}])) });
  const res = await api.post(`/v3/workspaces/${ws}/sessions/${id}/messages`, { messages: peers.map((p) => ({ peer_id: p, content: `hello from ${p}` })) });
  expect(res.status).toBe(201);
}

/** The live conclusions of a collection, oldest first. */
async function collection(ws: string, observer: string, observed: string): Promise<ConclusionRecord[]> {
  return (await api.database.store.memory.recentConclusions({ workspaceId: ws, observerId: observer, observedId: observed }, 100)).reverse();
}

async function copiedFrom(ws: string, id: string): Promise<string | null> {
  const row = await api.database.driver.get<{ copied_from: string | null }>('SELECT copied_from FROM conclusions WHERE workspace_id = ? AND id = ?', [ws, id]);
  return row?.copied_from ?? null;
}

describe('backfill (S5.2)', () => {
  it('copies the session’s own explicit conclusions once, with their session; status pending then completed', async () => {
    const ws = uniqueId();
    await session(ws, 's1', ['alice']);
    await session(ws, 's2', ['alice']);
    const [inS1] = await conclude(ws, [
      { observer_id: 'alice', observed_id: 'alice', content: 'alice plays bass', session_id: 's1' },
      { observer_id: 'alice', observed_id: 'alice', content: 'alice runs marathons', session_id: 's2' },
    ]);
    // another observer's conclusion about alice is not hers to copy
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'bob' });
    await conclude(ws, [{ observer_id: 'bob', observed_id: 'alice', content: 'bob thinks alice is loud', session_id: 's1' }]);
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'x' });
    expect((await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['s1'] })).status).toBe(204);

    const pending = await api.get(`/v3/workspaces/${ws}/scopes/x/status`);
    expect(Object.keys(pending.body.backfill_status)).toEqual(['s1']);
    expect(pending.body.backfill_status.s1.state).toBe('pending');
    expect(pending.body.backfill_status.s1.updated_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00$/);
    expect(pending.body.backfill_status.s1).not.toHaveProperty('docs_copied');

    await drain(ws);
    const done = await api.get(`/v3/workspaces/${ws}/scopes/x/status`);
    expect(done.body.backfill_status.s1).toMatchObject({ state: 'completed', docs_copied: 1 });
    const copies = await collection(ws, 'scope.x', 'alice');
    expect(copies.map((c) => [c.content, c.sessionId, c.level])).toEqual([['alice plays bass', 's1', 'explicit']]);
    expect(await copiedFrom(ws, copies[0].id)).toBe(inS1);

    // added again (already a member): queued again, copies nothing twice
    await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['s1'] });
    await drain(ws);
    expect((await api.get(`/v3/workspaces/${ws}/scopes/x/status`)).body.backfill_status.s1).toMatchObject({ state: 'completed', docs_copied: 0 });
    expect(await collection(ws, 'scope.x', 'alice')).toHaveLength(1);
  });

  it('each sender’s conclusions go to the scope’s collection about that sender; empty sessions get no job', async () => {
    const ws = uniqueId();
    await session(ws, 's1', ['alice', 'bob']);
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 'empty' });
    await conclude(ws, [
      { observer_id: 'alice', observed_id: 'alice', content: 'alice likes tea', session_id: 's1' },
      { observer_id: 'bob', observed_id: 'bob', content: 'bob likes coffee', session_id: 's1' },
    ]);
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'x' });
    await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['s1', 'empty'] });
    const jobs = await api.database.driver.all<{ kind: string }>(`SELECT kind FROM jobs WHERE workspace_id = ? AND kind LIKE 'scope.%'`, [ws]);
    expect(jobs.map((j) => j.kind)).toEqual(['scope.backfill']);
    expect(Object.keys((await api.get(`/v3/workspaces/${ws}/scopes/x/status`)).body.backfill_status)).toEqual(['s1']);
    await drain(ws);
    expect((await collection(ws, 'scope.x', 'alice')).map((c) => c.content)).toEqual(['alice likes tea']);
    expect((await collection(ws, 'scope.x', 'bob')).map((c) => c.content)).toEqual(['bob likes coffee']);
  });

  it('a session that joins through `scopes` at create time, holding messages, is backfilled', async () => {
    const ws = uniqueId();
    await session(ws, 's1', ['alice']);
    await conclude(ws, [{ observer_id: 'alice', observed_id: 'alice', content: 'alice sings', session_id: 's1' }]);
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', scopes: ['x'] })).status).toBe(200);
    await drain(ws);
    expect((await collection(ws, 'scope.x', 'alice')).map((c) => c.content)).toEqual(['alice sings']);
  });

  it('a removal queued before the backfill ran: the backfill writes nothing; add, remove, add again: one live copy', async () => {
    const ws = uniqueId();
    await session(ws, 's1', ['alice']);
    await conclude(ws, [{ observer_id: 'alice', observed_id: 'alice', content: 'alice paints', session_id: 's1' }]);
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'x' });
    await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['s1'] });
    await api.delete(`/v3/workspaces/${ws}/scopes/x/sessions/s1`);
    await drain(ws);
    expect(await collection(ws, 'scope.x', 'alice')).toEqual([]);
    // the removal cleared the status entry the add made
    expect((await api.get(`/v3/workspaces/${ws}/scopes/x/status`)).body).toEqual({ backfill_status: {} });

    await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['s1'] });
    await drain(ws);
    await api.delete(`/v3/workspaces/${ws}/scopes/x/sessions/s1`);
    await drain(ws);
    await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['s1'] });
    await drain(ws);
    expect((await collection(ws, 'scope.x', 'alice')).map((c) => c.content)).toEqual(['alice paints']);
  });

  it('a rerun after a crash between the copies and the job’s end copies nothing twice', async () => {
    const ws = uniqueId();
    await session(ws, 's1', ['alice']);
    await conclude(ws, [
      { observer_id: 'alice', observed_id: 'alice', content: 'fact one', session_id: 's1' },
      { observer_id: 'alice', observed_id: 'alice', content: 'fact two', session_id: 's1' },
    ]);
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'x' });
    // joined without the route (which would queue the job for the running worker)
    await api.database.store.sessions.saveMemberships(ws, 's1', [{ peerId: 'scope.x', configuration: { observe_me: false, observe_others: true }, joinedAt: new Date(), leftAt: null }]);
    // the job's work committed, then the process died before the job was marked done: the job
    // runs again (its lease runs out) and must find its work done
    const ctx = createDomainContext(api.database.store, { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 3 });
    const payload: ScopeWorkPayload = { workspaceId: ws, scopePeerId: 'scope.x', sessionId: 's1' };
    expect(await runScopeBackfill(ctx, payload)).toEqual({ kind: 'done', count: 2 });
    expect(await runScopeBackfill(ctx, payload)).toEqual({ kind: 'done', count: 0 });
    expect(await collection(ws, 'scope.x', 'alice')).toHaveLength(2);
    expect((await api.get(`/v3/workspaces/${ws}/scopes/x/status`)).body.backfill_status.s1).toMatchObject({ state: 'completed', docs_copied: 0 });
  });
});

describe('removal (S5.3)', () => {
  it('retires the session’s explicit conclusions and, transitively, what was derived from them', async () => {
    const ws = uniqueId();
    await session(ws, 's1', ['alice']);
    await session(ws, 's2', ['alice']);
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'x' });
    await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['s1', 's2'] });
    await drain(ws);
    const [inS1, inS2] = await conclude(ws, [
      { observer_id: 'scope.x', observed_id: 'alice', content: 'alice lives in Lisbon', session_id: 's1' },
      { observer_id: 'scope.x', observed_id: 'alice', content: 'alice owns a bike', session_id: 's2' },
    ]);
    const derived = (id: string, content: string, sources: string[]): ConclusionRecord => ({
      id,
      workspaceId: ws,
      observerId: 'scope.x',
      observedId: 'alice',
      sessionId: null,
      content,
      level: 'deductive',
      sourceIds: sources,
      timesDerived: 1,
      createdAt: new Date(),
    });
    const d1 = uniqueId('d');
    const d2 = uniqueId('d');
    const unrelated = uniqueId('d');
    await api.database.store.memory.insertConclusions([
      derived(d1, 'alice lives in Portugal', [inS1]),
      derived(d2, 'alice is European', [d1]),
      derived(unrelated, 'alice cycles', [inS2]),
    ]);
    expect((await api.delete(`/v3/workspaces/${ws}/scopes/x/sessions/s1`)).status).toBe(204);
    await drain(ws);
    expect((await collection(ws, 'scope.x', 'alice')).map((c) => c.content).sort()).toEqual(['alice cycles', 'alice owns a bike']);
    // messages stay
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages/list`, {})).body.total).toBe(1);
  });
});

describe('reads with `scope` (S6)', () => {
  /** alice's own fact in s1 and s2, another with no session, and the scope x's own memory of her. */
  async function world() {
    const ws = uniqueId();
    await session(ws, 's1', ['alice']);
    await session(ws, 's2', ['alice']);
    await session(ws, 's3', ['alice']);
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'x' });
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'y' });
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'empty' });
    await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['s1'] });
    await api.post(`/v3/workspaces/${ws}/scopes/y/sessions`, { session_ids: ['s2'] });
    await drain(ws);
    await conclude(ws, [
      { observer_id: 'alice', observed_id: 'alice', content: 'GLOBAL alice fact in s1', session_id: 's1' },
      { observer_id: 'alice', observed_id: 'alice', content: 'GLOBAL alice fact in s2', session_id: 's2' },
      { observer_id: 'alice', observed_id: 'alice', content: 'GLOBAL alice fact in s3', session_id: 's3' },
      { observer_id: 'alice', observed_id: 'alice', content: 'GLOBAL alice fact without session' },
      { observer_id: 'scope.x', observed_id: 'alice', content: 'SCOPED alice fact', session_id: 's1' },
    ]);
    await api.put(`/v3/workspaces/${ws}/peers/alice/card`, { peer_card: ['GLOBAL CARD'] });
    await api.put(`/v3/workspaces/${ws}/peers/scope.x/card?target=alice`, { peer_card: ['SCOPED CARD'] });
    return ws;
  }

  it('representation: one scope reads the scope’s memory; a list the union of its sessions; an empty union nothing', async () => {
    const ws = await world();
    const rep = (body: object) => api.post(`/v3/workspaces/${ws}/peers/alice/representation`, body);
    const single = await rep({ scope: 'x' });
    expect(single.status).toBe(200);
    expect(single.body.representation).toContain('SCOPED alice fact');
    expect(single.body.representation).not.toContain('GLOBAL');

    const union = (await rep({ scope: ['x', 'y', 'x'] })).body.representation;
    expect(union).toContain('GLOBAL alice fact in s1');
    expect(union).toContain('GLOBAL alice fact in s2');
    expect(union).not.toContain('in s3');
    expect(union).not.toContain('without session');
    expect((await rep({ scope: ['empty'] })).body).toEqual({ representation: '' });
    expect((await rep({ scope: 'empty' })).body).toEqual({ representation: '' });
    // unscoped: everything of alice's own
    expect((await rep({})).body.representation).toContain('without session');
  });

  it('representation and chat answer the reference errors of `scope`', async () => {
    const ws = await world();
    for (const path of ['representation', 'chat']) {
      const call = (body: object) => api.post(`/v3/workspaces/${ws}/peers/alice/${path}`, { query: 'q', ...body });
      const unknown = await call({ scope: ['x', 'nope'] });
      expect(unknown.status, path).toBe(404);
      expect(unknown.body).toEqual({ detail: `Scope nope not found in workspace ${ws}` });
      expect((await call({ scope: 'x', filters: { session_id: ['s1'] } })).body).toEqual({ detail: '`scope` and `filters` are mutually exclusive' });
      expect((await call({ scope: 'x', session_id: 's1' })).body).toEqual({ detail: '`scope` and `session_id` are mutually exclusive' });
      for (const bad of [[], Array.from({ length: 101 }, (_, i) => `s${i}`), ['scope.already-prefixed'], ['ok', 'not a name!'], 'scope.already-prefixed', 5]) {
        const res = await call({ scope: bad });
        expect(res.status, `${path} ${JSON.stringify(bad).slice(0, 40)}`).toBe(422);
        expect(Array.isArray(res.body.detail)).toBe(true);
        expect(res.body.detail).toHaveLength(2);
      }
    }
    const wrongType = await api.post(`/v3/workspaces/${ws}/peers/alice/representation`, { scope: 'scope.p' });
    expect(wrongType.body.detail[0]).toMatchObject({ loc: ['body', 'scope', 'str'], msg: "Value error, Scope name must not start with the reserved prefix 'scope.' (scope names are unprefixed)" });
    expect(wrongType.body.detail[1]).toMatchObject({ loc: ['body', 'scope', 'list[str]'], type: 'list_type' });
    await api.database.store.peers.createIfAbsent(ws, { id: 'scope.legacy', metadata: {}, configuration: {} }, new Date());
    const squatter = await api.post(`/v3/workspaces/${ws}/peers/alice/representation`, { scope: 'legacy' });
    expect(squatter.status).toBe(422);
    expect(squatter.body).toEqual({ detail: "'legacy' does not name a scope: a non-scope peer occupies its reserved name." });
  });

  it('a union of more than 1,000 sessions is refused', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'big' });
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'one' });
    const now = new Date();
    const { store } = api.database;
    await store.transaction(async (tx) => {
      for (let i = 0; i < 1001; i++) {
        await tx.sessions.createIfAbsent(ws, { id: `s${i}`, metadata: {}, configuration: {} }, now);
        await tx.sessions.saveMemberships(ws, `s${i}`, [{ peerId: i === 1000 ? 'scope.one' : 'scope.big', configuration: {}, joinedAt: now, leftAt: null }]);
      }
    });
    expect((await api.post(`/v3/workspaces/${ws}/peers/alice/representation`, { scope: ['big'] })).status).toBe(200);
    const over = await api.post(`/v3/workspaces/${ws}/peers/alice/representation`, { scope: ['big', 'one'] });
    expect(over.status).toBe(422);
    expect(over.body).toEqual({ detail: "The scopes' combined membership exceeds the maximum of 1000 sessions per request" });
  });

  it('session context: the scope’s representation and card; none of the card when confined to sessions', async () => {
    const ws = await world();
    const context = (query: string) => api.get(`/v3/workspaces/${ws}/sessions/s1/context?${query}`);
    const plain = await context('peer_target=alice');
    expect(plain.body.peer_representation).toContain('GLOBAL');
    expect(plain.body.peer_card).toEqual(['GLOBAL CARD']);
    const scoped = await context('peer_target=alice&scope=x');
    expect(scoped.status).toBe(200);
    expect(scoped.body.peer_representation).toContain('SCOPED alice fact');
    expect(scoped.body.peer_representation).not.toContain('GLOBAL');
    expect(scoped.body.peer_card).toEqual(['SCOPED CARD']);
    const limited = await context('peer_target=alice&scope=x&limit_to_session=true');
    expect(limited.body.peer_card).toBeNull();
    expect(limited.body.peer_representation).toContain('SCOPED alice fact');
    // limit_to_session alone omits the card too
    expect((await context('peer_target=alice&limit_to_session=true')).body.peer_card).toBeNull();
    expect((await context('peer_target=alice&sessions=s1&sessions=s2')).body.peer_card).toBeNull();

    expect((await context('scope=x')).body).toEqual({ detail: 'peer_target must be provided if scope is provided' });
    expect((await context('peer_target=alice&peer_perspective=alice&scope=x')).body).toEqual({ detail: '`scope` and `peer_perspective` are mutually exclusive' });
    expect((await context('peer_target=alice&scope=x&sessions=s1')).body).toEqual({ detail: '`sessions` and `scope` are mutually exclusive' });
    expect((await context('peer_target=alice&scope=nope')).status).toBe(404);
    expect((await context('peer_target=alice&scope=scope.x')).status).toBe(404);
  });

  it('session context: the `sessions` allowlist’s checks in the reference’s order and words', async () => {
    const ws = await world();
    const context = (query: string) => api.get(`/v3/workspaces/${ws}/sessions/s1/context?${query}`);
    expect((await context('peer_target=alice&sessions=s1&limit_to_session=true')).body).toEqual({ detail: '`sessions` and `limit_to_session` are mutually exclusive' });
    expect((await context('sessions=s1')).body).toEqual({ detail: 'peer_target must be provided if sessions is provided' });
    const many = Array.from({ length: 1001 }, (_, i) => `sessions=s${i}`).join('&');
    expect((await context(`peer_target=alice&${many}`)).body).toEqual({ detail: 'sessions supports at most 1000 sessions per request' });
    expect((await context('peer_target=alice&sessions=s1&sessions=')).body).toEqual({ detail: 'sessions entries must be non-empty strings' });
    expect((await context('peer_target=alice&sessions=s1&sessions=a.b')).body).toEqual({
      detail: "Invalid session id in sessions: 'a.b'. Session ids match ^[a-zA-Z0-9_-]+$",
    });
    expect((await context('peer_target=alice&sessions=s2')).body).toEqual({ detail: 'session_id must be included in sessions' });
    const ok = await context('peer_target=alice&sessions=s1&sessions=s2&sessions=s1');
    expect(ok.body.peer_representation).toContain('in s2');
    expect(ok.body.peer_representation).not.toContain('in s3');
  });

  it('workspace search: confined to the scope’s sessions; an empty scope finds nothing', async () => {
    const ws = await world();
    const search = (body: object) => api.post(`/v3/workspaces/${ws}/search`, { query: 'hello', ...body });
    expect(new Set((await search({})).body.map((m: { session_id: string }) => m.session_id))).toEqual(new Set(['s1', 's2', 's3']));
    expect((await search({ scope: 'x' })).body.map((m: { session_id: string }) => m.session_id)).toEqual(['s1']);
    expect((await search({ scope: 'empty' })).body).toEqual([]);
    expect((await search({ scope: 'nope' })).status).toBe(404);
    expect((await search({ scope: 'x', filters: { session_id: 's2' } })).body).toEqual({ detail: "`scope` and a 'session_id' filter are mutually exclusive" });
    // a removed session stays in the scope's recall (the membership row keeps it)
    await api.delete(`/v3/workspaces/${ws}/scopes/x/sessions/s1`);
    expect((await search({ scope: 'x' })).body.map((m: { session_id: string }) => m.session_id)).toEqual(['s1']);
  });
});

describe('auth on the scoped reads (S3, S7.4)', () => {
  it('`scope` needs a workspace-level key; a peer key reads session context only from its own perspective', async () => {
    const ws = uniqueId();
    const admin = authApi.token({ isAdmin: true });
    const w = `/v3/workspaces/${ws}`;
    await authApi.post(`${w}/sessions`, { id: 's', peers: { alice: {}, bob: {} } }, { token: admin });
    await authApi.post(`${w}/scopes`, { id: 'x' }, { token: admin });
    const alice = authApi.token({ workspaceId: ws, peerId: 'alice' });
    const sessionKey = authApi.token({ workspaceId: ws, sessionId: 's' });
    const workspaceKey = authApi.token({ workspaceId: ws });

    const rep = await authApi.post(`${w}/peers/alice/representation`, { scope: 'x' }, { token: alice });
    expect(rep.status).toBe(401);
    expect(rep.body).toEqual({ detail: '`scope` requires a workspace- or admin-level key' });
    expect((await authApi.post(`${w}/peers/alice/representation`, { scope: 'x' }, { token: sessionKey })).body).toEqual({
      detail: 'JWT not permissioned for this resource',
    });
    expect((await authApi.post(`${w}/peers/alice/representation`, { scope: 'x' }, { token: workspaceKey })).status).toBe(200);
    expect((await authApi.post(`${w}/search`, { query: 'q', scope: 'x' }, { token: alice })).status).toBe(401);

    const context = (query: string, token: string) => authApi.get(`${w}/sessions/s/context?${query}`, { token });
    expect((await context('peer_target=alice&scope=x', alice)).body).toEqual({ detail: '`scope` requires a workspace- or admin-level key' });
    expect((await context('peer_target=alice&scope=x', sessionKey)).status).toBe(401);
    expect((await context('peer_target=alice&scope=x', workspaceKey)).status).toBe(200);
    expect((await context('peer_target=alice&peer_perspective=bob', alice)).status).toBe(401);
    expect((await context('peer_target=bob', alice)).status).toBe(401);
    expect((await context('peer_target=bob&peer_perspective=alice', alice)).status).toBe(200);
    expect((await context('peer_target=alice', alice)).status).toBe(200);
    expect((await context('', alice)).status).toBe(200);
    expect((await context('peer_target=bob', sessionKey)).status).toBe(200);
    // a peer key confines only to sessions it is an active member of
    await authApi.post(`${w}/sessions`, { id: 'other', peers: { bob: {} } }, { token: admin });
    expect((await context('peer_target=alice&sessions=s&sessions=other', alice)).status).toBe(401);
  });
});

describe('facts over time in a scope (docs/reasoning.md)', () => {
  it('a copy follows its original when the original is superseded by a conclusion the scope holds a copy of', async () => {
    const ws = uniqueId();
    await session(ws, 's1', ['alice']);
    const [lisbon, porto] = await conclude(ws, [
      { observer_id: 'alice', observed_id: 'alice', content: 'alice lives in Lisbon', session_id: 's1' },
      { observer_id: 'alice', observed_id: 'alice', content: 'alice lives in Porto', session_id: 's1' },
    ]);
    await api.post(`/v3/workspaces/${ws}/scopes`, { id: 'x' });
    expect((await api.post(`/v3/workspaces/${ws}/scopes/x/sessions`, { session_ids: ['s1'] })).status).toBe(204);
    await drain(ws);
    const copies = await collection(ws, 'scope.x', 'alice');
    expect(copies.map((c) => c.content)).toEqual(['alice lives in Lisbon', 'alice lives in Porto']);
    const lisbonCopy = copies[0].id;
    const portoCopy = copies[1].id;
    expect(await copiedFrom(ws, portoCopy)).toBe(porto);

    // the same fact stated again, superseding Lisbon: it is the stored Porto conclusion (reinforced)
    const again = await api.post(`/v3/workspaces/${ws}/conclusions`, {
      conclusions: [{ observer_id: 'alice', observed_id: 'alice', content: 'alice lives in Porto', session_id: 's1', supersedes: [lisbon] }],
    });
    expect(again.status, again.text).toBe(201);
    expect(again.body[0].id).toBe(porto);
    expect((await collection(ws, 'alice', 'alice')).map((c) => c.content)).toEqual(['alice lives in Porto']);
    // the scope's copy of Lisbon is superseded by its copy of Porto
    expect((await collection(ws, 'scope.x', 'alice')).map((c) => c.id)).toEqual([portoCopy]);
    const copy = await api.get(`/v3/workspaces/${ws}/conclusions/${lisbonCopy}`);
    expect(copy.body).toMatchObject({ observer_id: 'scope.x', superseded_by: portoCopy });
    const history = await api.get(`/v3/workspaces/${ws}/conclusions/${portoCopy}/history`);
    expect((history.body as { id: string }[]).map((c) => c.id)).toEqual([lisbonCopy, portoCopy]);

    // the session removed from the scope: its copies leave, the superseded one too
    const scopeAll = async () =>
      (await api.post(`/v3/workspaces/${ws}/conclusions/list?include_superseded=true`, { filters: { observer_id: 'scope.x', observed_id: 'alice' } })).body as {
        items: { id: string }[];
        total: number;
      };
    expect((await scopeAll()).total).toBe(2);
    expect((await api.delete(`/v3/workspaces/${ws}/scopes/x/sessions/s1`)).status).toBe(204);
    await drain(ws);
    expect(await scopeAll()).toMatchObject({ items: [], total: 0 });
    // the originals keep their chain
    expect((await api.post(`/v3/workspaces/${ws}/conclusions/list?include_superseded=true`, { filters: { observer_id: 'alice', observed_id: 'alice' } })).body.total).toBe(2);
  });
});
