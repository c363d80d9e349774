import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, onTestFailed } from 'vitest';
import { openDatabase } from '../../src/runtime/database.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { databaseForProcesses, uniqueId } from '../support/test-app.js';

/*
 * `engram serve` as a child process, SIGKILLed right after a scope was given a session holding
 * many conclusions (its backfill queued, running or done: whichever it was), then started again:
 * the backfill completes and every conclusion has exactly one copy in the scope.
 */

const dir = mkdtempSync(join(tmpdir(), 'engram-scope-'));
const databaseUrl = databaseForProcesses(dir);
const base = () => ({ DATABASE_URL: databaseUrl(), WORKER_POLL_MS: '20', JOB_RETRY_BASE_MS: '20', JOB_RETRY_MAX_MS: '100', LOG_LEVEL: 'warn' });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function serve(): Promise<ServerProcess> {
  const server = await startServerProcess(base());
  onTestFailed(() => console.error(`engram serve, last output:\n${server.output().slice(-20_000)}`));
  return server;
}

async function call(server: ServerProcess, method: string, path: string, body?: unknown) {
  const response = await fetch(server.baseUrl + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

describe('a SIGKILL during a scope backfill', { timeout: 120_000 }, () => {
  it('is completed by the next process, with every conclusion copied once', async () => {
    const ws = uniqueId();
    const w = `/v3/workspaces/${ws}`;
    const first = await serve();
    const conclusions = 2000;
    try {
      expect((await call(first, 'POST', `${w}/sessions`, { id: 's1', peers: { alice: {} } })).status).toBe(201);
      expect((await call(first, 'POST', `${w}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'hello' }] })).status).toBe(201);
      for (let start = 0; start < conclusions; start += 100) {
        const batch = Array.from({ length: 100 }, (_, i) => ({ content: `alice fact ${start + i}`, observer_id: 'alice', observed_id: 'alice', session_id: 's1' }));
        expect((await call(first, 'POST', `${w}/conclusions`, { conclusions: batch })).status).toBe(201);
      }
      expect((await call(first, 'POST', `${w}/scopes`, { id: 'x' })).status).toBe(201);
      expect((await call(first, 'POST', `${w}/scopes/x/sessions`, { session_ids: ['s1'] })).status).toBe(204);
    } finally {
      first.child.kill('SIGKILL');
      await first.exited;
    }

    // a killed worker's lease runs out after the job's timeout: let that time pass
    const database = await openDatabase(databaseUrl(), { sqlite: { synchronous: 'FULL' }, connectTimeoutMs: 5_000 });
    try {
      const jobs = await database.driver.all<{ status: string }>("SELECT status FROM jobs WHERE workspace_id = ? AND kind = 'scope.backfill'", [ws]);
      expect(jobs).toHaveLength(1);
      await database.driver.run("UPDATE jobs SET locked_until = created_at WHERE workspace_id = ? AND status = 'running'", [ws]);
    } finally {
      await database.driver.close();
    }

    const second = await serve();
    try {
      const deadline = Date.now() + 60_000;
      let status: { body: { backfill_status: Record<string, { state: string; docs_copied?: number }> } };
      for (;;) {
        status = await call(second, 'GET', `${w}/scopes/x/status`);
        if (status.body.backfill_status.s1?.state === 'completed') break;
        if (Date.now() > deadline) throw new Error(`backfill not completed: ${JSON.stringify(status.body)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const copies = await call(second, 'POST', `${w}/conclusions/list?size=1`, { filters: { observer_id: 'scope.x', observed_id: 'alice' } });
      expect(copies.body.total).toBe(conclusions);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
    const check = await openDatabase(databaseUrl(), { connectTimeoutMs: 5_000 });
    try {
      const twice = await check.driver.all(
        'SELECT copied_from FROM conclusions WHERE workspace_id = ? AND observer_id = ? AND deleted_at IS NULL GROUP BY copied_from HAVING count(*) > 1',
        [ws, 'scope.x'],
      );
      expect(twice).toEqual([]);
    } finally {
      await check.driver.close();
    }
  });
});
