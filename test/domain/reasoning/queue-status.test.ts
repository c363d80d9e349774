import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { heldAnswer, startFakeModelServer, type FakeModelServer } from '../../support/fake-model-server.js';
import { createWorker } from '../../../src/runtime/runtime.js';
import { drainWorkspace, facts, reasoningApps, type ReasoningSetup } from '../../support/reasoning-harness.js';
import { silent } from '../../support/polling.js';
import { uniqueId, type TestApi } from '../../support/test-app.js';
import { startWebhookSink, type WebhookSink } from '../../support/webhook-sink.js';

/*
 * queue.empty webhook events (contract §7.6) and the queue status (§7.9) counting the reasoning
 * work itself, through HTTP with the fake model server and the real worker, on SQLite or PostgreSQL.
 */

let fake: FakeModelServer;
let sink: WebhookSink;
beforeAll(async () => {
  fake = await startFakeModelServer();
  sink = await startWebhookSink();
});
afterAll(async () => {
  await fake.close();
  await sink.close();
});

type Setup = ReasoningSetup;
const apps = reasoningApps(() => fake);

async function setup(env: Record<string, string> = {}): Promise<Setup> {
  sink.received.length = 0;
  const made = await apps.start({ WEBHOOK_SECRET: 'queue-status-secret', WEBHOOK_ALLOW_PRIVATE_URLS: 'true', ...env });
  expect((await made.api.post('/v3/workspaces', { id: made.ws })).status).toBe(201);
  expect((await made.api.post(`/v3/workspaces/${made.ws}/webhooks`, { url: sink.url })).status).toBe(201);
  return made;
}

afterEach(() => apps.stopAll());

/** Runs the worker until the workspace has no open reasoning items, reasoning jobs or webhook deliveries. */
const drain = (s: Setup, timeoutMs?: number) => drainWorkspace(s, { allJobs: true, timeoutMs });

/** The queue.empty events delivered for this workspace, in delivery order. */
const queueEmpty = (ws: string) =>
  sink.received
    .map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> })
    .filter((event) => event.type === 'queue.empty' && event.data.workspace_id === ws)
    .map((event) => event.data);

async function status(api: TestApi, ws: string, query = '', generation: 'v2' | 'v3' = 'v3') {
  const path = generation === 'v3' ? `/v3/workspaces/${ws}/queue/status${query}` : `/v2/workspaces/${ws}/deriver/status${query}`;
  const response = await api.get(path);
  expect(response.status, response.text).toBe(200);
  return response.body;
}

const counts = (total: number, completed: number, inProgress: number, pending: number) => ({
  total_work_units: total,
  completed_work_units: completed,
  in_progress_work_units: inProgress,
  pending_work_units: pending,
});


