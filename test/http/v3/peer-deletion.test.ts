import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { domainLimits } from '../../../src/runtime/runtime.js';
import { createDomainContext } from '../../../src/domain/context.js';
import { purgeDeletedPeer } from '../../../src/domain/peers/peer-deletion.js';
import { createWorker } from '../../../src/runtime/runtime.js';
import { silent } from '../../support/polling.js';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';
import { startWebhookSink } from '../../support/webhook-sink.js';
import { PAYLOAD_READERS, PURGE_PEER, type PurgePeerPayload } from '../../../src/domain/job-kinds.js';

/*
 * DELETE /v3/workspaces/{w}/peers/{p}: the peer is marked and gone from reads at once, writes
 * naming it get a 409, and a job removes everything by or about it in batches; `dry_run=true`
 * counts exactly what the purge then removes. On SQLite and PostgreSQL.
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function count(target: TestApi, sql: string, params: unknown[]): Promise<number> {
  return Number((await target.database.driver.get<{ n: number | string }>(sql, params))?.n);
}

/** What is stored by or about `peer`, counted straight from the tables. */
async function stored(target: TestApi, ws: string, peer: string) {
  const n = (sql: string, params: unknown[] = [ws, peer]) => count(target, sql, params);
  return {
    messages: await n('SELECT count(*) AS n FROM messages WHERE workspace_id = ? AND peer_id = ?'),
    conclusions: await n('SELECT count(*) AS n FROM conclusions WHERE workspace_id = ? AND (observer_id = ? OR observed_id = ?)', [ws, peer, peer]),
    copies: await n(
      `SELECT count(*) AS n FROM conclusions x WHERE x.workspace_id = ? AND x.copied_from IN (SELECT id FROM conclusions WHERE observer_id = ? OR observed_id = ?)`,
      [ws, peer, peer],
    ),
    cards: await n('SELECT count(*) AS n FROM peer_cards WHERE workspace_id = ? AND (observer_id = ? OR target_id = ?)', [ws, peer, peer]),
    memberships: await n('SELECT count(*) AS n FROM session_peers WHERE workspace_id = ? AND peer_id = ?'),
    row: await n('SELECT count(*) AS n FROM peers WHERE workspace_id = ? AND id = ?'),
  };
}

/**
 * A workspace where alice wrote 7 messages in two sessions (with bob), holds conclusions about
 * herself and bob, is observed by bob, has cards both ways, and a scope copied a conclusion of hers.
 */
async function aliceAndBob(target: TestApi): Promise<string> {
  const ws = uniqueId();
  for (const session of ['s1', 's2']) {
    expect((await target.post(`/v3/workspaces/${ws}/sessions/${session}/peers`, { alice: {}, bob: {} })).status).toBe(200);
  }
  const sent = await target.post(`/v3/workspaces/${ws}/sessions/s1/messages`, {
    messages: [...Array.from({ length: 5 }, (_, i) => ({ peer_id: 'alice', content: `alice note ${i}` })), { peer_id: 'bob', content: 'bob says hi' }],
  });
  expect(sent.status, sent.text).toBe(201);
  expect((await target.post(`/v3/workspaces/${ws}/sessions/s2/messages`, { messages: [{ peer_id: 'alice', content: 'x' }, { peer_id: 'alice', content: 'y' }] })).status).toBe(201);
  const conclusions = [
    { content: 'alice likes tea', observer_id: 'alice', observed_id: 'alice', session_id: 's1' },
    { content: 'bob is tall', observer_id: 'alice', observed_id: 'bob', session_id: 's1' },
    { content: 'alice is kind', observer_id: 'bob', observed_id: 'alice', session_id: 's1' },
    { content: 'bob likes maps', observer_id: 'bob', observed_id: 'bob', session_id: 's1' },
  ];
  const created = await target.post(`/v3/workspaces/${ws}/conclusions`, { conclusions });
  expect(created.status, created.text).toBe(201);
  // a scope's copy of alice's conclusion about bob (a backfill writes these)
  const { store } = target.database;
  const now = new Date();
  await store.peers.createScopeIfAbsent(ws, { id: 'scope.team', metadata: {}, configuration: {} }, now);
  const original = created.body[1] as { id: string };
  await store.memory.insertConclusions([
    {
      id: uniqueId('copy'),
      workspaceId: ws,
      observerId: 'scope.team',
      observedId: 'bob',
      sessionId: 's1',
      content: 'bob is tall',
      level: 'explicit',
      sourceIds: null,
      timesDerived: 1,
      createdAt: now,
      copiedFrom: original.id,
    },
  ]);
  await store.memory.savePeerCard(ws, 'bob', 'alice', ['alice is kind'], now);
  await store.memory.savePeerCard(ws, 'alice', 'alice', ['I like tea'], now);
  await store.memory.savePeerCard(ws, 'bob', 'bob', ['I like maps'], now);
  return ws;
}

