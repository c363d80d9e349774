import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { reasoningRuntime } from '../../src/runtime/runtime.js';
import { createDomainContext } from '../../src/domain/context.js';

import { catalogOf } from '../../src/jobs/catalog.js';
import { reasoningHandlers } from '../../src/jobs/reasoning-jobs.js';
import { buildModels } from '../../src/llm/models.js';
import { createWorker } from '../../src/runtime/runtime.js';
import { startFakeModelServer, type FakeModelServer } from '../support/fake-model-server.js';
import { runCli, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { buildTestApp, databaseForProcesses, uniqueId } from '../support/test-app.js';
import { facts } from '../support/reasoning-harness.js';
import { silent } from '../support/polling.js';
import { REPRESENT } from '../../src/domain/job-kinds.js';

/*
 * `engram derive` and `engram serve` as child processes on a database file (or the suite's
 * PostgreSQL), with the fake model server answering: messages written with no model are derived
 * later, and a SIGKILL while the model answers loses no work and stores nothing twice.
 */

const dir = mkdtempSync(join(tmpdir(), 'engram-derive-'));
// a database of the file's own (on PostgreSQL too): the processes' workers meet only this file's jobs
const databaseUrl = databaseForProcesses(dir);
const base = () => ({ DATABASE_URL: databaseUrl(), WORKER_POLL_MS: '20', JOB_RETRY_BASE_MS: '20', JOB_RETRY_MAX_MS: '100', LOG_LEVEL: 'warn' });

let fake: FakeModelServer;
beforeAll(async () => {
  fake = await startFakeModelServer();
});
afterAll(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The environment without any model setting the suite's own environment might hold. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!/^(LLM_|EMBEDDING_|DERIVER_|SUMMARY_|DIALECTIC_|DREAM_)/.test(key)) env[key] = value;
  return { ...env, ...extra };
}

const cli = (args: string[], env: Record<string, string>) => runCli(args, cleanEnv(env));

async function serve(env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServerProcess({ ...base(), ...env });
  // what the server logged, to read a failure by
  onTestFailed(() => console.error(`engram serve, last output:\n${server.output().slice(-20_000)}`));
  return server;
}

async function call(server: ServerProcess, method: string, path: string, body?: unknown) {
  const response = await fetch(server.baseUrl + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function stop(server: ServerProcess, signal: NodeJS.Signals): Promise<void> {
  server.child.kill(signal);
  await server.exited;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits until the queue status shows every unit of the workspace finished. */
async function drained(server: ServerProcess, ws: string) {
  return until('the queue to drain', async () => {
    const { body } = await call(server, 'GET', `/v3/workspaces/${ws}/queue/status`);
    return body.total_work_units > 0 && body.pending_work_units === 0 && body.in_progress_work_units === 0 ? body : undefined;
  });
}

async function conclusions(server: ServerProcess, ws: string, observer: string, observed: string): Promise<string[]> {
  const page = await call(server, 'POST', `/v3/workspaces/${ws}/conclusions/list?size=100`, { filters: { observer_id: observer, observed_id: observed } });
  expect(page.status).toBe(200);
  return (page.body.items as { content: string }[]).map((c) => c.content).sort();
}

describe('engram derive', { timeout: 120_000 }, () => {
  it('queues messages stored with no model once one is configured; a server then forms their conclusions', async () => {
    const ws = uniqueId();
    const plain = await serve({});
    try {
      const sent = await call(plain, 'POST', `/v3/workspaces/${ws}/sessions/s1/messages`, {
        messages: [
          { peer_id: 'alice', content: 'I live in Porto' },
          { peer_id: 'alice', content: 'and I cycle to work' },
        ],
      });
      expect(sent.status).toBe(201);
      expect((await call(plain, 'GET', `/v3/workspaces/${ws}/queue/status`)).body.total_work_units).toBe(0);
    } finally {
      await stop(plain, 'SIGTERM');
    }

    const noModel = await cli(['derive', '--workspace', ws], base());
    expect(noModel.code).toBe(2);
    expect(noModel.stderr).toContain('engram: derive needs a deriver model; reasoning off');
    expect((await cli(['derive', '--session', 's1'], base())).code).toBe(2);

    fake.reset();
    fake.script.defaultChat(facts('alice lives in Porto', 'alice cycles to work'));
    const withModel = { ...base(), ...fake.env(), DERIVER_FLUSH_ENABLED: 'true' };
    const derived = await cli(['derive', '--workspace', ws, '--session', 's1'], withModel);
    expect(derived.stderr).toBe('');
    expect(derived.code).toBe(0);
    expect(derived.stdout).toContain(`queued 2 representation items in session s1`);
    // nothing twice
    expect((await cli(['derive', '--workspace', ws], withModel)).stdout).toContain('queued 0 representation items');
    expect(fake.requests('chat')).toHaveLength(0);

    const server = await serve(withModel);
    try {
      const status = await drained(server, ws);
      expect(status).toMatchObject({ total_work_units: 2, completed_work_units: 2 });
      expect(await conclusions(server, ws, 'alice', 'alice')).toEqual(['alice cycles to work', 'alice lives in Porto']);
      expect(fake.requests('chat')).toHaveLength(1);
    } finally {
      await stop(server, 'SIGTERM');
    }
  });
});

describe('a SIGKILL in the middle of a batch', { timeout: 120_000 }, () => {
  it('loses no work and stores no conclusion twice', async () => {
    const ws = uniqueId();
    fake.reset();
    // the first answer comes too late: the server is killed while it waits
    fake.script.chat({ ...facts('alice has a dog', 'alice lives in Lisbon'), delayMs: 10_000 });
    fake.script.defaultChat(facts('alice has a dog', 'alice lives in Lisbon'));
    const env = { ...fake.env(), DERIVER_FLUSH_ENABLED: 'true' };
    const first = await serve(env);
    try {
      expect((await call(first, 'POST', `/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {}, bob: { observe_others: true } })).status).toBe(200);
      const sent = await call(first, 'POST', `/v3/workspaces/${ws}/sessions/s1/messages`, {
        messages: [
          { peer_id: 'alice', content: 'My dog and I just moved to Lisbon' },
          { peer_id: 'alice', content: 'He likes the beach' },
          { peer_id: 'alice', content: 'So do I' },
        ],
      });
      expect(sent.status).toBe(201);
      await until('the model call', async () => (fake.requests('chat').length > 0 ? true : undefined));
      expect((await call(first, 'GET', `/v3/workspaces/${ws}/queue/status`)).body).toMatchObject({ total_work_units: 3, in_progress_work_units: 3 });
    } finally {
      await stop(first, 'SIGKILL');
    }

    // the killed worker's lease would run out after the job's timeout (minutes): let that time pass
    const database: Database = await openDatabase(databaseUrl(), { sqlite: { synchronous: 'FULL' }, connectTimeoutMs: 5_000 });
    try {
      const held = await database.driver.all<{ status: string }>("SELECT status FROM jobs WHERE workspace_id = ? AND kind = 'reasoning.represent'", [ws]);
      expect(held.map((job) => job.status)).toEqual(['running']);
      expect(await database.store.reasoning.openItemCount(ws)).toBe(3);
      await database.driver.run("UPDATE jobs SET locked_until = created_at WHERE workspace_id = ? AND status = 'running'", [ws]);
    } finally {
      await database.driver.close();
    }

    const second = await serve(env);
    try {
      expect(await drained(second, ws)).toMatchObject({ total_work_units: 3, completed_work_units: 3 });
      for (const observer of ['alice', 'bob']) expect(await conclusions(second, ws, observer, 'alice')).toEqual(['alice has a dog', 'alice lives in Lisbon']);
      // the batch was asked again once, as a whole
      expect(fake.requests('chat')).toHaveLength(2);
      expect(fake.requests('chat')[1].body.messages[0].content).toContain('alice: So do I');
    } finally {
      await stop(second, 'SIGTERM');
    }
  });
});

describe('a SIGTERM while the deriver waits on the model', { timeout: 120_000 }, () => {
  it('finishes the batch, and the workspace statistics count its model call', async () => {
    const ws = uniqueId();
    fake.reset();
    // the answer comes once the server is stopping: after the app's close wrote the usage it had
    let answer!: () => void;
    fake.script.chat({ ...facts('alice has a cat'), until: new Promise<void>((resolve) => (answer = resolve)) });
    const server = await serve({ ...fake.env(), DERIVER_FLUSH_ENABLED: 'true', LOG_LEVEL: 'info' });
    let stopped: Promise<void> | undefined;
    try {
      expect((await call(server, 'POST', `/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'My cat sleeps all day' }] })).status).toBe(201);
      await until('the model call', async () => (fake.requests('chat').length > 0 ? true : undefined));
      stopped = stop(server, 'SIGTERM');
      await until('the app to close', async () => (/shutting down/.test(server.output()) ? true : undefined));
      await new Promise((resolve) => setTimeout(resolve, 300));
      answer();
      await stopped;
    } finally {
      answer();
      await (stopped ?? stop(server, 'SIGTERM'));
    }
    expect(server.output()).toMatch(/"msg":"stopped"/);

    const plain = await serve({});
    try {
      expect(await conclusions(plain, ws, 'alice', 'alice')).toEqual(['alice has a cat']);
      const statistics = await call(plain, 'GET', `/v3/workspaces/${ws}/statistics?hours=1`);
      expect(statistics.status).toBe(200);
      const deriver = (statistics.body.model_usage.modules as { module: string; calls: number }[]).filter((row) => row.module === 'deriver');
      expect(deriver.reduce((sum, row) => sum + row.calls, 0)).toBe(1);
    } finally {
      await stop(plain, 'SIGTERM');
    }
  });
});

describe('a rerun after the batch was written but before its job was marked done', () => {
  it('finds the items processed and asks and stores nothing again', async () => {
    fake.reset();
    fake.script.defaultChat(facts('alice has a dog'));
    const api = await buildTestApp({ ...fake.env(), DERIVER_FLUSH_ENABLED: 'true', WORKER_POLL_MS: '20' }, { ownDatabase: true });
    const worker = createWorker(api.config, api.database, silent);
    const ws = uniqueId();
    try {
      const store = api.database.store;
      await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {}, bob: { observe_others: true } });
      await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I have a dog' }] });
      // this workspace's job, with a short lease (others' jobs, on a shared database, go back)
      const now = new Date();
      const claimed = await store.jobs.claim(50, now, new Date(now.getTime() + 200), REPRESENT);
      for (const other of claimed.filter((job) => job.workspaceId !== ws)) await store.jobs.release(other.id);
      const job = claimed.find((candidate) => candidate.workspaceId === ws)!;
      expect(job).toBeDefined();
      const ctx = createDomainContext(store, { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 3 }, undefined, reasoningRuntime(api.config, buildModels(api.config.models)));
      const handler = catalogOf(reasoningHandlers(ctx, { concurrency: 1 }))[REPRESENT];
      expect(await handler.run(handler.readPayload(job.payload), job, store, new AbortController().signal)).toEqual({ kind: 'done' });
      // the process dies here: the batch is committed, the job is still running; its lease runs out
      await new Promise((resolve) => setTimeout(resolve, 300));
      worker.start();
      const row = await until('the rerun', async () => {
        const found = await api.database.driver.get<{ status: string; attempts: number | string }>('SELECT status, attempts FROM jobs WHERE id = ?', [job.id]);
        return found?.status === 'done' ? found : undefined;
      });
      expect(Number(row.attempts)).toBe(2);
      expect(fake.requests('chat')).toHaveLength(1);
      for (const observer of ['alice', 'bob']) {
        const page = await api.post(`/v3/workspaces/${ws}/conclusions/list`, { filters: { observer_id: observer, observed_id: 'alice' } });
        expect(page.body.items.map((c: { content: string }) => c.content)).toEqual(['alice has a dog']);
      }
    } finally {
      await worker.stop(1000);
      await api.close();
    }
  });
});