describe('queue.empty', () => {
  it('is sent once per representation unit when its last item is processed, after every batch of it', async () => {
    // batches of at most one message: alice's unit takes two batches, and drains only after the second
    const s = await setup({ DERIVER_REPRESENTATION_BATCH_TARGET_INPUT_TOKENS: '1' });
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {}, bob: { observe_others: true } });
    fake.script.defaultChat(facts('a fact'));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, {
      messages: [
        { peer_id: 'alice', content: 'I like tea' },
        { peer_id: 'alice', content: 'and I live in Porto' },
        { peer_id: 'bob', content: 'I like maps' },
      ],
    });
    await drain(s);
    // three message.created and two queue.empty
    await sink.waitFor(5);
    expect(fake.requests('chat')).toHaveLength(3);
    const events = queueEmpty(ws);
    expect(events).toHaveLength(2);
    expect(events.sort((a, b) => String(a.observed).localeCompare(String(b.observed)))).toEqual([
      { observed: 'alice', observer: null, queue_type: 'representation', session_id: 's1', workspace_id: ws },
      { observed: 'bob', observer: null, queue_type: 'representation', session_id: 's1', workspace_id: ws },
    ]);
    // the exact body: keys sorted, nulls kept
    const raw = sink.received.map((r) => r.body).find((body) => body.includes('"queue.empty"') && body.includes('"observed":"bob"'));
    expect(raw).toMatch(
      new RegExp(`^\\{"data":\\{"observed":"bob","observer":null,"queue_type":"representation","session_id":"s1","workspace_id":"${ws}"\\},"timestamp":"[^"]+","type":"queue.empty"\\}$`),
    );
  });

  it('is sent when a unit drains through a failed batch too', async () => {
    const s = await setup();
    const { api, ws } = s;
    fake.script.defaultChat({ text: 'no facts here' });
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I like tea' }] });
    await drain(s);
    await sink.waitFor(2);
    expect(queueEmpty(ws)).toEqual([{ observed: 'alice', observer: null, queue_type: 'representation', session_id: 's1', workspace_id: ws }]);
  });

  it('is sent once when the summary jobs of a session are done', async () => {
    const s = await setup();
    const { api, ws } = s;
    const created = await api.post(`/v3/workspaces/${ws}/sessions`, {
      id: 's1',
      configuration: { reasoning: { enabled: false }, summary: { messages_per_short_summary: 10, messages_per_long_summary: 20 } },
    });
    expect(created.status, created.text).toBe(201);
    fake.script.defaultChat({ text: 'a summary' });
    const messages = Array.from({ length: 20 }, (_, i) => ({ peer_id: 'alice', content: `turn ${i + 1}` }));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages });
    await drain(s);
    await sink.waitFor(21);
    expect(fake.requests('chat')).toHaveLength(3);
    // two jobs (after messages 10 and 20: short, then short and long), one drain; no representation work with reasoning off
    expect(queueEmpty(ws)).toEqual([{ observed: null, observer: null, queue_type: 'summary', session_id: 's1', workspace_id: ws }]);
  });

  it('is not sent while the unit still holds work', async () => {
    const s = await setup({ DERIVER_FLUSH_ENABLED: 'false' });
    const { api, ws } = s;
    // below the token gate: queued, not processed
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'hi' }] });
    s.worker.start();
    await sink.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(fake.requests('chat')).toHaveLength(0);
    expect(queueEmpty(ws)).toEqual([]);
    expect(await api.database.store.reasoning.openItemCount(ws)).toBe(1);
  });
});

