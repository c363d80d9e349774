import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dreamQueueKey } from '../../../src/domain/scheduling/dream-schedule.js';
import type { Worker } from '../../../src/jobs/worker.js';
import { createWorker } from '../../../src/runtime/runtime.js';
import { heldAnswer, startFakeModelServer, type FakeModelServer, type RecordedRequest } from '../../support/fake-model-server.js';
import { facts } from '../../support/reasoning-harness.js';
import { silent } from '../../support/polling.js';
import { startWebhookSink, type WebhookSink } from '../../support/webhook-sink.js';
import { buildTestApp, DIALECT, ownPostgresDatabase, uniqueId, type TestApi } from '../../support/test-app.js';
import { DREAM, DREAM_AUTO } from '../../../src/domain/job-kinds.js';

/*
 * Dreams end to end over HTTP, on SQLite or PostgreSQL: schedule_dream and trigger_dream, the
 * automatic schedule kept in the jobs table (thresholds, the idle wait moved by new activity, a
 * restart), the specialists' tools writing deductions, deletions and the peer card, with the fake
 * model server scripting the tool calls and the real worker running the jobs.
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

interface Setup {
  api: TestApi;
  worker: Worker;
  ws: string;
}
const open: Setup[] = [];
const files: string[] = [];
/** PostgreSQL databases made for one test (dropped after it, once its apps are closed). */
const drops: (() => Promise<void>)[] = [];

const BASE_ENV = { DERIVER_FLUSH_ENABLED: 'true', JOB_MAX_ATTEMPTS: '2', JOB_RETRY_BASE_MS: '10', JOB_RETRY_MAX_MS: '20', WORKER_POLL_MS: '20' };

async function setup(env: Record<string, string> = {}, ws = uniqueId()): Promise<Setup> {
  const api = await buildTestApp({ ...fake.env(), ...BASE_ENV, ...env }, { ownDatabase: true });
  const worker = createWorker(api.config, api.database, silent);
  const made = { api, worker, ws };
  open.push(made);
  return made;
}

async function close(s: Setup): Promise<void> {
  open.splice(open.indexOf(s), 1);
  await s.worker.stop(1000);
  await s.api.close();
}

afterEach(async () => {
  for (const s of open.splice(0)) {
    await s.worker.stop(1000);
    await s.api.close();
  }
  for (const file of files.splice(0)) rmSync(file, { force: true });
  for (const drop of drops.splice(0)) await drop();
  fake.reset();
});

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function openDreamJobs(s: Setup, observer: string, observed = observer) {
  return s.api.database.store.jobs.openJobs(dreamQueueKey({ workspaceId: s.ws, observerId: observer, observedId: observed }));
}

/** Runs the worker until the workspace's representation items are processed. */
async function drainDeriver(s: Setup): Promise<void> {
  s.worker.start();
  await until('the deriver', async () => (await s.api.database.store.reasoning.openItemCount(s.ws)) === 0);
}

/** Runs the worker until the collection has no dream pending or running. */
async function drainDreams(s: Setup, observer: string, observed = observer): Promise<void> {
  s.worker.start();
  await until('the dream', async () => (await openDreamJobs(s, observer, observed)).length === 0);
}

async function conclusions(s: Setup, observer: string, observed = observer) {
  const page = await s.api.post(`/v3/workspaces/${s.ws}/conclusions/list?size=100`, { filters: { observer_id: observer, observed_id: observed } });
  expect(page.status, page.text).toBe(200);
  return page.body.items as { id: string; content: string; level?: string; session_id: string | null; source_ids: string[] | null }[];
}

async function addConclusion(s: Setup, content: string, sessionId: string): Promise<string> {
  const created = await s.api.post(`/v3/workspaces/${s.ws}/conclusions`, { conclusions: [{ content, observer_id: 'alice', observed_id: 'alice', session_id: sessionId }] });
  expect(created.status, created.text).toBe(201);
  return (created.body as { id: string }[])[0].id;
}

