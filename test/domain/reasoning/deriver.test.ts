import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDomainContext } from '../../../src/domain/context.js';
import { deriveStoredMessages } from '../../../src/domain/scheduling/queue-reasoning.js';
import { reasoningRuntime } from '../../../src/runtime/runtime.js';
import { buildModels } from '../../../src/llm/models.js';
import { drainWorkspace, facts, reasoningApps, type ReasoningSetup } from '../../support/reasoning-harness.js';
import { heldAnswer, startFakeModelServer, type FakeModelServer } from '../../support/fake-model-server.js';
import type { TestApi } from '../../support/test-app.js';
import { REPRESENT, SUMMARIZE } from '../../../src/domain/job-kinds.js';

/*
 * Messages in, conclusions out: the deriver end to end over HTTP, with the fake model server
 * answering (the real openai transport talks to it) and the real worker running the jobs, on
 * SQLite or PostgreSQL.
 */

let fake: FakeModelServer;
beforeAll(async () => {
  fake = await startFakeModelServer();
});
afterAll(() => fake.close());

type Setup = ReasoningSetup;
const apps = reasoningApps(() => fake);
const setup = (env: Record<string, string> = {}) => apps.start(env);
afterEach(() => apps.stopAll());
const drain = (s: Setup, timeoutMs?: number) => drainWorkspace(s, { timeoutMs });

async function conclusions(api: TestApi, ws: string, observer: string, observed: string) {
  const page = await api.post(`/v3/workspaces/${ws}/conclusions/list?size=100`, { filters: { observer_id: observer, observed_id: observed } });
  expect(page.status, page.text).toBe(200);
  return page.body.items as { content: string; session_id: string; source_ids: string[] | null; times_derived?: number }[];
}

/** The workspace's jobs of `kind`: status, attempts and last error. */
async function jobsOf(api: TestApi, ws: string, kind: string) {
  const rows = await api.database.driver.all<{ status: string; attempts: number | string; last_error: string | null }>(
    'SELECT status, attempts, last_error FROM jobs WHERE workspace_id = ? AND kind = ?',
    [ws, kind],
  );
  return rows.map((row) => ({ ...row, attempts: Number(row.attempts) }));
}

/** Answers held back by the fake model until the test releases them (every one by the end of each test). */
const holds: (() => void)[] = [];
afterEach(() => holds.splice(0).forEach((release) => release()));

/** heldAnswer, released at the end of the test at the latest. */
function heldBack(): { until: Promise<void>; release: () => void } {
  const hold = heldAnswer();
  holds.push(hold.release);
  return hold;
}

/**
 * Starts the worker; once the model has the job's first request (its answer held back by `hold`),
 * deletes session s1 and waits for the purge job to remove its row, the job of `kind` still
 * running, then lets the model answer.
 */
async function purgeWhileTheModelAnswers({ api, worker, ws }: Setup, kind: string, hold: { release: () => void }): Promise<void> {
  worker.start();
  await vi.waitFor(() => expect(fake.requests('chat')).toHaveLength(1), { timeout: 10_000 });
  expect((await api.delete(`/v3/workspaces/${ws}/sessions/s1`)).status).toBe(202);
  await vi.waitFor(async () => expect(await api.database.driver.get('SELECT id FROM sessions WHERE workspace_id = ?', [ws])).toBeUndefined(), { timeout: 5000 });
  expect((await jobsOf(api, ws, kind)).map((job) => job.status)).toEqual(['running']);
  hold.release();
}

