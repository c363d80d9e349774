import type { Worker } from '../../src/jobs/worker.js';
import { createWorker } from '../../src/runtime/runtime.js';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startFakeModelServer, type FakeModelServer, type ScriptedAnswer } from './fake-model-server.js';
import { silent } from './polling.js';
import { buildTestApp, uniqueId, type TestApi } from './test-app.js';

/** What the reasoning tests share: an app on the fake model server, its worker, and a drain. */

/** The deriver's answer holding these facts. */
export const facts = (...contents: string[]): ScriptedAnswer => ({ json: { explicit: contents.map((content) => ({ content })) } });

/** Work runs at once and retries fast, so a test waits for nothing but the work itself. */
export const REASONING_TEST_ENV = { DERIVER_FLUSH_ENABLED: 'true', JOB_MAX_ATTEMPTS: '2', JOB_RETRY_BASE_MS: '10', JOB_RETRY_MAX_MS: '20', WORKER_POLL_MS: '20' };

export interface ReasoningSetup {
  api: TestApi;
  worker: Worker;
  ws: string;
}

/**
 * Apps made for one test (each on a database of its own, see buildTestApp's `ownDatabase`),
 * stopped by `stopAll` after it.
 */
export function reasoningApps(fake: () => FakeModelServer) {
  const open: ReasoningSetup[] = [];
  return {
    async start(env: Record<string, string> = {}): Promise<ReasoningSetup> {
      fake().reset();
      const api = await buildTestApp({ ...fake().env(), ...REASONING_TEST_ENV, ...env }, { ownDatabase: true });
      const made = { api, worker: createWorker(api.config, api.database, silent), ws: uniqueId() };
      open.push(made);
      return made;
    },
    async stopAll(): Promise<void> {
      for (const { api, worker } of open.splice(0)) {
        await worker.stop(1000);
        await api.close();
      }
    },
  };
}

/**
 * A test file's fake model server (started before its tests, closed after them) and its
 * reasoningApps (each test's stopped after it).
 */
export function reasoningSuite(): { fake: () => FakeModelServer; apps: ReturnType<typeof reasoningApps> } {
  let server: FakeModelServer | undefined;
  const fake = () => {
    if (server === undefined) throw new Error('the fake model server starts in beforeAll');
    return server;
  };
  beforeAll(async () => {
    server = await startFakeModelServer();
  });
  afterAll(() => server?.close());
  const apps = reasoningApps(fake);
  afterEach(() => apps.stopAll());
  return { fake, apps };
}

/**
 * Runs the worker until the workspace has no open reasoning items and no open reasoning jobs
 * (`allJobs`: no open job of any kind, webhook deliveries included).
 */
export async function drainWorkspace({ api, worker, ws }: ReasoningSetup, options: { allJobs?: boolean; timeoutMs?: number } = {}): Promise<void> {
  worker.start();
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  const kinds = options.allJobs === true ? '' : " AND kind LIKE 'reasoning.%'";
  for (;;) {
    const items = await api.database.store.reasoning.openItemCount(ws);
    const jobs = await api.database.driver.get<{ n: number | string }>(
      `SELECT count(*) AS n FROM jobs WHERE workspace_id = ?${kinds} AND status IN ('pending', 'running')`,
      [ws],
    );
    if (items === 0 && Number(jobs?.n ?? 0) === 0) return;
    if (Date.now() > deadline) throw new Error(`queue not drained: ${items} open items, ${jobs?.n} open jobs`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