const toolNames = (request: RecordedRequest): string[] => ((request.body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name);
const isDream = (request: RecordedRequest) => toolNames(request).includes('get_recent_observations');

async function queueStatus(s: Setup, query = '') {
  const status = await s.api.get(`/v3/workspaces/${s.ws}/queue/status${query}`);
  expect(status.status, status.text).toBe(200);
  return status.body as { total_work_units: number; completed_work_units: number; pending_work_units: number; in_progress_work_units: number };
}

describe('schedule_dream', () => {
  it('answers 204 and queues one dream per collection and type, skipping one already pending; v2 trigger_dream too', async () => {
    const s = await setup();
    const { api, ws } = s;
    const url = `/v3/workspaces/${ws}/schedule_dream`;
    expect((await api.post(url, { observer: 'alice', dream_type: 'omni' })).status).toBe(204);
    expect((await openDreamJobs(s, 'alice')).map((j) => [j.kind, j.payload.dreamType, j.payload.observedId])).toEqual([[DREAM, 'omni', 'alice']]);
    // the same again: skipped, still one
    expect((await api.post(url, { observer: 'alice', observed: 'alice', dream_type: 'omni', rebuild: true })).status).toBe(204);
    expect(await openDreamJobs(s, 'alice')).toHaveLength(1);
    // v2: its dream types are the omni dream, so this one is skipped as well
    expect((await api.post(`/v2/workspaces/${ws}/trigger_dream`, { observer: 'alice', dream_type: 'consolidate' })).status).toBe(204);
    expect(await openDreamJobs(s, 'alice')).toHaveLength(1);
    // another type, another collection: queued
    expect((await api.post(url, { observer: 'alice', dream_type: 'card_refresh', session_id: 's1' })).status).toBe(204);
    expect((await api.post(url, { observer: 'alice', observed: 'bob', dream_type: 'omni' })).status).toBe(204);
    expect((await openDreamJobs(s, 'alice')).map((j) => j.payload.dreamType)).toEqual(['omni', 'card_refresh']);
    expect(await openDreamJobs(s, 'alice', 'bob')).toHaveLength(1);
    // queue status counts dream work (pending), by observer and observed
    expect((await queueStatus(s)).pending_work_units).toBe(3);
    expect((await queueStatus(s, '?observer_id=alice')).pending_work_units).toBe(3);
    expect((await queueStatus(s, '?sender_id=bob')).pending_work_units).toBe(1);
    expect((await queueStatus(s, '?observer_id=carol')).pending_work_units).toBe(0);
  });

  it('validates the body and refuses when dreams are off', async () => {
    const s = await setup();
    const bad = await s.api.post(`/v3/workspaces/${s.ws}/schedule_dream`, { observer: 'alice', dream_type: 'nap' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ type: 'enum', loc: ['body', 'dream_type'] });
    expect((await s.api.post(`/v3/workspaces/${s.ws}/schedule_dream`, { dream_type: 'omni' })).status).toBe(422);
    // an empty id names nothing: 204 as for any other, and no job (it could only be dead-lettered)
    for (const body of [{ observer: '' }, { observer: 'alice', observed: '' }, { observer: 'alice', session_id: '' }]) {
      expect((await s.api.post(`/v3/workspaces/${s.ws}/schedule_dream`, { ...body, dream_type: 'card_refresh' })).status).toBe(204);
    }
    // an empty workspace id in the path matches no route, as in the reference's router
    expect((await s.api.post('/v3/workspaces//schedule_dream', { observer: 'alice', dream_type: 'omni' })).status).toBe(404);
    expect(await openDreamJobs(s, 'alice')).toHaveLength(0);
    expect(await openDreamJobs(s, '')).toHaveLength(0);
    expect(Number((await s.api.database.driver.get<{ n: number | string }>("SELECT count(*) AS n FROM jobs WHERE kind = 'reasoning.dream'"))?.n)).toBe(0);
    await s.api.post('/v3/workspaces', { id: s.ws, configuration: { dream: { enabled: false } } });
    const off = await s.api.post(`/v3/workspaces/${s.ws}/schedule_dream`, { observer: 'alice', dream_type: 'omni' });
    expect(off.status).toBe(400);
    expect(await openDreamJobs(s, 'alice')).toHaveLength(0);

    const disabled = await setup({ DREAM_ENABLED: 'false' });
    const refused = await disabled.api.post(`/v3/workspaces/${disabled.ws}/schedule_dream`, { observer: 'alice', dream_type: 'omni' });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ detail: 'Dreams are not enabled in the system configuration' });
  });
});