describe('the deriver', () => {
  it('turns messages into explicit conclusions of every observer, with their source messages', async () => {
    const s = await setup();
    const { api, ws } = s;
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {}, bob: { observe_others: true } })).status).toBe(200);
    // the two units run in parallel: answer by whom the prompt is about
    fake.script.defaultChat((request) =>
      String(request.body.messages[0].content).includes('Participant: alice') ? facts('alice moved to Lisbon', 'alice has a sister') : facts('bob likes maps'),
    );
    const sent = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, {
      messages: [
        { peer_id: 'alice', content: 'I just moved to Lisbon with my sister' },
        { peer_id: 'bob', content: 'Nice! I love looking at maps of Lisbon' },
      ],
    });
    expect(sent.status).toBe(201);
    await drain(s);

    const aliceByAlice = await conclusions(api, ws, 'alice', 'alice');
    const aliceByBob = await conclusions(api, ws, 'bob', 'alice');
    expect(aliceByAlice.map((c) => c.content).sort()).toEqual(['alice has a sister', 'alice moved to Lisbon']);
    expect(aliceByBob.map((c) => c.content).sort()).toEqual(['alice has a sister', 'alice moved to Lisbon']);
    expect(aliceByBob[0]).toMatchObject({ session_id: 's1', source_ids: [sent.body[0].id] });
    // bob is observed by himself only (alice does not observe others)
    expect((await conclusions(api, ws, 'bob', 'bob')).map((c) => c.content)).toEqual(['bob likes maps']);
    expect(await conclusions(api, ws, 'alice', 'bob')).toEqual([]);

    const chats = fake.requests('chat');
    expect(chats).toHaveLength(2);
    const prompt = chats.map((r) => r.body.messages[0].content as string).find((text) => text.includes('Participant: alice'))!;
    expect(prompt).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d alice: I just moved to Lisbon with my sister/);
    expect(chats[0].body.response_format.type).toBe('json_schema');
  });

  it('observes nobody with observe_me false, and nothing with reasoning disabled', async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: { observe_me: false }, bob: { observe_others: true } });
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's2', configuration: { reasoning: { enabled: false } } });
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'a secret' }] });
    await api.post(`/v3/workspaces/${ws}/sessions/s2/messages`, { messages: [{ peer_id: 'carol', content: 'also private' }] });
    // per message: only this one is derived
    await api.post(`/v3/workspaces/${ws}/sessions/s2/messages`, {
      messages: [{ peer_id: 'carol', content: 'I play the violin', configuration: { reasoning: { enabled: true } } }],
    });
    fake.script.defaultChat(facts('carol plays the violin'));
    await drain(s);
    expect(fake.requests('chat')).toHaveLength(1);
    expect(fake.requests('chat')[0].body.messages[0].content).toContain('carol: I play the violin');
    expect(await conclusions(api, ws, 'alice', 'alice')).toEqual([]);
    expect((await conclusions(api, ws, 'carol', 'carol')).map((c) => c.content)).toEqual(['carol plays the violin']);
  });

  it("follows each member's own peer configuration, read with the session's memberships: a peer with observe_me false is observed by nobody", async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'dana', configuration: { observe_me: false } });
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's3', peers: { dana: {}, erin: { observe_others: true } } });
    const members = await api.database.store.sessions.memberships(ws, 's3');
    expect(Object.fromEntries(members.map((m) => [m.peerId, m.peerConfiguration]))).toEqual({ dana: { observe_me: false }, erin: {} });
    fake.script.defaultChat(facts('erin likes chess'));
    await api.post(`/v3/workspaces/${ws}/sessions/s3/messages`, {
      messages: [
        { peer_id: 'dana', content: 'dana keeps this to herself' },
        { peer_id: 'erin', content: 'I like chess' },
      ],
    });
    await drain(s);
    // one unit derived: erin's own message; dana's, observed by nobody, none
    expect(fake.requests('chat')).toHaveLength(1);
    expect((await conclusions(api, ws, 'erin', 'erin')).map((c) => c.content)).toEqual(['erin likes chess']);
    expect(await conclusions(api, ws, 'erin', 'dana')).toEqual([]);
    expect(await conclusions(api, ws, 'dana', 'dana')).toEqual([]);
  });

  it('waits for the token gate unless flushing, then takes the unit as one batch', async () => {
    const s = await setup({ DERIVER_FLUSH_ENABLED: 'false', DERIVER_REPRESENTATION_BATCH_WORK_UNIT_TARGET_TOKENS: '15' });
    const { api, ws } = s;
    fake.script.defaultChat(facts('alice talks a lot'));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'short one' }] });
    s.worker.start();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(fake.requests('chat')).toHaveLength(0);
    expect(await api.database.store.reasoning.openItemCount(ws)).toBe(1);

    const long = 'I have been thinking about moving to a quieter town near the coast for a while now';
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: long }] });
    await drain(s);
    expect(fake.requests('chat')).toHaveLength(1);
    const prompt = fake.requests('chat')[0].body.messages[0].content as string;
    expect(prompt).toContain('alice: short one');
    expect(prompt).toContain(`alice: ${long}`);
  });

  it('reinforces a fact it already holds instead of storing it twice', async () => {
    const s = await setup();
    const { api, ws } = s;
    fake.script.chat(facts('alice likes tea'));
    fake.script.chat(facts('  Alice likes TEA ', 'alice drinks it hot'));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I like tea' }] });
    await drain(s);
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'Tea, hot, always' }] });
    await drain(s);
    const held = await conclusions(api, ws, 'alice', 'alice');
    expect(held.map((c) => c.content).sort()).toEqual(['alice drinks it hot', 'alice likes tea']);
    const row = await api.database.driver.get<{ times_derived: number | string }>(
      "SELECT times_derived FROM conclusions WHERE workspace_id = ? AND content = 'alice likes tea'",
      [ws],
    );
    expect(Number(row?.times_derived)).toBe(2);
  });

  it('falls back to JSON-object mode when the first answer cannot be read', async () => {
    const s = await setup();
    const { api, ws } = s;
    fake.script.chat({ text: 'Here are the facts: alice likes tea.' });
    fake.script.chat(facts('alice likes tea'));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I like tea' }] });
    await drain(s);
    expect((await conclusions(api, ws, 'alice', 'alice')).map((c) => c.content)).toEqual(['alice likes tea']);
    const [first, second] = fake.requests('chat');
    expect(first.body.response_format.type).toBe('json_schema');
    expect(second.body.response_format.type).toBe('json_object');
    expect(JSON.stringify(second.body.messages)).toContain('JSON Schema');
  });

  it('fails visibly when no answer can be read: retried, then dead-lettered with the reason, and the unit goes on', async () => {
    const s = await setup();
    const { api, ws } = s;
    fake.script.defaultChat({ text: 'I cannot do that.' });
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I like tea' }] });
    await drain(s);
    expect(await conclusions(api, ws, 'alice', 'alice')).toEqual([]);
    // 2 attempts x (configured, json_object, repair)
    expect(fake.requests('chat')).toHaveLength(6);
    expect(await jobsOf(api, ws, REPRESENT)).toEqual([{ status: 'dead', attempts: 2, last_error: expect.stringContaining('no usable JSON after 3 attempts') }]);
    const item = await api.database.driver.get<{ error: string | null }>('SELECT error FROM representation_items WHERE workspace_id = ?', [ws]);
    expect(item?.error).toContain('no usable JSON');
  });

  it('retries a provider error (500) and then succeeds, losing nothing', async () => {
    const s = await setup();
    const { api, ws } = s;
    fake.script.chat({ status: 500, errorBody: { error: { message: 'overloaded' } } }, 4);
    fake.script.chat(facts('alice likes tea'));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I like tea' }] });
    await drain(s, 30_000);
    expect((await conclusions(api, ws, 'alice', 'alice')).map((c) => c.content)).toEqual(['alice likes tea']);
  });

  it('stores what its FALLBACK__ model finds while its own model is down, in the job\'s first attempt', async () => {
    const s = await setup({ LLM_MAX_RETRIES: '1', DERIVER_MODEL_CONFIG__FALLBACK__MODEL: 'fake-fallback' });
    const { api, ws } = s;
    fake.script.defaultChat((request) => (request.body.model === 'fake-chat' ? { status: 503, errorBody: { error: { message: 'overloaded' } } } : facts('alice likes tea')));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I like tea' }] });
    await drain(s);
    expect((await conclusions(api, ws, 'alice', 'alice')).map((c) => c.content)).toEqual(['alice likes tea']);
    expect(fake.requests('chat').map((r) => r.body.model)).toEqual(['fake-chat', 'fake-chat', 'fake-fallback']);
    expect(await jobsOf(api, ws, REPRESENT)).toEqual([{ status: 'done', attempts: 1, last_error: null }]);
  });

  it('a session deleted and purged while its batch is with the model: the job ends after one attempt, not failed, and stores nothing', async () => {
    const s = await setup();
    const { api, ws } = s;
    const hold = heldBack();
    fake.script.defaultChat({ ...facts('alice likes tea'), until: hold.until });
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I like tea' }] });
    await purgeWhileTheModelAnswers(s, REPRESENT, hold);
    await drain(s);
    // one attempt, not a failure retried
    expect(await jobsOf(api, ws, REPRESENT)).toEqual([{ status: 'done', attempts: 1, last_error: null }]);
    expect(fake.requests('chat')).toHaveLength(1);
    const stored = await api.database.driver.get<{ n: number | string }>('SELECT count(*) AS n FROM conclusions WHERE workspace_id = ?', [ws]);
    expect(Number(stored?.n)).toBe(0);
  });

  it('a workspace deleted and written again (a new session of the same id) while a batch is with the model: nothing of the batch is written, no attempt fails', async () => {
    const s = await setup();
    const { api, worker, ws } = s;
    const hold = heldBack();
    fake.script.chat({ ...facts('alice likes tea'), until: hold.until });
    fake.script.defaultChat(facts('bob likes maps'));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I like tea' }] });
    worker.start();
    await vi.waitFor(() => expect(fake.requests('chat')).toHaveLength(1), { timeout: 10_000 });
    expect((await api.delete(`/v2/workspaces/${ws}`)).status).toBe(200);
    // the same session id again, without alice: her batch's items went with the old session
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'bob', content: 'I like maps' }] })).status).toBe(201);
    hold.release();
    await drain(s);
    expect((await jobsOf(api, ws, REPRESENT)).filter((job) => job.attempts !== 1 || job.last_error !== null)).toEqual([]);
    const stored = await api.database.driver.all<{ observer_id: string; content: string }>('SELECT observer_id, content FROM conclusions WHERE workspace_id = ?', [ws]);
    expect(stored).toEqual([{ observer_id: 'bob', content: 'bob likes maps' }]);
  });
});

