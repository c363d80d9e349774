import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { loadConfig } from '../../src/config/config.js';
import type { Worker } from '../../src/jobs/worker.js';
import { createWorker } from '../../src/runtime/runtime.js';
import { postgresBin, startThrowawayPostgres, type ThrowawayPostgres } from '../support/throwaway-postgres.js';
import { uniqueId } from '../support/test-app.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';
import { startFakeModelServer } from '../support/fake-model-server.js';

// A PostgreSQL server of this file's own is stopped and started under load, so the suite's
// shared server (DATABASE_URL) is never touched; the file runs the same in both suite runs.
const bin = postgresBin();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe.skipIf(bin === undefined)('PostgreSQL stopped and started again', () => {
  let pg: ThrowawayPostgres;
  let database: Database;
  let app: FastifyInstance;
  let base: string;
  let worker: Worker;
  let sink: WebhookSink;
  const workerLog: string[] = [];

  beforeAll(async () => {
    pg = await startThrowawayPostgres(bin!);
    const config = loadConfig(
      {
        DATABASE_URL: pg.url,
        LOG_LEVEL: 'silent',
        DATABASE_CONNECT_TIMEOUT_MS: '1000',
        WEBHOOK_SECRET: 'outage-secret',
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        WORKER_POLL_MS: '50',
        JOB_MAX_ATTEMPTS: '1',
      },
      '/nonexistent/.env',
    );
    database = await openDatabase(config.databaseUrl, { connectTimeoutMs: config.databaseConnectTimeoutMs });
    const record = (msg: string) => workerLog.push(msg);
    worker = createWorker(config, database, { info: (_o, msg) => record(msg), warn: (_o, msg) => record(msg), error: (_o, msg) => record(msg) });
    ({ app } = await buildApp({ config, database, logger: false, workers: () => worker.status() }));
    base = await app.listen({ port: 0, host: '127.0.0.1' });
    sink = await startWebhookSink();
  });

  afterAll(async () => {
    await worker?.stop(1000);
    await app?.close();
    await database?.driver.close();
    await sink?.close();
    await pg?.destroy();
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const started = performance.now();
    const response = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text), ms: performance.now() - started };
  };

  it('answers 503 fast while it is down, serves again by itself, and loses no acknowledged write', async () => {
    const ws = uniqueId();
    const messages = `/v3/workspaces/${ws}/sessions/s/messages`;
    expect((await call('POST', '/v3/workspaces', { id: ws })).status).toBe(201);

    // writers: batches of three messages, each tagged; a 2xx means the batch was acknowledged
    const acknowledged: string[] = [];
    const statuses = new Map<number | string, number>();
    const unavailable: { detail: unknown; retryAfter: string | null; ms: number }[] = [];
    let next = 0;
    let writing = true;
    let acknowledgedAfterRestart = 0;
    let restarted = false;
    const writer = async () => {
      while (writing) {
        const tag = `b${next++}`;
        const batch = ['one', 'two', 'three'].map((word, i) => ({ peer_id: i % 2 === 0 ? 'alice' : 'bob', content: `${tag} ${word}` }));
        const answer = await call('POST', messages, { messages: batch }).catch((error: Error) => ({ status: error.message, body: undefined, headers: new Headers(), ms: 0 }));
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.status === 201) {
          acknowledged.push(tag);
          if (restarted) acknowledgedAfterRestart++;
        } else if (answer.status === 503) {
          unavailable.push({ detail: answer.body?.detail, retryAfter: answer.headers.get('retry-after'), ms: answer.ms });
          await sleep(20);
        }
      }
    };
    const writers = [writer(), writer(), writer(), writer()];

    try {
      await until('writes before the stop', () => acknowledged.length >= 20);
      // a filtered list before the stop leaves a connection in the pool of filtered statements
      const filters = { filters: { id: 'alice' } };
      expect((await call('POST', `/v3/workspaces/${ws}/peers/list`, filters)).body).toMatchObject({ total: 1 });
      await pg.stop();
      await until('503 answers', () => unavailable.length >= 10);

      // while it is down: clear and fast 503s, readiness says the database is down, liveness is fine
      const write = await call('POST', messages, { messages: [{ peer_id: 'alice', content: 'while down' }] });
      expect(write.status).toBe(503);
      expect(write.body).toEqual({ detail: 'The database is unreachable; try again shortly' });
      expect(write.headers.get('retry-after')).toBe('5');
      expect(write.ms).toBeLessThan(2000);
      const read = await call('POST', `/v3/workspaces/${ws}/peers/list`);
      expect(read.status).toBe(503);
      const filtered = await call('POST', `/v3/workspaces/${ws}/peers/list`, filters);
      expect(filtered.status).toBe(503);
      expect(filtered.body).toEqual({ detail: 'The database is unreachable; try again shortly' });
      const ready = await call('GET', '/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.status).toBe('unavailable');
      expect(ready.body.checks.database).toMatchObject({ ok: false, dialect: 'postgres', error: 'The database is unreachable; try again shortly' });
      expect(ready.ms).toBeLessThan(2500);
      const health = await call('GET', '/health');
      expect(health).toMatchObject({ status: 200, body: { status: 'ok' } });

      await pg.start();
      restarted = true;
      await until('readiness after the restart', async () => (await call('GET', '/ready')).status === 200);
      await until('writes after the restart', () => acknowledgedAfterRestart >= 20);
      expect((await call('POST', `/v3/workspaces/${ws}/peers/list`, filters)).body).toMatchObject({ total: 1 });
    } finally {
      // a failed expectation must not leave the writers running into the next test
      writing = false;
      await Promise.all(writers);
    }

    // every 503 said why, promptly; nothing else failed (no 500, no dropped connection)
    expect([...statuses.keys()].sort()).toEqual([201, 503]);
    for (const answer of unavailable) {
      expect(answer.detail).toBe('The database is unreachable; try again shortly');
      expect(answer.retryAfter).toBe('5');
      expect(answer.ms).toBeLessThan(2000);
    }

    // every acknowledged batch is stored whole, and no batch is stored in part
    const stored: string[] = [];
    for (let page = 1; ; page++) {
      const list = await call('POST', `${messages}/list?size=100&page=${page}`);
      expect(list.status).toBe(200);
      stored.push(...list.body.items.map((m: { content: string }) => m.content));
      if (page >= list.body.pages) break;
    }
    const perBatch = new Map<string, number>();
    for (const content of stored) {
      const tag = content.split(' ')[0];
      perBatch.set(tag, (perBatch.get(tag) ?? 0) + 1);
    }
    expect(acknowledged.length).toBeGreaterThanOrEqual(40);
    for (const tag of acknowledged) expect(perBatch.get(tag), `batch ${tag}`).toBe(3);
    for (const [tag, count] of perBatch) expect(count, `batch ${tag}`).toBe(3);
    expect(stored).not.toContain('while down');
  });

  it('pauses the workers while it is down and delivers a queued webhook afterwards without spending an attempt', async () => {
    const ws = uniqueId();
    expect((await call('POST', '/v3/workspaces', { id: ws })).status).toBe(201);
    expect((await call('POST', `/v3/workspaces/${ws}/webhooks`, { url: sink.url })).status).toBe(201);
    expect((await call('GET', `/v3/workspaces/${ws}/webhooks/test`)).status).toBe(200);
    const delivered = sink.received.length;

    await pg.stop();
    worker.start();
    await until('the workers to pause', () => worker.status().state === 'paused');
    const ready = await call('GET', '/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.checks.workers).toMatchObject({ ok: false, state: 'paused' });
    await sleep(1500);
    expect(sink.received.length).toBe(delivered);
    // one line per change of state, not one per poll
    expect(workerLog.filter((line) => line === 'store unavailable: workers paused')).toHaveLength(1);

    await pg.start();
    await sink.waitFor(delivered + 1);
    await until('the job to be recorded as done', async () => {
      const job = await database.driver.get<{ status: string }>(`SELECT status FROM jobs WHERE workspace_id = ?`, [ws]);
      return job?.status === 'done';
    });
    // JOB_MAX_ATTEMPTS=1: a counted failed attempt would have dead-lettered it
    const job = await database.driver.get<{ attempts: number }>(`SELECT attempts FROM jobs WHERE workspace_id = ?`, [ws]);
    expect(job?.attempts).toBe(1);
    expect(workerLog.filter((line) => line === 'store available again: workers resumed')).toHaveLength(1);
    expect(worker.status().state).toBe('running');
    expect((await call('GET', '/ready')).body).toMatchObject({ status: 'ready', checks: { database: { ok: true }, workers: { ok: true, state: 'running' } } });
  });

  it('records a delivery that finished while it was down once it is back, without sending it twice', async () => {
    const ws = uniqueId();
    expect((await call('POST', '/v3/workspaces', { id: ws })).status).toBe(201);
    expect((await call('POST', `/v3/workspaces/${ws}/webhooks`, { url: sink.url })).status).toBe(201);
    const before = sink.received.length;
    sink.maxInFlight = 0;
    sink.delayMs = 1500;
    worker.start();
    expect((await call('GET', `/v3/workspaces/${ws}/webhooks/test`)).status).toBe(200);
    // the delivery is in flight: the database goes away before the worker can record it
    await until('the delivery to start', () => sink.maxInFlight >= 1);
    await pg.stop();
    await sink.waitFor(before + 1);
    sink.delayMs = 0;
    await until('the workers to pause', () => worker.status().state === 'paused');
    await pg.start();
    await until('the job to be recorded as done', async () => {
      const job = await database.driver.get<{ status: string }>(`SELECT status FROM jobs WHERE workspace_id = ?`, [ws]).catch(() => undefined);
      return job?.status === 'done';
    });
    const job = await database.driver.get<{ attempts: number }>(`SELECT attempts FROM jobs WHERE workspace_id = ?`, [ws]);
    expect(job?.attempts).toBe(1);
    await sleep(500);
    expect(sink.received.length).toBe(before + 1);
  });

  it('a streamed chat whose tool meets the database gone ends with its reason, and the chat is logged as an error', async () => {
    const fake = await startFakeModelServer();
    const logged: { level: number; msg: string }[] = [];
    const config = loadConfig({ DATABASE_URL: pg.url, LOG_LEVEL: 'silent', DATABASE_CONNECT_TIMEOUT_MS: '1000', ...fake.env() }, '/nonexistent/.env');
    const chatApp = (await buildApp({ config, database, logger: { level: 'info', stream: { write: (line: string) => logged.push(JSON.parse(line)) } } })).app;
    try {
      const ws = uniqueId();
      const url = await chatApp.listen({ port: 0, host: '127.0.0.1' });
      expect((await fetch(`${url}/v3/workspaces/${ws}/peers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'alice' }) })).status).toBe(201);
      // the model asks for a tool, late enough for the database to be stopped meanwhile
      fake.script.chat({ toolCalls: [{ name: 'search_memory', arguments: { query: 'tea' } }], delayMs: 2000 });
      const answer = fetch(`${url}/v3/workspaces/${ws}/peers/alice/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'what does alice drink?', stream: true }),
        signal: AbortSignal.timeout(15_000),
      });
      await until('the model to be asked', () => fake.requests('chat').length === 1);
      await pg.stop();
      try {
        const response = await answer;
        expect(response.status).toBe(200);
        const events = (await response.text()).split('\n\n').filter((event) => event !== '');
        const last = JSON.parse(events.at(-1)!.slice('data: '.length));
        expect(last).toMatchObject({ done: true, error: { message: expect.stringContaining('try again shortly') } });
        // the model was not told of the database: asked once only
        expect(fake.requests('chat')).toHaveLength(1);
        // pino's level (50, error) is not overwritten by the chat's reasoning level
        expect(logged).toContainEqual(expect.objectContaining({ level: 50, msg: 'chat', reasoningLevel: 'low', outcome: 'error', error: last.error.message }));
      } finally {
        await pg.start();
      }
    } finally {
      await chatApp.close();
      await fake.close();
    }
  });
});
