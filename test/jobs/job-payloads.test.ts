import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { createDomainContext } from '../../src/domain/context.js';
import { emitWebhookEvents } from '../../src/domain/follow-ups.js';
import { catalogOf, followUpHandlers, type JobCatalog } from '../../src/jobs/catalog.js';
import { Worker } from '../../src/jobs/worker.js';
import { migrate } from '../../src/storage/migrate.js';
import { openFreshDatabase, openUnmigratedDriver } from '../support/fresh-database.js';
import { DIALECT, TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';
import { DELIVER_WEBHOOK, PAYLOAD_READERS, PURGE_SESSION, WEBHOOK_EVENTS_PER_JOB } from '../../src/domain/job-kinds.js';

const readDeliverWebhookPayload = PAYLOAD_READERS[DELIVER_WEBHOOK];
const readPurgeSessionPayload = PAYLOAD_READERS[PURGE_SESSION];

/*
 * Job payloads are input too (a stored row may come from an older version or be damaged): each
 * kind's payload is read and checked when its job is claimed, and a payload that does not fit is
 * dead-lettered with the reason, never run. Webhook deliveries name their endpoint in the payload.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const LIMITS = { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 3 };

let database: Database;
beforeAll(async () => {
  database = await openDatabase(TEST_DATABASE_URL);
});
afterAll(() => database.driver.close());

const jobRow = (id: string) =>
  database.driver.get<{ status: string; last_error: string | null; attempts: number }>('SELECT status, last_error, attempts FROM jobs WHERE id = ?', [id]);

describe('payload readers', () => {
  const event = { type: 'test.event', data: { workspace_id: 'w' }, timestamp: '2026-11-24T08:00:00Z' };

  it('accept a webhook delivery with its endpoint and 1 to WEBHOOK_EVENTS_PER_JOB events (each an id and an event), and nothing less', () => {
    const second = { ...event, data: { n: 2 } };
    expect(readDeliverWebhookPayload({ endpointId: 'e1', events: [{ eventId: 'ev', event }, { eventId: 'ev2', event: second }] })).toEqual({
      endpointId: 'e1',
      events: [
        { eventId: 'ev', event },
        { eventId: 'ev2', event: second },
      ],
    });
    const many = Array.from({ length: WEBHOOK_EVENTS_PER_JOB }, (_, i) => ({ eventId: `ev${i}`, event }));
    expect(readDeliverWebhookPayload({ endpointId: 'e1', events: many })?.events).toHaveLength(WEBHOOK_EVENTS_PER_JOB);
    expect(readDeliverWebhookPayload({ endpointId: 'e1', events: [...many, { eventId: 'one-more', event }] })).toBeUndefined();
    expect(readDeliverWebhookPayload({ endpointId: 'e1', events: [] })).toBeUndefined();
    expect(readDeliverWebhookPayload({ endpointId: 'e1', events: [{ eventId: 'ev', event }, { eventId: 'ev2' }] })).toBeUndefined();
    expect(readDeliverWebhookPayload({ endpointId: 'e1', events: { eventId: 'ev', event } })).toBeUndefined();
    expect(readDeliverWebhookPayload({ events: [{ eventId: 'ev', event }] })).toBeUndefined();
    // a job queued before events were grouped: one event, read as a group of one
    expect(readDeliverWebhookPayload({ endpointId: 'e1', eventId: 'ev', event })).toEqual({ endpointId: 'e1', events: [{ eventId: 'ev', event }] });
    expect(readDeliverWebhookPayload({ eventId: 'ev', event })).toBeUndefined();
    expect(readDeliverWebhookPayload({ endpointId: 'e1', eventId: 'ev', event: { ...event, type: 'other' } })).toBeUndefined();
    expect(readDeliverWebhookPayload({ endpointId: 'e1', eventId: 'ev', event: { ...event, data: [] } })).toBeUndefined();
    expect(readDeliverWebhookPayload({ endpointId: 7, eventId: 'ev', event })).toBeUndefined();
    expect(readDeliverWebhookPayload({ endpointId: 'e1', eventId: '', event })).toBeUndefined();
  });

  it('accept a session purge with its session id only', () => {
    expect(readPurgeSessionPayload({ sessionId: 's' })).toEqual({ sessionId: 's' });
    expect(readPurgeSessionPayload({ sessionId: 1 })).toBeUndefined();
    expect(readPurgeSessionPayload({})).toBeUndefined();
  });
});

describe('the worker, on a payload that does not fit its kind', () => {
  it('dead-letters the job with the reason, logs it and never runs the handler', async () => {
    const kind = uniqueId('test.checked');
    let runs = 0;
    const warnings: string[] = [];
    const catalog: JobCatalog = {
      [kind]: {
        readPayload: (payload) => (typeof payload.n === 'number' ? { n: payload.n } : undefined),
        async run() {
          runs++;
          return { kind: 'done' };
        },
        timeoutMs: 1_000,
      },
    };
    const logger = { info: () => undefined, warn: (_o: object, msg: string) => warnings.push(msg), error: () => undefined };
    const worker = new Worker(database.store, catalog, { concurrency: 2, pollMs: 20, retryBaseMs: 10, retryMaxMs: 20, logger });
    const bad = uniqueId('job');
    const good = uniqueId('job');
    await database.store.jobs.enqueue(
      [
        { id: bad, kind, workspaceId: null, queueKey: uniqueId('q'), payload: { n: 'one' }, maxAttempts: 3 },
        { id: good, kind, workspaceId: null, queueKey: uniqueId('q'), payload: { n: 1 }, maxAttempts: 3 },
      ],
      new Date(),
    );
    worker.start();
    try {
      for (let i = 0; i < 250 && ((await jobRow(bad))?.status !== 'dead' || (await jobRow(good))?.status !== 'done'); i++) await sleep(20);
    } finally {
      await worker.stop(1_000);
    }
    const badRow = await jobRow(bad);
    expect(badRow?.status).toBe('dead');
    // not retried: one attempt, whatever the budget
    expect(Number(badRow?.attempts)).toBe(1);
    expect(badRow?.last_error).toBe(`invalid ${kind} payload: {"n":"one"}`);
    expect((await jobRow(good))?.status).toBe('done');
    expect(runs).toBe(1);
    expect(warnings).toContain('job dead-lettered');
  });

  it('dead-letters a webhook delivery or a purge whose payload is damaged', async () => {
    // a database of its own: this worker claims every delivery and purge it finds
    const own = await openFreshDatabase();
    const jobRow = (id: string) =>
      own.driver.get<{ status: string; last_error: string | null }>('SELECT status, last_error FROM jobs WHERE id = ?', [id]);
    const catalog = catalogOf(followUpHandlers({ secret: 's', timeoutMs: 1_000, allowPrivate: true }));
    const worker = new Worker(own.store, catalog, { concurrency: 2, pollMs: 20, retryBaseMs: 10, retryMaxMs: 20, logger: { info() {}, warn() {}, error() {} } });
    const ids = [uniqueId('job'), uniqueId('job')];
    await own.store.jobs.enqueue(
      [
        { id: ids[0], kind: DELIVER_WEBHOOK, workspaceId: null, queueKey: `webhook:${uniqueId()}`, payload: { eventId: 'e', event: {} }, maxAttempts: 3 },
        { id: ids[1], kind: PURGE_SESSION, workspaceId: null, queueKey: `purge:${uniqueId()}`, payload: { session: 's' }, maxAttempts: 3 },
      ],
      new Date(),
    );
    worker.start();
    try {
      for (let i = 0; i < 250 && !(await Promise.all(ids.map(jobRow))).every((row) => row?.status === 'dead'); i++) await sleep(20);
    } finally {
      await worker.stop(1_000);
    }
    const rows = await Promise.all(ids.map(jobRow));
    await own.close();
    expect(rows.map((row) => row?.status)).toEqual(['dead', 'dead']);
    expect(rows[0]?.last_error).toMatch(/^invalid webhook\.deliver payload: /);
    expect(rows[1]?.last_error).toBe('invalid session.purge payload: {"session":"s"}');
  });
});

describe('webhook deliveries', () => {
  it('carry their endpoint in the payload: one job per endpoint with its events in order, WEBHOOK_EVENTS_PER_JOB at most', async () => {
    const ws = uniqueId();
    const ctx = createDomainContext(database.store, LIMITS);
    const now = new Date();
    await database.store.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, now);
    const endpoints = ['https://a.example/hook', 'https://b.example/hook'];
    for (const url of endpoints) await database.store.webhooks.insert({ id: uniqueId('ep'), workspaceId: ws, url, createdAt: now });
    const endpointIds = await database.store.webhooks.ids(ws);
    expect(endpointIds).toHaveLength(2);

    // one more event than a job takes: two jobs an endpoint
    const count = WEBHOOK_EVENTS_PER_JOB + 1;
    const queued = await emitWebhookEvents(ctx, ws, Array.from({ length: count }, (_, i) => ({ type: 'test.event' as const, data: { n: i + 1 } })), now);
    expect(queued).toBe(4);
    const rows = await database.driver.all<{ id: string; queue_key: string; payload: unknown }>(
      'SELECT id, queue_key, payload FROM jobs WHERE workspace_id = ? ORDER BY pk',
      [ws],
    );
    const payloads = rows.map((row) => (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload));
    const [a, b] = endpointIds;
    expect(rows.map((row) => row.queue_key)).toEqual([a, a, b, b].map((id) => `webhook:${id}`));
    expect(payloads.map((p) => p.endpointId)).toEqual([a, a, b, b]);
    const numbers = (p: { events: { event: { data: { n: number } } }[] }) => p.events.map((e) => e.event.data.n);
    const all = Array.from({ length: count }, (_, i) => i + 1);
    expect(payloads.map(numbers)).toEqual([all.slice(0, -1), [count], all.slice(0, -1), [count]]);
    // one event id per event, shared by its endpoints (receivers drop duplicates by it)
    const ids = (p: { events: { eventId: string }[] }) => p.events.map((e) => e.eventId);
    expect(ids(payloads[2])).toEqual(ids(payloads[0]));
    expect(new Set([...ids(payloads[0]), ...ids(payloads[1])]).size).toBe(count);
    expect(rows[0].id).toBe(`${payloads[0].events[0].eventId}:${a}`);
    expect(payloads.every((p) => readDeliverWebhookPayload(p) !== undefined)).toBe(true);
    // not left for other files' workers on a shared database (the endpoints never answer)
    await database.driver.run('DELETE FROM jobs WHERE workspace_id = ?', [ws]);
  });

  it('queue nothing for a workspace without endpoints', async () => {
    const ctx = createDomainContext(database.store, LIMITS);
    const ws = uniqueId();
    expect(await emitWebhookEvents(ctx, ws, [{ type: 'test.event', data: {} }], new Date())).toBe(0);
    expect(await database.driver.get('SELECT id FROM jobs WHERE workspace_id = ?', [ws])).toBeUndefined();
  });
});

describe('migration 0014', () => {
  it('gives deliveries queued by an older version their endpoint from the queue key', async () => {
    const driver = await openUnmigratedDriver();
    try {
      await migrate(driver, { through: '0013_representation_counters' });
      const insert = `INSERT INTO jobs (id, kind, workspace_id, queue_key, payload, max_attempts, run_after, created_at) VALUES (?, ?, NULL, ?, ?, 3, ?, ?)`;
      const at = DIALECT === 'postgres' ? new Date() : Date.now() * 1000;
      const old = { eventId: 'ev', event: { type: 'test.event', data: {}, timestamp: '2026-11-24T08:00:00Z' } };
      await driver.run(insert, ['old', DELIVER_WEBHOOK, 'webhook:ep-1', JSON.stringify(old), at, at]);
      await driver.run(insert, ['other', PURGE_SESSION, 'purge:w', JSON.stringify({ sessionId: 's' }), at, at]);
      await migrate(driver);
      const payloads = Object.fromEntries(
        (await driver.all<{ id: string; payload: unknown }>('SELECT id, payload FROM jobs ORDER BY id')).map((row) => [
          row.id,
          typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload,
        ]),
      );
      expect(payloads.old).toEqual({ ...old, endpointId: 'ep-1' });
      expect(readDeliverWebhookPayload(payloads.old)).toEqual({ endpointId: 'ep-1', events: [old] });
      expect(payloads.other).toEqual({ sessionId: 's' });
    } finally {
      await driver.discard();
    }
  });
});