describe('engram derive', () => {
  it('queues messages stored while no model was configured, once one is', async () => {
    // the same database with and without a model: first written with reasoning off
    const s = await setup();
    const ws = s.ws;
    const store = s.api.database.store;
    const noModel = createDomainContext(store, { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 2 });
    const { createMessages } = await import('../../../src/domain/messages/messages.js');
    await createMessages(noModel, ws, 's1', [
      { peerId: 'alice', content: 'I live in Porto' },
      { peerId: 'alice', content: 'and I cycle to work' },
    ]);
    expect(await store.reasoning.openItemCount(ws)).toBe(0);

    fake.script.defaultChat(facts('alice lives in Porto'));
    const models = buildModels(s.api.config.models);
    const withModel = createDomainContext(store, { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 2 }, undefined, reasoningRuntime(s.api.config, models));
    expect(await deriveStoredMessages(withModel, { workspaceId: ws })).toBe(2);
    // a second run queues nothing new
    expect(await deriveStoredMessages(withModel, { workspaceId: ws })).toBe(0);
    await drain(s);
    expect((await conclusions(s.api, ws, 'alice', 'alice')).map((c) => c.content)).toEqual(['alice lives in Porto']);
  });
});

describe('summaries', () => {
  it('writes a short summary every N messages and a long one every M, served by the route and used by the context', async () => {
    const s = await setup();
    const { api, ws } = s;
    expect(
      (await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', configuration: { summary: { messages_per_short_summary: 10, messages_per_long_summary: 20 }, reasoning: { enabled: false } } })).status,
    ).toBe(201);
    fake.script.defaultChat((request) => {
      const prompt = String(request.body.messages[0].content);
      const kind = prompt.includes('thorough') ? 'long' : 'short';
      const last = [...prompt.matchAll(/alice: turn (\d+)/g)].at(-1)?.[1];
      return { text: kind === 'long' ? `long summary, with more detail, up to turn ${last}` : `short summary up to turn ${last}` };
    });
    const sent: string[] = [];
    for (let i = 1; i <= 20; i++) {
      const response = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: `turn ${i}` }] });
      sent.push(response.body[0].id);
    }
    await drain(s);
    const summaries = await api.get(`/v3/workspaces/${ws}/sessions/s1/summaries`);
    expect(summaries.status).toBe(200);
    expect(summaries.body.short_summary).toMatchObject({ content: 'short summary up to turn 20', message_id: sent[19], summary_type: 'short' });
    expect(summaries.body.long_summary).toMatchObject({ content: 'long summary, with more detail, up to turn 20', message_id: sent[19], summary_type: 'long' });
    expect(summaries.body.short_summary.token_count).toBeGreaterThan(0);
    // the second short summary folded in the first
    const shortPrompts = fake.requests('chat').map((r) => String(r.body.messages[0].content)).filter((p) => !p.includes('thorough'));
    expect(shortPrompts).toHaveLength(2);
    expect(shortPrompts[1]).toContain('short summary up to turn 10');
    expect(shortPrompts[1]).toContain('alice: turn 11');
    expect(shortPrompts[1]).not.toContain('alice: turn 10\n');

    // the long summary says more and fits its 40 % of the budget
    const context = await api.get(`/v3/workspaces/${ws}/sessions/s1/context?tokens=1000`);
    expect(context.body.summary).toMatchObject({ summary_type: 'long', message_id: sent[19] });
    // with a budget too small for the long one, the short one
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s1/context?tokens=25`)).body.summary).toMatchObject({ summary_type: 'short' });
    // messages from the one the summary covers up to
    expect(context.body.messages.map((m: { id: string }) => m.id)).toEqual([sent[19]]);
    const noSummary = await api.get(`/v3/workspaces/${ws}/sessions/s1/context?tokens=1000&summary=false`);
    expect(noSummary.body.summary).toBeNull();
    expect(noSummary.body.messages).toHaveLength(20);
  });

  it('a session deleted and purged while its summary is with the model: the job ends after one attempt, not failed', async () => {
    const s = await setup();
    const { api, ws } = s;
    const configuration = { summary: { messages_per_short_summary: 10, messages_per_long_summary: 20 }, reasoning: { enabled: false } };
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', configuration })).status).toBe(201);
    const hold = heldBack();
    fake.script.defaultChat({ text: 'a short summary', until: hold.until });
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: Array.from({ length: 10 }, (_, i) => ({ peer_id: 'alice', content: `turn ${i}` })) });
    await purgeWhileTheModelAnswers(s, SUMMARIZE, hold);
    await drain(s);
    expect(await jobsOf(api, ws, SUMMARIZE)).toEqual([{ status: 'done', attempts: 1, last_error: null }]);
  });
});
