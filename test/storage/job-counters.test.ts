import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';

import { migrate } from '../../src/storage/migrate.js';
import type { SqlDriver } from '../../src/storage/sql/driver.js';
import type { NewJob } from '../../src/storage/store.js';
import { openUnmigratedDriver } from '../support/fresh-database.js';
import { DIALECT, TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';
import { DREAM, DREAM_AUTO, SUMMARIZE } from '../../src/domain/job-kinds.js';

/*
 * The finished summary and dream jobs are counted per queue and hour as they finish (migrations
 * 0018 and 0027), so
 * queue status never reads the finished jobs kept for a day: each job once, done or dead, only
 * the counted kinds, and only while its workspace (and a summary's session) exists.
 */

const at = () => (DIALECT === 'postgres' ? new Date() : Date.now() * 1000);

async function addWorkspace(driver: SqlDriver, ws: string, sessions: string[]): Promise<void> {
  await driver.run('INSERT INTO workspaces (id, created_at) VALUES (?, ?)', [ws, at()]);
  for (const id of sessions) await driver.run('INSERT INTO sessions (workspace_id, id, created_at) VALUES (?, ?, ?)', [ws, id, at()]);
}

async function counters(driver: SqlDriver, ws: string) {
  const rows = await driver.all<{ kind: string; queue_key: string; session_id: string | null; completed: number | string; failed: number | string }>(
    'SELECT kind, queue_key, session_id, completed, failed FROM job_counters WHERE workspace_id = ? ORDER BY kind, queue_key',
    [ws],
  );
  return rows.map((row) => ({ ...row, completed: Number(row.completed), failed: Number(row.failed) }));
}

const summaryKey = (ws: string, session: string) => `summary:${ws}:${session}`;
const dreamKey = (ws: string) => `dream:${JSON.stringify([ws, 'alice', 'alice'])}`;

describe('job counters', () => {
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase(TEST_DATABASE_URL);
  });
  afterAll(() => database.driver.close());

  it('count each summary and dream job once as it finishes, done or dead, and no other kind', async () => {
    const { driver, store } = database;
    const ws = uniqueId();
    await addWorkspace(driver, ws, ['s1']);
    const job = (kind: string, queueKey: string): NewJob => ({ id: uniqueId('job'), kind, workspaceId: ws, queueKey, payload: {}, maxAttempts: 3 });
    const jobs = [job(SUMMARIZE, summaryKey(ws, 's1')), job(SUMMARIZE, summaryKey(ws, 's1')), job(DREAM, dreamKey(ws)), job(DREAM_AUTO, dreamKey(ws)), job('webhook.deliver', `webhook:${ws}`)];
    const now = new Date();
    await store.jobs.enqueue(jobs, now);
    const [first, second, dream, auto, other] = jobs.map((j) => j.id);
    // retried, given back, then done; done again (a worker whose lease ran out) counts nothing more
    await store.jobs.retry(first, now, 'try again');
    await store.jobs.release(first);
    expect(await counters(driver, ws)).toEqual([]);
    await store.jobs.complete(first, now);
    await store.jobs.complete(first, now);
    await store.jobs.deadLetter(second, now, 'failed');
    await store.jobs.complete(dream, now);
    await store.jobs.deadLetter(auto, now, 'failed');
    await store.jobs.complete(other, now);
    expect(await counters(driver, ws)).toEqual([
      { kind: DREAM, queue_key: dreamKey(ws), session_id: null, completed: 1, failed: 0 },
      { kind: DREAM_AUTO, queue_key: dreamKey(ws), session_id: null, completed: 0, failed: 1 },
      { kind: SUMMARIZE, queue_key: summaryKey(ws, 's1'), session_id: 's1', completed: 1, failed: 1 },
    ]);

    // a summary of a session deleted meanwhile has nothing to count in; its session's counters went with it
    const late = job(SUMMARIZE, summaryKey(ws, 's1'));
    await store.jobs.enqueue([late], now);
    await driver.run('DELETE FROM sessions WHERE workspace_id = ? AND id = ?', [ws, 's1']);
    await store.jobs.complete(late.id, now);
    expect((await counters(driver, ws)).map((row) => row.kind)).toEqual([DREAM, DREAM_AUTO]);
    // and a job of a deleted workspace
    const orphan = job(DREAM, dreamKey(ws));
    await store.jobs.enqueue([orphan], now);
    await driver.run('DELETE FROM workspaces WHERE id = ?', [ws]);
    await store.jobs.complete(orphan.id, now);
    expect(await counters(driver, ws)).toEqual([]);
  });

  it('start from the finished jobs an older version kept, when the migration runs', async () => {
    const driver = await openUnmigratedDriver();
    try {
      await migrate(driver, { through: '0017_job_claim_by_kind' });
      const ws = 'w1';
      await addWorkspace(driver, ws, ['s1']);
      let n = 0;
      const insert = (kind: string, workspaceId: string | null, queueKey: string, status: string) =>
        driver.run('INSERT INTO jobs (id, kind, workspace_id, queue_key, status, max_attempts, run_after, created_at) VALUES (?, ?, ?, ?, ?, 3, ?, ?)', [
          `j${++n}`,
          kind,
          workspaceId,
          queueKey,
          status,
          at(),
          at(),
        ]);
      await insert(SUMMARIZE, ws, summaryKey(ws, 's1'), 'done');
      await insert(SUMMARIZE, ws, summaryKey(ws, 's1'), 'done');
      await insert(SUMMARIZE, ws, summaryKey(ws, 's1'), 'dead');
      await insert(SUMMARIZE, ws, summaryKey(ws, 's1'), 'pending');
      await insert(SUMMARIZE, ws, summaryKey(ws, 'deleted'), 'done');
      await insert(DREAM_AUTO, ws, dreamKey(ws), 'done');
      await insert('webhook.deliver', ws, 'webhook:e1', 'done');
      await insert(DREAM, 'gone', dreamKey('gone'), 'done');
      await migrate(driver);
      expect(await counters(driver, ws)).toEqual([
        { kind: DREAM_AUTO, queue_key: dreamKey(ws), session_id: null, completed: 1, failed: 0 },
        { kind: SUMMARIZE, queue_key: summaryKey(ws, 's1'), session_id: 's1', completed: 2, failed: 1 },
      ]);
      expect(await counters(driver, 'gone')).toEqual([]);
    } finally {
      await driver.discard();
    }
  });

  it('count a job in the hour it finished in, and the counters kept before hours were counted in the hour of the migration', async () => {
    const { driver, store } = database;
    const ws = uniqueId();
    await addWorkspace(driver, ws, ['s1']);
    const jobs = [0, 1, 2].map((): NewJob => ({ id: uniqueId('job'), kind: SUMMARIZE, workspaceId: ws, queueKey: summaryKey(ws, 's1'), payload: {}, maxAttempts: 3 }));
    const hourAt = (hour: number, minute: number) => new Date((hour * 60 + minute) * 60_000);
    // an hour in 1970: the oldest counters of a database other tests share, the first purged
    const hour = 1_000;
    await store.jobs.enqueue(jobs, hourAt(hour, 0));
    await store.jobs.complete(jobs[0].id, hourAt(hour, 1));
    await store.jobs.deadLetter(jobs[1].id, hourAt(hour, 59), 'failed');
    await store.jobs.complete(jobs[2].id, hourAt(hour + 1, 0));
    const rows = await driver.all<{ hour: number | string; completed: number | string; failed: number | string }>(
      'SELECT hour, completed, failed FROM job_counters WHERE workspace_id = ? ORDER BY hour',
      [ws],
    );
    expect(rows.map((row) => [Number(row.hour), Number(row.completed), Number(row.failed)])).toEqual([
      [hour, 1, 1],
      [hour + 1, 1, 0],
    ]);
    // the finished work's counters of hours before the given time's are purged, in batches
    expect(await store.jobs.purgeCounters(hourAt(hour + 1, 30), 1)).toBe(1);
    expect((await counters(driver, ws)).map((row) => row.completed)).toEqual([1]);

    const old = await openUnmigratedDriver();
    try {
      await migrate(old, { through: '0026_session_members_version' });
      await addWorkspace(old, 'w1', ['s1']);
      await old.run('INSERT INTO job_counters (workspace_id, kind, queue_key, session_id, completed, failed) VALUES (?, ?, ?, ?, 4, 1)', ['w1', SUMMARIZE, summaryKey('w1', 's1'), 's1']);
      await old.run('INSERT INTO representation_counters (workspace_id, session_id, observed_id, observers, completed, failed) VALUES (?, ?, ?, ?, 7, 2)', ['w1', 's1', 'alice', '["alice"]']);
      const before = Math.floor(Date.now() / 3_600_000);
      await migrate(old);
      const after = Math.floor(Date.now() / 3_600_000);
      const kept = await old.all<{ hour: number | string; completed: number | string; failed: number | string }>(
        'SELECT hour, completed, failed FROM job_counters UNION ALL SELECT hour, completed, failed FROM representation_counters',
      );
      expect(kept.map((row) => [Number(row.completed), Number(row.failed)]).sort()).toEqual([
        [4, 1],
        [7, 2],
      ]);
      for (const row of kept) expect([before, after]).toContain(Number(row.hour));
    } finally {
      await old.discard();
    }
  });
});
