import { afterEach, describe, expect, it } from 'vitest';
import { createWorker } from '../../src/runtime/runtime.js';
import { signBody } from '../../src/jobs/webhook-body.js';
import { deliverWebhook } from '../../src/jobs/deliver-webhook.js';
import type { Store } from '../../src/storage/store.js';
import type { Worker } from '../../src/jobs/worker.js';
import { buildTestApp, uniqueId, type TestApi } from '../support/test-app.js';
import { startFakeModelServer } from '../support/fake-model-server.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';

const SECRET = 'webhook-test-secret';
const silent = { info() {}, warn() {}, error() {} };

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function setup(overrides: Record<string, string> = {}): Promise<{ api: TestApi; worker: Worker; sink: WebhookSink; ws: string }> {
  const api = await buildTestApp({
    WEBHOOK_SECRET: SECRET,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    JOB_RETRY_BASE_MS: '30',
    JOB_RETRY_MAX_MS: '200',
    WORKER_POLL_MS: '20',
    ...overrides,
  }, { ownDatabase: true });
  const sink = await startWebhookSink();
  const worker = createWorker(api.config, api.database, silent);
  worker.start();
  cleanups.push(async () => {
    await worker.stop(1000);
    await sink.close();
    await api.close();
  });
  const ws = uniqueId();
  await api.post('/v3/workspaces', { id: ws });
  expect((await api.post(`/v3/workspaces/${ws}/webhooks`, { url: sink.url })).status).toBe(201);
  return { api, worker, sink, ws };
}

