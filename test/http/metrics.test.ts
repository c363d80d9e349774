import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/free-port.js';
import { startServerProcess, startWorkerProcess } from '../support/server-process.js';
import { buildTestApp, databaseForProcesses, DIALECT, uniqueId, type TestApi } from '../support/test-app.js';
import { startWebhookSink } from '../support/webhook-sink.js';

describe('GET /metrics', () => {
  let on: TestApi;
  let off: TestApi;
  beforeAll(async () => {
    on = await buildTestApp({ METRICS_ENABLED: 'true' });
    off = await buildTestApp();
  });
  afterAll(async () => {
    await on.close();
    await off.close();
  });

  it('is a plain-text 404 when metrics are disabled', async () => {
    const response = await off.get('/metrics');
    expect(response.status).toBe(404);
    expect(response.text).toBe('Metrics are disabled');
    expect(String(response.headers['content-type'])).toMatch(/^text\/plain/);
  });

  it('counts requests per route pattern and status, with latencies and queue depth', async () => {
    const ws = uniqueId();
    await on.post(`/v3/workspaces/${ws}/peers/list`);
    await on.post(`/v3/workspaces/${ws}/peers/list`);
    await on.post(`/v3/workspaces/${ws}/peers/list?page=0`);
    const text = (await on.get('/metrics')).text;
    expect(text).toContain('engram_http_requests_total{method="POST",route="/v3/workspaces/:workspace_id/peers/list",status="200"} 2');
    expect(text).toContain('engram_http_requests_total{method="POST",route="/v3/workspaces/:workspace_id/peers/list",status="422"} 1');
    expect(text).toMatch(/engram_http_request_duration_seconds_count\{method="POST",route="\/v3\/workspaces\/:workspace_id\/peers\/list"\} 3/);
    // the open and dead-lettered jobs; not the finished ones kept (a day's worth)
    expect(text.match(/^engram_queue_jobs\{status="(\w+)"\} \d+$/gm)?.map((line) => /"(\w+)"/.exec(line)![1])).toEqual(['pending', 'running', 'dead']);
    expect(text).not.toContain(ws);
  });

  it('counts the searches that took their turn and the time they waited (SQLite; none on PostgreSQL)', async () => {
    const counted = async () => {
      const text = (await on.get('/metrics')).text;
      const turns = /^engram_search_turns_total (\S+)$/m.exec(text);
      const waited = /^engram_search_turn_wait_seconds_total (\S+)$/m.exec(text);
      expect(turns, text.slice(0, 200)).not.toBeNull();
      expect(waited).not.toBeNull();
      return { turns: Number(turns![1]), waited: Number(waited![1]) };
    };
    const before = await counted();
    const ws = uniqueId();
    expect((await on.post(`/v3/workspaces/${ws}/search`, { query: 'kayak' })).status).toBe(200);
    const after = await counted();
    expect(after.turns - before.turns).toBe(DIALECT === 'sqlite' ? 1 : 0);
    expect(after.waited).toBeGreaterThanOrEqual(before.waited);
  });

  it('counts the open jobs by kind', async () => {
    const kind = uniqueId('test.metrics');
    // not due for an hour: nothing claims them meanwhile
    const job = () => ({ id: uniqueId('job'), kind, workspaceId: null, queueKey: uniqueId('q'), payload: {}, maxAttempts: 1, runAfter: new Date(Date.now() + 3_600_000) });
    await on.database.store.jobs.enqueue([job(), job()], new Date());
    const text = (await on.get('/metrics')).text;
    expect(text).toContain(`engram_queue_open_jobs{kind="${kind}",status="pending"} 2`);
    expect(text).not.toContain(`engram_queue_open_jobs{kind="${kind}",status="running"}`);
  });
});