describe('queue status', () => {
  it('counts representation items and summary jobs as pending, by public session id, with the filters', async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {}, bob: { observe_others: true } });
    await api.post(`/v3/workspaces/${ws}/sessions/s2/messages`, { messages: [{ peer_id: 'carol', content: 'hello' }] });
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, {
      messages: [
        { peer_id: 'alice', content: 'one' },
        { peer_id: 'bob', content: 'two' },
        { peer_id: 'alice', content: 'three' },
      ],
    });
    // the worker has not run: everything is pending
    expect(await status(api, ws)).toEqual({
      ...counts(4, 0, 0, 4),
      sessions: { s1: { session_id: 's1', ...counts(3, 0, 0, 3) }, s2: { session_id: 's2', ...counts(1, 0, 0, 1) } },
    });
    expect(await status(api, ws, '?session_id=s1')).toEqual({ ...counts(3, 0, 0, 3), sessions: null });
    // alice's messages are observed by alice and bob; bob's by bob only
    expect(await status(api, ws, '?observer_id=alice')).toEqual({ ...counts(2, 0, 0, 2), sessions: { s1: { session_id: 's1', ...counts(2, 0, 0, 2) } } });
    expect((await status(api, ws, '?observer_id=bob')).total_work_units).toBe(3);
    expect((await status(api, ws, '?sender_id=bob')).total_work_units).toBe(1);
    expect((await status(api, ws, '?sender_id=carol&session_id=s2')).total_work_units).toBe(1);
    // observer and sender combine with OR (contract §7.9)
    expect((await status(api, ws, '?observer_id=carol&sender_id=bob')).total_work_units).toBe(2);
    expect(await status(api, ws, '?observer_id=nobody')).toEqual({ ...counts(0, 0, 0, 0), sessions: null });
    expect(await status(api, uniqueId())).toEqual({ ...counts(0, 0, 0, 0), sessions: null });
    // v2 answers the same
    expect(await status(api, ws, '?session_id=s1', 'v2')).toEqual({ ...counts(3, 0, 0, 3), sessions: null });

    fake.script.defaultChat(facts('a fact'));
    await drain(s);
    expect(await status(api, ws)).toEqual({
      ...counts(4, 4, 0, 0),
      sessions: { s1: { session_id: 's1', ...counts(3, 3, 0, 0) }, s2: { session_id: 's2', ...counts(1, 1, 0, 0) } },
    });
  });

  it('shows work in progress while the model answers', async () => {
    const s = await setup();
    const { api, ws } = s;
    // the model's answer is held back until the status in progress has been read
    const hold = heldAnswer();
    fake.script.chat({ ...facts('alice likes tea'), until: hold.until });
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I like tea' }] });
    s.worker.start();
    try {
      const deadline = Date.now() + 5_000;
      while (fake.requests('chat').length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await status(api, ws, '?session_id=s1')).toEqual({ ...counts(1, 0, 1, 0), sessions: null });
    } finally {
      hold.release();
    }
    await drain(s);
    expect(await status(api, ws, '?session_id=s1')).toEqual({ ...counts(1, 1, 0, 0), sessions: null });
  });

  it('keeps counting finished summaries and dreams for the day once their jobs are purged, and forgets a deleted session and workspace', async () => {
    const s = await setup();
    const { api, ws } = s;
    for (const id of ['s1', 's2']) {
      const created = await api.post(`/v3/workspaces/${ws}/sessions`, { id, configuration: { reasoning: { enabled: false }, summary: { messages_per_short_summary: 10 } } });
      expect(created.status, created.text).toBe(201);
    }
    fake.script.defaultChat({ text: 'a summary' });
    // s1: twenty messages, two summaries; s2: ten, one; and a dream about alice
    const turns = (n: number) => Array.from({ length: n }, (_, i) => ({ peer_id: 'alice', content: `turn ${i + 1}` }));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: turns(20) });
    await api.post(`/v3/workspaces/${ws}/sessions/s2/messages`, { messages: turns(10) });
    expect((await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'alice', dream_type: 'omni' })).status).toBe(204);
    await drain(s);
    const done = { ...counts(4, 4, 0, 0), sessions: { s1: { session_id: 's1', ...counts(2, 2, 0, 0) }, s2: { session_id: 's2', ...counts(1, 1, 0, 0) } } };
    expect(await status(api, ws)).toEqual(done);

    // the finished jobs are purged (normally a day after): the counts, kept by the hour, stay
    const later = new Date(Date.now() + 60_000);
    expect(await api.database.store.jobs.purgeFinished(later, later, 1000)).toBeGreaterThanOrEqual(4);
    const finished = await api.database.driver.get<{ n: number | string }>("SELECT count(*) AS n FROM jobs WHERE workspace_id = ? AND status = 'done'", [ws]);
    expect(Number(finished?.n)).toBe(0);
    expect(await status(api, ws)).toEqual(done);

    // a deleted session's summaries go with it; the dream (about a collection) stays
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/s1`)).status).toBeLessThan(300);
    await drain(s);
    expect(await status(api, ws)).toEqual({ ...counts(2, 2, 0, 0), sessions: { s2: { session_id: 's2', ...counts(1, 1, 0, 0) } } });

    // a workspace deleted and made again under its name starts from nothing
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/s2`)).status).toBeLessThan(300);
    await drain(s);
    expect((await api.delete(`/v3/workspaces/${ws}`)).status).toBeLessThan(300);
    expect((await api.post('/v3/workspaces', { id: ws })).status).toBe(201);
    expect(await status(api, ws)).toEqual({ ...counts(0, 0, 0, 0), sessions: null });
  });

  it('counts finished work for a day: the current hour and the 24 before it, then the worker purges the older hours', async () => {
    const s = await setup();
    const { api, ws } = s;
    const created = await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', configuration: { summary: { messages_per_short_summary: 10 } } });
    expect(created.status, created.text).toBe(201);
    fake.script.defaultChat(facts('a fact'));
    // s1: ten messages from alice (ten items) and a summary; s2: one item
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: Array.from({ length: 10 }, (_, i) => ({ peer_id: 'alice', content: `turn ${i + 1}` })) });
    await api.post(`/v3/workspaces/${ws}/sessions/s2/messages`, { messages: [{ peer_id: 'bob', content: 'I like maps' }] });
    await drain(s);
    const { driver } = api.database;
    const counters = async () => {
      const rows = await driver.all<{ n: number | string }>(
        'SELECT (SELECT count(*) FROM representation_counters WHERE workspace_id = ?) + (SELECT count(*) FROM job_counters WHERE workspace_id = ?) AS n',
        [ws, ws],
      );
      return Number(rows[0]?.n);
    };
    expect(await status(api, ws)).toEqual({
      ...counts(12, 12, 0, 0),
      sessions: { s1: { session_id: 's1', ...counts(11, 11, 0, 0) }, s2: { session_id: 's2', ...counts(1, 1, 0, 0) } },
    });
    // a session's counters moved to `hours` before the current hour (hours since 1970, UTC)
    const age = async (table: string, hours: number, session: string) => {
      const column = table === 'job_counters' ? 'queue_key' : 'session_id';
      const key = table === 'job_counters' ? `summary:${ws}:${session}` : session;
      await driver.run(`UPDATE ${table} SET hour = ? WHERE workspace_id = ? AND ${column} = ?`, [Math.floor(Date.now() / 3_600_000) - hours, ws, key]);
    };
    // s1's work finished 24 hours before the current one: still counted
    await age('representation_counters', 24, 's1');
    await age('job_counters', 24, 's1');
    expect((await status(api, ws)).completed_work_units).toBe(12);
    // an hour earlier it is not, and s1 leaves the list; s2's work is still counted
    await age('representation_counters', 25, 's1');
    await age('job_counters', 25, 's1');
    expect(await status(api, ws)).toEqual({ ...counts(1, 1, 0, 0), sessions: { s2: { session_id: 's2', ...counts(1, 1, 0, 0) } } });
    expect(await status(api, ws, '?session_id=s1')).toEqual({ ...counts(0, 0, 0, 0), sessions: null });
    // new work in s1 is counted on its own
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I live in Porto' }] });
    // (pending, or already in progress: the worker runs)
    expect(await status(api, ws, '?session_id=s1')).toMatchObject({ total_work_units: 1, completed_work_units: 0, sessions: null });
    await drain(s);
    expect(await status(api, ws, '?session_id=s1')).toEqual({ ...counts(1, 1, 0, 0), sessions: null });

    // the worker's first round purges the counters of the hours no longer counted, and only those
    await age('representation_counters', 25, 's2');
    expect(await counters()).toBe(4);
    await s.worker.stop(1000);
    const worker = createWorker(api.config, api.database, silent);
    worker.start();
    const deadline = Date.now() + 5_000;
    while ((await counters()) > 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    await worker.stop(1000);
    // gone: s1's old items and summary, s2's item; left: s1's new item (its current hour)
    expect(await counters()).toBe(1);
    expect(await status(api, ws)).toEqual({ ...counts(1, 1, 0, 0), sessions: { s1: { session_id: 's1', ...counts(1, 1, 0, 0) } } });
  });

  it('never counts failed work as completed', async () => {
    const s = await setup();
    const { api, ws } = s;
    const created = await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', configuration: { summary: { messages_per_short_summary: 10 } } });
    expect(created.status, created.text).toBe(201);
    // every answer unusable: representation items fail; the summary's empty answer fails too
    fake.script.defaultChat({ text: '' });
    // alice's one message is derived; bob's ten are not (reasoning off per message), the tenth queues a summary
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, {
      messages: [
        { peer_id: 'alice', content: 'I like tea' },
        ...Array.from({ length: 9 }, (_, i) => ({ peer_id: 'bob', content: `turn ${i}`, configuration: { reasoning: { enabled: false } } })),
      ],
    });
    await drain(s);
    const dead = await api.database.driver.all<{ kind: string }>("SELECT DISTINCT kind FROM jobs WHERE workspace_id = ? AND status = 'dead' ORDER BY kind", [ws]);
    expect(dead.map((row) => row.kind)).toEqual(['reasoning.represent', 'reasoning.summarize']);
    const items = await api.database.driver.all<{ error: string | null }>('SELECT error FROM representation_items WHERE workspace_id = ?', [ws]);
    expect(items).toHaveLength(1);
    expect(items[0].error).not.toBeNull();
    // a failed item and a failed summary job: in the total, not completed, not waiting
    expect(await status(api, ws)).toEqual({ ...counts(2, 0, 0, 0), sessions: { s1: { session_id: 's1', ...counts(2, 0, 0, 0) } } });
  });
});
