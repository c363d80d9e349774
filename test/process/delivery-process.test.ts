import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { DIALECT, databaseForProcesses, uniqueId } from '../support/test-app.js';
import { startWebhookSink } from '../support/webhook-sink.js';

const dir = mkdtempSync(join(tmpdir(), 'engram-delivery-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const databaseUrl = databaseForProcesses(dir);

const env = {
  // read when a process starts (the database is made before the first test)
  get DATABASE_URL() {
    return databaseUrl();
  },
  WEBHOOK_SECRET: 'process-secret',
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  JOB_RETRY_BASE_MS: '50',
  JOB_RETRY_MAX_MS: '300',
  WORKER_POLL_MS: '20',
  WEBHOOK_TIMEOUT_MS: '1000',
};

async function call(server: ServerProcess, method: string, path: string, body?: unknown) {
  const response = await fetch(server.baseUrl + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function kill(server: ServerProcess): Promise<void> {
  server.child.kill('SIGKILL');
  await server.exited;
}

describe('webhook delivery across processes', { timeout: 90_000 }, () => {
  it('delivers every event after a SIGKILL mid-queue while the receiver was down', async () => {
    // reserve a port for the receiver, then take it down
    const probe = await startWebhookSink();
    const port = probe.port;
    await probe.close();

    const ws = uniqueId();
    const first = await startServerProcess(env);
    let messageIds: string[];
    try {
      await call(first, 'POST', '/v3/workspaces', { id: ws });
      expect((await call(first, 'POST', `/v3/workspaces/${ws}/webhooks`, { url: `http://localhost:${port}/hook` })).status).toBe(201);
      const created = await call(first, 'POST', `/v3/workspaces/${ws}/sessions/s/messages`, {
        messages: Array.from({ length: 10 }, (_, i) => ({ peer_id: 'a', content: `m${i}` })),
      });
      messageIds = created.body.map((m: { id: string }) => m.id);
      // let the worker fail a few attempts against the closed port
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      await kill(first);
    }

    const sink = await startWebhookSink(port);
    const second = await startServerProcess(env);
    try {
      await sink.waitFor(10, 30_000);
      const delivered = sink.received.map((r) => JSON.parse(r.body).data.message_id);
      expect(new Set(delivered)).toEqual(new Set(messageIds));
      // deliveries to one endpoint stay in order
      expect(delivered.slice(0, 10)).toEqual(messageIds);
    } finally {
      await kill(second);
      await sink.close();
    }
  });

  it.runIf(DIALECT === 'postgres')('two processes on one PostgreSQL never deliver one job twice at once', async () => {
    const ws = uniqueId();
    const sink = await startWebhookSink();
    sink.delayMs = 30;
    const a = await startServerProcess(env);
    const b = await startServerProcess(env);
    try {
      await call(a, 'POST', '/v3/workspaces', { id: ws });
      // five endpoints: five independent ordered queues the two processes share
      for (let i = 0; i < 5; i++) {
        expect((await call(a, 'POST', `/v3/workspaces/${ws}/webhooks`, { url: `${sink.url}?e=${i}` })).status).toBe(201);
      }
      for (let i = 0; i < 4; i++) {
        await call(i % 2 === 0 ? a : b, 'POST', `/v3/workspaces/${ws}/sessions/s/messages`, {
          messages: Array.from({ length: 5 }, (_, j) => ({ peer_id: 'p', content: `m${i}-${j}` })),
        });
      }
      await sink.waitFor(100, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const keys = sink.received.map((r) => `${r.headers['idempotency-key']}|${JSON.parse(r.body).data.message_id}`);
      expect(sink.received).toHaveLength(100);
      expect(new Set(keys).size).toBe(100 / 5);
      // per event and endpoint exactly one delivery: 20 events x 5 endpoints, no duplicate
      const perDelivery = new Set(sink.received.map((r) => `${r.headers['idempotency-key']}@${r.url}`));
      expect(perDelivery.size).toBe(100);
    } finally {
      await kill(a);
      await kill(b);
      await sink.close();
    }
  });
});