function purgeContext(target: TestApi) {
  return createDomainContext(target.database.store, domainLimits(target.config));
}

async function openPurgeJob(target: TestApi, ws: string): Promise<{ id: string; status: string; payload: PurgePeerPayload }> {
  const job = await target.database.driver.get<{ id: string; status: string; payload: unknown }>('SELECT id, status, payload FROM jobs WHERE workspace_id = ? AND kind = ?', [ws, PURGE_PEER]);
  expect(job).toBeDefined();
  const payload = PAYLOAD_READERS[PURGE_PEER](typeof job!.payload === 'string' ? JSON.parse(job!.payload) : (job!.payload as Record<string, unknown>));
  expect(payload).toBeDefined();
  return { id: job!.id, status: job!.status, payload: payload! };
}

describe('deleting a peer', () => {
  it('counts with dry_run exactly what the purge then removes, and leaves the other peers whole', async () => {
    const ws = await aliceAndBob(api);
    const before = await stored(api, ws, 'alice');
    const bobBefore = await stored(api, ws, 'bob');

    const dry = await api.delete(`/v3/workspaces/${ws}/peers/alice?dry_run=true`);
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body).toEqual({
      workspace_id: ws,
      peer_id: 'alice',
      dry_run: true,
      status: 'dry_run',
      job_id: null,
      removes: { messages: 7, conclusions: 3, scope_copies: 1, peer_cards: 2, memberships: 2, metamessages: 0, summaries: 0 },
    });
    // the dry run's figures are the rows in the tables, and it changed nothing
    expect(before).toEqual({ messages: 7, conclusions: 3, copies: 1, cards: 2, memberships: 2, row: 1 });
    expect(await stored(api, ws, 'alice')).toEqual(before);
    expect((await api.get(`/v3/workspaces/${ws}/peers/alice/card`)).status).not.toBe(404);

    const deleted = await api.delete(`/v3/workspaces/${ws}/peers/alice`);
    expect(deleted.status, deleted.text).toBe(202);
    expect(deleted.body).toMatchObject({ peer_id: 'alice', dry_run: false, status: 'queued', removes: dry.body.removes });
    expect(typeof deleted.body.job_id).toBe('string');

    const job = await openPurgeJob(api, ws);
    expect(job.id).toBe(deleted.body.job_id);
    expect(await purgeDeletedPeer(purgeContext(api), ws, job.payload, { batch: 2 })).toBe('purged');
    expect(await stored(api, ws, 'alice')).toEqual({ messages: 0, conclusions: 0, copies: 0, cards: 0, memberships: 0, row: 0 });
    // bob keeps his message, his conclusion about himself and his own card; what was about alice went
    const bobAfter = await stored(api, ws, 'bob');
    expect(bobAfter).toEqual({ ...bobBefore, conclusions: 1, copies: 0, cards: 1 });
    const left = await api.post(`/v3/workspaces/${ws}/conclusions/list`, {});
    expect(left.body.items.map((c: { content: string }) => c.content)).toEqual(['bob likes maps']);
    // the scope copy went with what it copied
    expect(await count(api, 'SELECT count(*) AS n FROM conclusions WHERE workspace_id = ? AND copied_from IS NOT NULL', [ws])).toBe(0);
    // a second run finds nothing to do
    expect(await purgeDeletedPeer(purgeContext(api), ws, job.payload)).toBe('absent');
  });

  it('hides the peer at once and refuses writes naming it until the purge ends; then the id is free again', async () => {
    const ws = await aliceAndBob(api);
    expect((await api.delete(`/v3/workspaces/${ws}/peers/alice`)).status).toBe(202);
    // reads: gone from the list (and its total), its card and its representation 404
    const peers = await api.post(`/v3/workspaces/${ws}/peers/list`, {});
    expect(peers.body.items.map((p: { id: string }) => p.id)).toEqual(['bob']);
    expect(peers.body.total).toBe(1);
    const members = await api.get(`/v3/workspaces/${ws}/sessions/s1/peers`);
    expect(members.body.items.map((p: { id: string }) => p.id)).toEqual(['bob']);
    expect((await api.get(`/v3/workspaces/${ws}/peers/alice/card`)).status).toBe(404);
    const sessions = await api.post(`/v3/workspaces/${ws}/peers/alice/sessions`, {});
    expect(sessions.body).toMatchObject({ items: [], total: 0 });
    // writes naming it: 409, and nothing written
    const messages = await count(api, 'SELECT count(*) AS n FROM messages WHERE workspace_id = ?', [ws]);
    for (const write of [
      () => api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' }),
      () => api.put(`/v3/workspaces/${ws}/peers/alice`, { metadata: { a: 1 } }),
      () => api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'still here?' }] }),
      () => api.post(`/v3/workspaces/${ws}/sessions/s3/peers`, { alice: {} }),
      () => api.put(`/v3/workspaces/${ws}/peers/bob/card?target=alice`, { peer_card: ['alice is back'] }),
    ]) {
      const answer = await write();
      expect(answer.status, answer.text).toBe(409);
      expect(answer.body.detail).toBe('Peer alice is being deleted');
    }
    const conclusion = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'c', observer_id: 'bob', observed_id: 'alice' }] });
    expect([404, 409]).toContain(conclusion.status);
    expect(await count(api, 'SELECT count(*) AS n FROM messages WHERE workspace_id = ?', [ws])).toBe(messages);
    // the v1 view of the same peers: no user alice, and not made again
    const app = await api.get(`/v1/apps/get_or_create/${ws}`);
    expect(app.status, app.text).toBe(200);
    const users = await api.post(`/v1/apps/${app.body.id}/users/list`, {});
    expect(users.body.items.map((u: { name: string }) => u.name)).toEqual(['bob']);
    expect((await api.get(`/v1/apps/${app.body.id}/users/name/alice`)).status).toBe(404);
    expect((await api.get(`/v1/apps/${app.body.id}/users/get_or_create/alice`)).status).toBe(409);
    // a second delete: 404 (already being deleted)
    expect((await api.delete(`/v3/workspaces/${ws}/peers/alice`)).status).toBe(404);

    expect(await purgeDeletedPeer(purgeContext(api), ws, (await openPurgeJob(api, ws)).payload)).toBe('purged');
    const again = await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    expect(again.status, again.text).toBe(201);
    const listed = await api.post(`/v3/workspaces/${ws}/peers/list`, {});
    expect(listed.body.total).toBe(2);
  });

  it('answers 404 for a missing peer, 422 for a bad dry_run or a scope, and never 5xx', async () => {
    const ws = await aliceAndBob(api);
    expect((await api.delete(`/v3/workspaces/${ws}/peers/nobody`)).status).toBe(404);
    expect((await api.delete(`/v3/workspaces/${ws}/peers/nobody?dry_run=true`)).status).toBe(404);
    expect((await api.delete(`/v3/workspaces/${uniqueId()}/peers/alice`)).status).toBe(404);
    const bad = await api.delete(`/v3/workspaces/${ws}/peers/alice?dry_run=perhaps`);
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['query', 'dry_run']);
    expect((await api.delete(`/v3/workspaces/${ws}/peers/scope.team`)).status).toBe(422);
    // nothing changed
    expect((await stored(api, ws, 'alice')).row).toBe(1);
    // v3 only: v2 has no such route
    expect((await api.request('DELETE', `/v2/workspaces/${ws}/peers/alice`)).status).toBe(405);
  });

  it('finishes after the worker running it was killed: the next worker takes the job over and sends peer.deleted', async () => {
    const own = await buildTestApp({ WEBHOOK_SECRET: 'a-webhook-secret', WEBHOOK_ALLOW_PRIVATE_URLS: 'true', WORKER_POLL_MS: '20', JOB_RETRY_BASE_MS: '10', JOB_RETRY_MAX_MS: '20' }, { ownDatabase: true });
    const sink = await startWebhookSink();
    cleanups.push(async () => {
      await sink.close();
      await own.close();
    });
    const ws = await aliceAndBob(own);
    expect((await own.post(`/v3/workspaces/${ws}/webhooks`, { url: sink.url })).status).toBe(201);
    const dry = await own.delete(`/v3/workspaces/${ws}/peers/alice?dry_run=true`);
    expect((await own.delete(`/v3/workspaces/${ws}/peers/alice`)).status).toBe(202);

    // a worker claims the job, removes two batches, and dies (its lease left to run out)
    const now = new Date();
    const [claimed] = await own.database.store.jobs.claim(1, now, new Date(now.getTime() + 200), PURGE_PEER);
    expect(claimed.kind).toBe(PURGE_PEER);
    const dying = new AbortController();
    let batches = 0;
    const ctx = purgeContext(own);
    const counting = new Proxy(ctx.store, {
      get(target, key, receiver) {
        if (key !== 'transaction') return Reflect.get(target, key, receiver) as unknown;
        return async (fn: (tx: unknown) => Promise<unknown>) => {
          const result = await target.transaction(fn as never);
          if (++batches === 2) dying.abort(new Error('killed'));
          return result;
        };
      },
    });
    expect(await purgeDeletedPeer({ ...ctx, store: counting }, ws, PAYLOAD_READERS[PURGE_PEER](claimed.payload)!, { batch: 2, signal: dying.signal })).toBe('stopped');
    const part = await stored(own, ws, 'alice');
    expect(part.row).toBe(1);
    expect(part.messages).toBeGreaterThan(0);
    expect(part.messages).toBeLessThan(7);

    const worker = createWorker(own.config, own.database, silent);
    worker.start();
    cleanups.unshift(() => worker.stop(1000));
    await vi.waitFor(async () => expect((await stored(own, ws, 'alice')).row).toBe(0), { timeout: 10_000 });
    expect(await stored(own, ws, 'alice')).toEqual({ messages: 0, conclusions: 0, copies: 0, cards: 0, memberships: 0, row: 0 });
    await sink.waitFor(1);
    const event = JSON.parse(sink.received[0].body);
    expect(event.type).toBe('peer.deleted');
    expect(event.data).toEqual({ workspace_id: ws, peer_id: 'alice', removed: dry.body.removes });
    // the delivery is queued by the purge's last transaction and may be sent before the worker
    // records the purge job itself as done
    await vi.waitFor(async () => {
      const jobs = await own.database.driver.all<{ status: string }>('SELECT status FROM jobs WHERE workspace_id = ? AND kind = ?', [ws, PURGE_PEER]);
      expect(jobs.map((j) => j.status)).toEqual(['done']);
    }, { timeout: 5_000 });
  });

  it('removes the summaries of the sessions it wrote in and queues them written again', async () => {
    const ws = await aliceAndBob(api);
    const now = new Date();
    for (const session of ['s1', 's2']) {
      await api.database.store.reasoning.saveSummary(ws, session, { type: 'short', content: `alice said things in ${session}`, messageId: 'm', messageSeq: 1, tokenCount: 5, createdAt: now });
    }
    const dry = await api.delete(`/v3/workspaces/${ws}/peers/alice?dry_run=true`);
    expect(dry.body.removes.summaries).toBe(2);
    expect((await api.delete(`/v3/workspaces/${ws}/peers/alice`)).status).toBe(202);
    expect(await purgeDeletedPeer(purgeContext(api), ws, (await openPurgeJob(api, ws)).payload)).toBe('purged');
    expect(await count(api, 'SELECT count(*) AS n FROM session_summaries WHERE workspace_id = ?', [ws])).toBe(0);
    // s1 still holds bob's message: its summaries are to be written again; s2 is empty now
    const queued = await api.database.driver.all<{ queue_key: string }>(`SELECT queue_key FROM jobs WHERE workspace_id = ? AND kind = 'reasoning.summarize'`, [ws]);
    expect(queued.map((j) => j.queue_key)).toEqual([`summary:${ws}:s1`]);
  });
});