describe('the omni dream', () => {
  it('creates a deduction with source ids and premises, supersedes a contradicted conclusion (kept in its history, never deleted) and rewrites the card by the rules', async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {} });
    await api.post(`/v3/workspaces/${ws}/sessions/s2/peers`, { alice: {} });
    const old = await addConclusion(s, 'alice lives in Porto', 's1');
    const moved = await addConclusion(s, 'alice moved to Lisbon in May', 's1');
    await new Promise((resolve) => setTimeout(resolve, 5));
    const job = await addConclusion(s, 'alice works at a bakery in Lisbon', 's2');
    expect((await api.put(`/v3/workspaces/${ws}/peers/alice/card`, { peer_card: ['ATTRIBUTE: old entry'] })).status).toBe(200);

    let dreamCalls = 0;
    fake.script.defaultChat((request) => {
      if (!isDream(request)) return { text: 'ok' };
      dreamCalls++;
      if (dreamCalls === 1) {
        return {
          toolCalls: [
            { name: 'get_recent_observations', arguments: {} },
            {
              name: 'create_deductions',
              arguments: { deductions: [{ content: 'alice lives and works in Lisbon', source_ids: [moved, job], premises: ['alice moved to Lisbon', 'alice works in Lisbon'] }] },
            },
            { name: 'supersede_conclusions', arguments: { ids: [old, 'no-such-id', moved], superseded_by: moved, reason: 'alice moved' } },
            {
              name: 'update_peer_card',
              arguments: { entries: ['IDENTITY: Alice', 'ATTRIBUTE: works at a bakery', 'attribute:  works at a BAKERY', 'lives in Lisbon', `ATTRIBUTE: ${'x'.repeat(250)}`] },
            },
          ],
        };
      }
      if (dreamCalls === 3) {
        // the induction specialist: one source is too few, two are enough
        return {
          toolCalls: [
            { name: 'create_inductions', arguments: { inductions: [{ content: 'alice changes jobs when she moves', source_ids: [moved], confidence: 'low' }] } },
            { name: 'create_inductions', arguments: { inductions: [{ content: 'alice settles where she works', source_ids: [moved, job], pattern_type: 'habit', confidence: 'medium' }] } },
          ],
        };
      }
      return { text: 'done' };
    });
    expect((await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'alice', dream_type: 'omni' })).status).toBe(204);
    await drainDreams(s, 'alice');

    const dreamRequests = fake.requests('chat').filter(isDream);
    expect(toolNames(dreamRequests[0])).toEqual(['get_recent_observations', 'search_memory', 'search_messages', 'create_deductions', 'supersede_conclusions', 'delete_conclusions', 'update_peer_card']);
    expect(toolNames(dreamRequests[2])).toEqual(['get_recent_observations', 'search_memory', 'search_messages', 'create_inductions']);
    // what the deduction specialist saw of its tools' results
    const toolResults = (dreamRequests[1].body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content);
    expect(toolResults[0]).toContain(`id=${old}`);
    expect(toolResults[2]).toContain(`${old}: superseded by ${moved}`);
    expect(toolResults[2]).toContain('no-such-id: no such current conclusion');
    expect(toolResults[2]).toContain(`${moved}: a conclusion cannot supersede itself`);

    // the contradicted fact is superseded, not deleted: out of the default list, in the full one and in the history
    const everything = await api.post(`/v3/workspaces/${ws}/conclusions/list?size=100&include_superseded=true`, { filters: { observer_id: 'alice', observed_id: 'alice' } });
    const retired = (everything.body.items as { id: string; superseded_by: string | null; superseded_at: string | null }[]).find((c) => c.id === old);
    expect(retired).toMatchObject({ superseded_by: moved });
    expect(retired?.superseded_at).not.toBeNull();
    expect(everything.body.total).toBe(5);
    const history = await api.get(`/v3/workspaces/${ws}/conclusions/${moved}/history`);
    expect(history.status, history.text).toBe(200);
    expect((history.body as { id: string }[]).map((c) => c.id)).toEqual([old, moved]);
    expect(toolResults[3]).toContain('card stored with 2 entries');

    const after = await conclusions(s, 'alice');
    const contents = after.map((c) => c.content).sort();
    expect(contents).toEqual(['alice lives and works in Lisbon', 'alice moved to Lisbon in May', 'alice settles where she works', 'alice works at a bakery in Lisbon']);
    const deduction = after.find((c) => c.content === 'alice lives and works in Lisbon')!;
    expect(deduction.source_ids).toEqual([moved, job]);
    // stored in the session of its newest source
    expect(deduction.session_id).toBe('s2');
    // its premises and every source session are stored with it
    const row = await api.database.driver.get<{ metadata: unknown; source_session_ids: unknown }>('SELECT metadata, source_session_ids FROM conclusions WHERE id = ?', [deduction.id]);
    const json = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value);
    expect(json(row?.metadata)).toEqual({ premises: ['alice moved to Lisbon', 'alice works in Lisbon'] });
    expect(json(row?.source_session_ids)).toEqual(['s1', 's2']);
    expect(after.find((c) => c.content === 'alice settles where she works')!.source_ids).toEqual([moved, job]);

    const card = await api.get(`/v3/workspaces/${ws}/peers/alice/card`);
    expect(card.body).toEqual({ peer_card: ['IDENTITY: Alice', 'ATTRIBUTE: works at a bakery'] });

    // a session allowlist never shows a conclusion drawn from a session outside it
    const representation = async (sessions: string[]) => {
      const answer = await api.post(`/v3/workspaces/${ws}/peers/alice/representation`, { filters: { session_id: { in: sessions } } });
      expect(answer.status, answer.text).toBe(200);
      return answer.body.representation as string;
    };
    expect(await representation(['s1', 's2'])).toContain('alice lives and works in Lisbon');
    expect(await representation(['s2'])).not.toContain('alice lives and works in Lisbon');
    expect(await representation(['s2'])).toContain('alice works at a bakery in Lisbon');

    // the dream is completed work in the queue status
    const status = await queueStatus(s, '?observer_id=alice');
    expect(status).toMatchObject({ completed_work_units: 1, pending_work_units: 0, in_progress_work_units: 0 });
  });

  it('refuses a deduction whose sources were purged while its embedding was made, telling the model so', async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {} });
    await api.post(`/v3/workspaces/${ws}/sessions/s2/peers`, { alice: {} });
    const kept = await addConclusion(s, 'alice moved to Lisbon in May', 's1');
    const purged = await addConclusion(s, 'alice works at a bakery in Lisbon', 's2');

    const deduction = 'alice lives and works in Lisbon';
    let dreamCalls = 0;
    fake.script.defaultChat((request) => {
      if (!isDream(request)) return { text: 'ok' };
      dreamCalls++;
      if (dreamCalls !== 1) return { text: 'done' };
      return { toolCalls: [{ name: 'create_deductions', arguments: { deductions: [{ content: deduction, source_ids: [kept, purged] }] } }] };
    });
    // the deduction's vector comes after the session below is deleted and purged: the sources
    // were found before, the write comes after
    const embeds = (request: RecordedRequest) => JSON.stringify(request.body.input).includes(deduction);
    const hold = heldAnswer();
    fake.script.defaultEmbeddings((request) => (embeds(request) ? { until: hold.until } : {}));
    expect((await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'alice', dream_type: 'omni' })).status).toBe(204);
    s.worker.start();
    try {
      await until('the deduction\'s embedding request', async () => fake.requests('embeddings').some(embeds));
      expect((await api.delete(`/v3/workspaces/${ws}/sessions/s2`)).status).toBe(202);
      await until('the purge', async () => (await api.database.driver.get('SELECT id FROM conclusions WHERE id = ?', [purged])) === undefined);
      expect(await openDreamJobs(s, 'alice')).toMatchObject([{ status: 'running' }]);
    } finally {
      hold.release();
    }
    await drainDreams(s, 'alice');

    const toolResults = (fake.requests('chat').filter(isDream)[1].body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content);
    expect(toolResults).toEqual([`refused "${deduction}": its source conclusions were deleted meanwhile`]);
    expect((await conclusions(s, 'alice')).map((c) => c.content)).toEqual(['alice moved to Lisbon in May']);
    const jobs = await api.database.driver.all<{ status: string; attempts: number | string }>('SELECT status, attempts FROM jobs WHERE workspace_id = ? AND kind = ?', [ws, DREAM]);
    expect(jobs.map((job) => [job.status, Number(job.attempts)])).toEqual([['done', 1]]);
  });

  it('sends queue.empty (queue_type dream) when the collection\'s dream work drains, and card_refresh leaves the automatic schedule alone', async () => {
    const s = await setup({ WEBHOOK_SECRET: 'dream-secret', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' });
    const { api, ws } = s;
    sink.received.length = 0;
    expect((await api.post('/v3/workspaces', { id: ws })).status).toBe(201);
    expect((await api.post(`/v3/workspaces/${ws}/webhooks`, { url: sink.url })).status).toBe(201);
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    fake.script.defaultChat({ text: 'done' });
    await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'alice', dream_type: 'omni' });
    await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'alice', dream_type: 'card_refresh', session_id: 's9' });
    await drainDreams(s, 'alice');
    await sink.waitFor(1);
    await until('webhook deliveries', async () => Number((await api.database.driver.get<{ n: number | string }>("SELECT count(*) AS n FROM jobs WHERE workspace_id = ? AND status IN ('pending', 'running')", [ws]))?.n ?? 0) === 0);
    const events = sink.received.map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> }).filter((e) => e.type === 'queue.empty' && e.data.workspace_id === ws);
    // once, after the second dream (the first still had one behind it)
    expect(events.map((e) => e.data)).toEqual([{ observed: 'alice', observer: 'alice', queue_type: 'dream', session_id: 's9', workspace_id: ws }]);
    const state = await api.database.store.memory.dreamState(ws, 'alice', 'alice');
    expect(state?.explicitAtLastDream).toBe(0);
    const omniAt = state!.lastDreamAt;
    await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'alice', dream_type: 'card_refresh' });
    await drainDreams(s, 'alice');
    expect((await api.database.store.memory.dreamState(ws, 'alice', 'alice'))?.lastDreamAt).toEqual(omniAt);
    expect((await queueStatus(s)).completed_work_units).toBe(3);
  });

  it('gives each specialist at most DREAM_MAX_TOOL_ITERATIONS tool turns, and no more input than DREAM_HISTORY_TOKEN_LIMIT', async () => {
    const toolTurns = (r: RecordedRequest) => (r.body.messages as { role: string }[]).filter((m) => m.role === 'tool').length;
    const dreamRequests = async (env: Record<string, string>) => {
      const s = await setup({ DREAM_MAX_TOOL_ITERATIONS: '2', ...env });
      const { api, ws } = s;
      const peer = await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
      expect(peer.status, peer.text).toBe(201);
      const session = await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1' });
      expect(session.status, session.text).toBe(201);
      for (let i = 0; i < 3; i++) await addConclusion(s, `alice fact ${i} ${'detail '.repeat(60)}`, 's1');
      // a model that never stops calling tools while it has them
      fake.script.defaultChat((request) => (toolNames(request).length > 0 ? { toolCalls: [{ name: 'get_recent_observations', arguments: {} }] } : { text: 'done' }));
      expect((await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'alice', dream_type: 'omni' })).status).toBe(204);
      await drainDreams(s, 'alice');
      const found = fake.requests('chat').filter((r) => String(r.body.messages[0]?.content ?? '').includes('You consolidate the memory'));
      // the dream ran and ended done (a failed or skipped one would say so here)
      expect(await api.database.driver.get<{ status: string; last_error: string | null }>('SELECT status, last_error FROM jobs WHERE workspace_id = ? AND kind = ?', [ws, DREAM])).toEqual({ status: 'done', last_error: null });
      await close(s);
      fake.reset();
      return found;
    };
    const roomy = await dreamRequests({});
    // deduction then induction: two turns with tools and one final turn without, each
    expect(roomy.map((r) => toolNames(r).length > 0)).toEqual([true, true, false, true, true, false]);
    expect(roomy.map(toolTurns)).toEqual([0, 1, 2, 0, 1, 2]);
    // a tool turn (three long conclusions, about 330 tokens with their ids and times) is over the
    // limit by itself, while each briefing (70 to 95 tokens) fits: dropped from the input
    const tight = await dreamRequests({ DREAM_HISTORY_TOKEN_LIMIT: '256' });
    expect(tight.map((r) => toolNames(r).length > 0)).toEqual([true, true, false, true, true, false]);
    expect(tight.map(toolTurns)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it("searches only the messages the observer could see, and a failing model is retried then dead-lettered as failed work", async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {}, bob: {} });
    await api.post(`/v3/workspaces/${ws}/sessions/s2/peers`, { alice: {} });
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'my garden has roses' }] });
    await api.post(`/v3/workspaces/${ws}/sessions/s2/messages`, { messages: [{ peer_id: 'alice', content: 'my secret garden has tulips' }] });
    await drainDeriver(s);
    fake.reset();
    fake.script.chat({ toolCalls: [{ name: 'search_messages', arguments: { query: 'garden' } }] });
    fake.script.defaultChat({ text: 'done' });
    await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'bob', observed: 'alice', dream_type: 'omni' });
    await drainDreams(s, 'bob', 'alice');
    const result = (fake.requests('chat')[1].body.messages as { role: string; content: string }[]).find((m) => m.role === 'tool')!.content;
    expect(result).toContain('my garden has roses');
    expect(result).not.toContain('tulips');

    fake.reset();
    fake.script.defaultChat({ status: 400, errorBody: { error: { message: 'bad request' } } });
    await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'bob', observed: 'alice', dream_type: 'card_refresh' });
    await drainDreams(s, 'bob', 'alice');
    const dead = await api.database.driver.get<{ status: string; last_error: string }>("SELECT status, last_error FROM jobs WHERE workspace_id = ? AND kind = ? ORDER BY pk DESC", [ws, DREAM]);
    expect(dead?.status).toBe('dead');
    const status = await queueStatus(s, '?observer_id=bob');
    expect(status.total_work_units - status.completed_work_units - status.pending_work_units - status.in_progress_work_units).toBe(1);
  });

  it('keeps the old card when no entry is valid, and card_refresh with peer_card.create false writes nothing', async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.put(`/v3/workspaces/${ws}/peers/alice/card`, { peer_card: ['IDENTITY: Alice'] });
    fake.script.chat({ toolCalls: [{ name: 'update_peer_card', arguments: { entries: ['no prefix here', 'IDENTITY:   '] } }] });
    fake.script.defaultChat({ text: 'done' });
    await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'alice', dream_type: 'card_refresh' });
    await drainDreams(s, 'alice');
    const requests = fake.requests('chat');
    expect(toolNames(requests[0])).toEqual(['get_recent_observations', 'search_memory', 'search_messages', 'update_peer_card']);
    expect((requests[1].body.messages as { role: string; content: string }[]).find((m) => m.role === 'tool')!.content).toContain('no valid entry: the card is kept');
    expect((await api.get(`/v3/workspaces/${ws}/peers/alice/card`)).body).toEqual({ peer_card: ['IDENTITY: Alice'] });

    fake.reset();
    await api.put(`/v3/workspaces/${ws}`, { configuration: { peer_card: { create: false } } });
    await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'alice', dream_type: 'card_refresh' });
    await drainDreams(s, 'alice');
    expect(fake.requests('chat')).toHaveLength(0);
  });
});