describe('webhook delivery', () => {
  it('delivers test.event with the exact body, a verifiable signature and an idempotency key', async () => {
    const { api, sink, ws } = await setup();
    const emitted = await api.get(`/v3/workspaces/${ws}/webhooks/test`);
    expect(emitted.status).toBe(200);
    expect(emitted.body).toBeNull();
    await sink.waitFor(1);
    const [delivery] = sink.received;
    expect(delivery.headers['content-type']).toBe('application/json');
    expect(delivery.headers['x-honcho-signature']).toBe(signBody(delivery.body, SECRET));
    expect(delivery.headers['idempotency-key']).toMatch(/^[A-Za-z0-9_-]{21}$/);
    expect(delivery.body).toMatch(new RegExp(`^\\{"data":\\{"workspace_id":"${ws}"\\},"timestamp":"\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ","type":"test.event"\\}$`));
  });

  it('sends message.created for each new message, in order', async () => {
    const { api, sink, ws } = await setup();
    const created = await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, {
      messages: [
        { peer_id: 'alice', content: 'one' },
        { peer_id: 'bob', content: 'two' },
      ],
    });
    await sink.waitFor(2);
    const events = sink.received.map((r) => JSON.parse(r.body));
    expect(events.map((e) => e.type)).toEqual(['message.created', 'message.created']);
    expect(events.map((e) => e.data.message_id)).toEqual(created.body.map((m: { id: string }) => m.id));
    expect(events[1].data).toEqual({ message_id: created.body[1].id, peer_id: 'bob', session_id: 's', workspace_id: ws });
  });

  it('delivers at once what a request queued, without waiting for the next poll', async () => {
    // the worker's first poll finds nothing; the next would be a minute later
    const { api, sink, ws } = await setup({ WORKER_POLL_MS: '60000' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    await api.get(`/v3/workspaces/${ws}/webhooks/test`); // queued outside a transaction
    await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages: [{ peer_id: 'alice', content: 'hi' }] }); // inside one
    await sink.waitFor(2);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(sink.received.map((r) => JSON.parse(r.body).type).sort()).toEqual(['message.created', 'test.event']);
  });

  it('retries a receiver that fails twice, then delivers once it recovers', async () => {
    const { api, sink, ws } = await setup();
    sink.answers = [500, 503];
    await api.get(`/v3/workspaces/${ws}/webhooks/test`);
    await sink.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(sink.received).toHaveLength(1);
    expect(sink.answers).toEqual([]);
  });

  it('sends the events of one write in one job, and after a refusal in the middle goes on from the refused event, none sent twice', async () => {
    const { api, sink, ws } = await setup();
    // the first event is taken, the second refused: the retry starts with the second
    sink.answers = [200, 500];
    const created = await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages: ['one', 'two', 'three', 'four'].map((content) => ({ peer_id: 'alice', content })) });
    expect(created.status).toBe(201);
    await sink.waitFor(4);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const messageId = (r: { body: string }) => JSON.parse(r.body).data.message_id as string;
    const ids = created.body.map((m: { id: string }) => m.id);
    expect(sink.received.map(messageId)).toEqual(ids);
    expect(sink.refused.map(messageId)).toEqual([ids[1]]);
    const jobs = await api.database.driver.all<{ id: string; attempts: number; last_error: string | null }>("SELECT id, attempts, last_error FROM jobs WHERE kind = 'webhook.deliver' AND workspace_id = ?", [ws]);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ attempts: 2, last_error: 'event 2 of 4: endpoint answered 500' });
  });

  it('a run past its time sends no more of its events, and leaves them for the next run', async () => {
    const sink = await startWebhookSink();
    cleanups.push(() => sink.close());
    sink.delayMs = 150;
    const store = { webhooks: { find: async () => ({ id: 'ep', workspaceId: 'w', url: sink.url, createdAt: new Date() }) } } as unknown as Store;
    const event = (n: number) => ({ eventId: `ev${n}`, event: { type: 'test.event' as const, data: { n }, timestamp: '2026-12-04T12:00:00Z' } });
    const payload = { endpointId: 'ep', events: [event(1), event(2), event(3)] };
    const abort = new AbortController();
    const running = deliverWebhook(payload, store, { secret: SECRET, timeoutMs: 5000, allowPrivate: true }, abort.signal);
    // the first request is at the receiver, not answered yet: the run's time is up
    while (sink.maxInFlight === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    abort.abort(new Error('timed out'));
    const outcome = await running;
    expect(outcome).toMatchObject({ kind: 'failed', retryable: true, payload: { endpointId: 'ep', events: [event(2), event(3)] } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sink.received.map((r) => JSON.parse(r.body).data.n)).toEqual([1]);
  });

  it('keeps deliveries to one endpoint in order while it retries', async () => {
    const { api, sink, ws } = await setup();
    sink.answers = [500];
    for (let i = 0; i < 3; i++) await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages: [{ peer_id: 'a', content: `m${i}` }] });
    await sink.waitFor(3);
    const ids = sink.received.map((r) => JSON.parse(r.body).data.message_id);
    const listed = await api.post(`/v3/workspaces/${ws}/sessions/s/messages/list`);
    expect(ids).toEqual(listed.body.items.map((m: { id: string }) => m.id));
  });

  it('sends one delivery at a time to an endpoint, and side by side with WEBHOOK_ORDERED=false', async () => {
    const messages = Array.from({ length: 6 }, (_, i) => ({ peer_id: 'a', content: `m${i}` }));
    for (const ordered of ['true', 'false'] as const) {
      const { api, sink, ws, worker } = await setup({ WEBHOOK_ORDERED: ordered });
      // each answer takes 300 ms: in order, the six take at least 1.8 s; side by side, several
      // are in flight at once (all six when the worker claims them within 300 ms, fewer on a
      // busy machine) and they take less
      sink.delayMs = 300;
      const started = Date.now();
      await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages });
      await sink.waitFor(6);
      const took = Date.now() - started;
      if (ordered === 'true') {
        expect(sink.maxInFlight, 'WEBHOOK_ORDERED=true').toBe(1);
        expect(took).toBeGreaterThanOrEqual(1800);
      } else {
        expect(sink.maxInFlight, 'WEBHOOK_ORDERED=false').toBeGreaterThan(1);
        expect(sink.maxInFlight).toBeLessThanOrEqual(6);
        expect(took).toBeLessThan(1800);
      }
      const contents = sink.received.map((r) => JSON.parse(r.body).data.message_id);
      expect(new Set(contents).size).toBe(6);
      // on PostgreSQL the test apps share a database: the next worker must be the only one
      await worker.stop(1000);
    }
  });

  it('deliveries take at most half of the worker\'s runs when model work runs beside them', async () => {
    const fake = await startFakeModelServer();
    cleanups.push(() => fake.close());
    const messages = Array.from({ length: 8 }, (_, i) => ({ peer_id: 'a', content: `m${i}` }));
    for (const [name, env, inFlight] of [['without a model', {}, 4], ['with a model', fake.env(), 2]] as const) {
      const { api, sink, ws, worker } = await setup({ WEBHOOK_ORDERED: 'false', WORKER_CONCURRENCY: '4', ...env });
      sink.delayMs = 150;
      await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages });
      await sink.waitFor(8);
      expect(sink.maxInFlight, name).toBe(inFlight);
      await worker.stop(1000);
    }
  });

  it('with WEBHOOK_ORDERED=false, a failing delivery does not hold back the later ones', async () => {
    const { api, sink, ws } = await setup({ WEBHOOK_ORDERED: 'false', JOB_RETRY_BASE_MS: '1000', JOB_RETRY_MAX_MS: '1000' });
    sink.answers = [500];
    for (let i = 0; i < 3; i++) await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages: [{ peer_id: 'a', content: `m${i}` }] });
    // the refused one is retried a second later; the other two arrive before it (unordered, they
    // run side by side: which of the three reaches the sink first, and is refused, is not fixed)
    await sink.waitFor(2);
    const listed = await api.post(`/v3/workspaces/${ws}/sessions/s/messages/list`);
    const ids: string[] = listed.body.items.map((m: { id: string }) => m.id);
    const messageId = (r: { body: string }) => JSON.parse(r.body).data.message_id as string;
    expect(sink.refused).toHaveLength(1);
    const refused = messageId(sink.refused[0]);
    expect(sink.received.map(messageId).sort()).toEqual(ids.filter((id) => id !== refused).sort());
    await sink.waitFor(3);
    expect(messageId(sink.received[2])).toBe(refused);
  });

  it('dead-letters after the configured attempts and stops delivering to a deleted endpoint', async () => {
    const { api, sink, ws } = await setup({ JOB_MAX_ATTEMPTS: '2' });
    sink.answers = [500, 500, 500];
    await api.get(`/v3/workspaces/${ws}/webhooks/test`);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(sink.received).toHaveLength(0);
    expect(sink.answers).toEqual([500]);

    const endpoint = (await api.get(`/v3/workspaces/${ws}/webhooks`)).body.items[0];
    sink.answers = [];
    await api.delete(`/v3/workspaces/${ws}/webhooks/${endpoint.id}`);
    await api.get(`/v3/workspaces/${ws}/webhooks/test`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sink.received).toHaveLength(0);
  });

  it('refuses private destinations unless allowed', async () => {
    const { api, sink, ws } = await setup({ WEBHOOK_ALLOW_PRIVATE_URLS: 'false', JOB_MAX_ATTEMPTS: '1' });
    await api.get(`/v3/workspaces/${ws}/webhooks/test`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // localhost resolves to a loopback address: never contacted
    expect(sink.received).toHaveLength(0);
    expect(sink.maxInFlight).toBe(0);
  });
});

describe('session purge', () => {
  it('removes a deleted session with its messages once the worker runs', async () => {
    const { api, ws } = await setup();
    await api.post(`/v3/workspaces/${ws}/sessions/gone/messages`, { messages: [{ peer_id: 'alice', content: 'bye' }] });
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/gone`)).status).toBe(202);
    const deadline = Date.now() + 5000;
    let sessions = (await api.post(`/v3/workspaces/${ws}/peers/alice/sessions`)).body;
    while (sessions.total > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      sessions = (await api.post(`/v3/workspaces/${ws}/peers/alice/sessions`)).body;
    }
    expect(sessions.total).toBe(0);
    expect((await api.post(`/v3/workspaces/${ws}/sessions/gone/messages/list`)).body.total).toBe(0);
    // the id is free again
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 'gone' })).status).toBe(201);
  });
});