describe('GET /metrics of a server with its worker', () => {
  const dir = mkdtempSync(join(tmpdir(), 'engram-metrics-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const databaseUrl = databaseForProcesses(dir);

  /** A workspace with a webhook to `url`, and one message: one delivery to make. */
  async function oneEvent(base: string, url: string): Promise<void> {
    const post = (path: string, body: unknown) => fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const ws = uniqueId();
    expect((await post('/v3/workspaces', { id: ws })).status).toBe(201);
    expect((await post(`/v3/workspaces/${ws}/webhooks`, { url })).status).toBe(201);
    expect((await post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages: [{ peer_id: 'p', content: 'hello' }] })).status).toBe(201);
  }

  it('counts the background job attempts by kind and outcome, with their times', { timeout: 60_000 }, async () => {
    const sink = await startWebhookSink();
    // the first delivery fails (retried), the next one lands
    sink.answers.push(500);
    const server = await startServerProcess({
      DATABASE_URL: databaseUrl(),
      METRICS_ENABLED: 'true',
      WEBHOOK_SECRET: 'metrics-secret',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      WORKER_POLL_MS: '20',
      JOB_RETRY_BASE_MS: '20',
      JOB_RETRY_MAX_MS: '40',
    });
    try {
      await oneEvent(server.baseUrl, sink.url);
      await sink.waitFor(1, 20_000);
      let text = '';
      const done = 'engram_job_attempts_total{kind="webhook.deliver",outcome="done"} 1';
      for (let i = 0; i < 100 && !text.includes(done); i++) {
        text = await (await fetch(`${server.baseUrl}/metrics`)).text();
        if (!text.includes(done)) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(text).toContain(done);
      expect(text).toContain('engram_job_attempts_total{kind="webhook.deliver",outcome="retried"} 1');
      expect(text).toMatch(/^engram_job_duration_seconds_count\{kind="webhook\.deliver"\} 2$/m);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
      await sink.close();
    }
  });

  it('a standalone engram worker serves its own job attempts, model calls and process metrics on its port', { timeout: 60_000 }, async () => {
    const sink = await startWebhookSink();
    sink.answers.push(500);
    const common = {
      DATABASE_URL: databaseUrl(),
      WEBHOOK_SECRET: 'metrics-secret',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      WORKER_POLL_MS: '20',
      JOB_RETRY_BASE_MS: '20',
      JOB_RETRY_MAX_MS: '40',
    };
    // without METRICS_ENABLED a worker opens no port
    const quietPort = await freePort();
    const quiet = await startWorkerProcess({ ...common, PORT: String(quietPort) });
    try {
      await expect(fetch(`http://127.0.0.1:${quietPort}/metrics`)).rejects.toThrow();
    } finally {
      quiet.child.kill('SIGTERM');
      await quiet.exited;
    }
    // the API without workers, and one worker: every delivery is its
    const server = await startServerProcess({ ...common, RUN_WORKERS: 'false', METRICS_ENABLED: 'true' });
    const port = await freePort();
    const worker = await startWorkerProcess({ ...common, METRICS_ENABLED: 'true', PORT: String(port) });
    try {
      const base = `http://127.0.0.1:${port}`;
      expect(worker.output()).toContain(`"metrics":"${base}/metrics"`);
      await oneEvent(server.baseUrl, sink.url);
      await sink.waitFor(1, 20_000);
      let text = '';
      const done = 'engram_job_attempts_total{kind="webhook.deliver",outcome="done"} 1';
      for (let i = 0; i < 100 && !text.includes(done); i++) {
        text = await (await fetch(`${base}/metrics`)).text();
        if (!text.includes(done)) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(text).toContain(done);
      expect(text).toContain('engram_job_attempts_total{kind="webhook.deliver",outcome="retried"} 1');
      expect(text).toMatch(/^# TYPE engram_model_calls_total counter$/m);
      expect(text).toMatch(/^engram_process_cpu_user_seconds_total \d/m);
      // not the server's: no HTTP requests, no queue depth (the servers read that)
      expect(text).not.toContain('engram_http_requests_total');
      expect(text).not.toContain('engram_queue_jobs');
      // and the server, which ran no job, counted none
      const served = await fetch(`${server.baseUrl}/metrics`);
      expect(served.status).toBe(200);
      expect(await served.text()).not.toContain('engram_job_attempts_total{');
      expect((await fetch(`${base}/health`)).status).toBe(200);
      expect((await fetch(`${base}/other`)).status).toBe(404);
    } finally {
      for (const child of [worker, server]) child.child.kill('SIGTERM');
      await Promise.all([worker.exited, server.exited]);
      await sink.close();
    }
  });
});