describe('automatic dreams', () => {
  it('are queued past the threshold, wait for the collection to be idle, and new messages move the wait', async () => {
    const s = await setup({ DREAM_DOCUMENT_THRESHOLD: '3', DREAM_IDLE_TIMEOUT_MINUTES: '60' });
    const { api, ws } = s;
    fake.script.defaultChat((request) => (String(request.body.messages[0].content).includes('one and two') ? facts('alice fact one', 'alice fact two') : facts('alice fact three')));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'one and two' }] });
    await drainDeriver(s);
    // two explicit conclusions: under the threshold
    expect(await openDreamJobs(s, 'alice')).toHaveLength(0);

    const before = Date.now();
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'three' }] });
    await drainDeriver(s);
    const [waiting] = await openDreamJobs(s, 'alice');
    expect(waiting).toMatchObject({ kind: DREAM_AUTO, status: 'pending', payload: { dreamType: 'omni' } });
    expect(waiting.runAfter.getTime()).toBeGreaterThanOrEqual(before + 60 * 60_000);
    expect(waiting.runAfter.getTime()).toBeLessThan(Date.now() + 60 * 60_000 + 1000);
    // while it waits it is not counted (a client waiting for an empty queue is not held up an hour)
    expect((await queueStatus(s, '?observer_id=alice')).pending_work_units).toBe(0);

    // new activity in the collection: the wait starts again
    await new Promise((resolve) => setTimeout(resolve, 30));
    const messageAt = Date.now();
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'more' }] });
    const [moved] = await openDreamJobs(s, 'alice');
    expect(moved.id).toBe(waiting.id);
    expect(moved.runAfter.getTime()).toBeGreaterThanOrEqual(messageAt + 60 * 60_000);
    expect(moved.runAfter.getTime()).toBeGreaterThan(waiting.runAfter.getTime());
    // activity of another peer's collection does not move it (once alice's own derivation, which
    // is activity in her collection too, has settled)
    await drainDeriver(s);
    const [settled] = await openDreamJobs(s, 'alice');
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'bob', content: 'hello' }] });
    await drainDeriver(s);
    expect((await openDreamJobs(s, 'alice'))[0].runAfter).toEqual(settled.runAfter);

    // a manual dream brings the waiting one forward instead of queueing a second
    await drainDeriver(s);
    const totalBefore = (await queueStatus(s, '?observer_id=alice')).total_work_units;
    expect((await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'alice', dream_type: 'omni' })).status).toBe(204);
    const now = await openDreamJobs(s, 'alice');
    expect(now.map((j) => j.kind)).toEqual([DREAM]);
    expect(now[0].runAfter.getTime()).toBeLessThanOrEqual(Date.now());
    // now it counts (pending, running or done: the running worker may already have taken it)
    expect((await queueStatus(s, '?observer_id=alice')).total_work_units).toBe(totalBefore + 1);
  });

  it('are not queued when DREAM_ENABLED_TYPES leaves out omni; a requested dream still runs', async () => {
    const s = await setup({ DREAM_DOCUMENT_THRESHOLD: '1', DREAM_IDLE_TIMEOUT_MINUTES: '60', DREAM_ENABLED_TYPES: 'card_refresh' });
    const { api, ws } = s;
    fake.script.defaultChat(facts('alice fact one', 'alice fact two'));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'one and two' }] });
    await drainDeriver(s);
    expect((await conclusions(s, 'alice')).length).toBe(2);
    expect(await openDreamJobs(s, 'alice')).toHaveLength(0);
    fake.script.defaultChat({ text: 'done' });
    expect((await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'alice', dream_type: 'omni' })).status).toBe(204);
    await drainDreams(s, 'alice');
    expect((await api.database.store.memory.dreamState(ws, 'alice', 'alice'))?.explicitAtLastDream).toBe(2);
  });

  it('run after the idle wait, then wait for the threshold and the least time between dreams again', async () => {
    const s = await setup({ DREAM_DOCUMENT_THRESHOLD: '2', DREAM_IDLE_TIMEOUT_MINUTES: '0', DREAM_MIN_HOURS_BETWEEN_DREAMS: '8' });
    const { api, ws } = s;
    let n = 0;
    fake.script.defaultChat((request) => (isDream(request) ? { text: 'nothing to add' } : facts(`alice fact ${++n}`, `alice fact ${++n}`)));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'first' }] });
    await drainDeriver(s);
    await drainDreams(s, 'alice');
    expect(fake.requests('chat').filter(isDream)).toHaveLength(2); // deduction and induction
    const state = await api.database.store.memory.dreamState(ws, 'alice', 'alice');
    expect(state?.explicitAtLastDream).toBe(2);

    // past the threshold again, but within 8 hours of the last dream: none
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'second' }] });
    await drainDeriver(s);
    expect(await openDreamJobs(s, 'alice')).toHaveLength(0);
    expect(fake.requests('chat').filter(isDream)).toHaveLength(2);
  });

  it('are one schedule for every process on the database: a message through another process moves the wait', async () => {
    const file = join(tmpdir(), `${uniqueId('dreams')}.db`);
    if (DIALECT === 'sqlite') files.push(file, `${file}-wal`, `${file}-shm`);
    const own = DIALECT === 'postgres' ? await ownPostgresDatabase() : undefined;
    if (own !== undefined) drops.push(own.drop);
    const env = { DATABASE_URL: own?.url ?? file, DREAM_DOCUMENT_THRESHOLD: '1', DREAM_IDLE_TIMEOUT_MINUTES: '30' };
    const one = await setup(env);
    const two = await setup(env, one.ws);
    fake.script.defaultChat(facts('alice keeps bees'));
    await one.api.post(`/v3/workspaces/${one.ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I keep bees' }] });
    await drainDeriver(one);
    const [waiting] = await openDreamJobs(two, 'alice');
    expect(waiting.kind).toBe(DREAM_AUTO);
    await new Promise((resolve) => setTimeout(resolve, 30));
    await two.api.post(`/v3/workspaces/${one.ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'and a cat' }] });
    const [moved] = await openDreamJobs(one, 'alice');
    expect(moved.id).toBe(waiting.id);
    expect(moved.runAfter.getTime()).toBeGreaterThan(waiting.runAfter.getTime());
    // a manual request through either process finds it
    expect((await two.api.post(`/v3/workspaces/${one.ws}/schedule_dream`, { observer: 'alice', dream_type: 'omni' })).status).toBe(204);
    expect((await openDreamJobs(one, 'alice')).map((j) => [j.id, j.kind])).toEqual([[waiting.id, DREAM]]);
  });

  it('survive a restart: the waiting dream is in the store and runs in the next process', async () => {
    const file = join(tmpdir(), `${uniqueId('dreams')}.db`);
    if (DIALECT === 'sqlite') files.push(file, `${file}-wal`, `${file}-shm`);
    const own = DIALECT === 'postgres' ? await ownPostgresDatabase() : undefined;
    if (own !== undefined) drops.push(own.drop);
    const url = own?.url ?? file;
    const env = { DATABASE_URL: url, DREAM_DOCUMENT_THRESHOLD: '1', DREAM_IDLE_TIMEOUT_MINUTES: '1' };
    const first = await setup(env);
    fake.script.defaultChat(facts('alice keeps bees'));
    await first.api.post(`/v3/workspaces/${first.ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I keep bees' }] });
    await drainDeriver(first);
    const [waiting] = await openDreamJobs(first, 'alice');
    expect(waiting.kind).toBe(DREAM_AUTO);
    await close(first);

    // a minute later, another process on the same database
    const second = await setup(env, first.ws);
    const [kept] = await openDreamJobs(second, 'alice');
    expect(kept).toMatchObject({ id: waiting.id, kind: DREAM_AUTO, status: 'pending' });
    expect(kept.runAfter).toEqual(waiting.runAfter);
    await second.api.database.driver.run('UPDATE jobs SET run_after = created_at WHERE id = ?', [waiting.id]);
    fake.reset();
    fake.script.chat({ toolCalls: [{ name: 'update_peer_card', arguments: { entries: ['ATTRIBUTE: keeps bees'] } }] });
    fake.script.defaultChat({ text: 'done' });
    await drainDreams(second, 'alice');
    expect((await second.api.get(`/v3/workspaces/${second.ws}/peers/alice/card`)).body).toEqual({ peer_card: ['ATTRIBUTE: keeps bees'] });
    expect((await second.api.database.store.memory.dreamState(second.ws, 'alice', 'alice'))?.explicitAtLastDream).toBe(1);
  });
});
