import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { databaseOptions, openDatabase } from '../../src/runtime/database.js';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { SqliteDriver } from '../../src/storage/sqlite/sqlite-driver.js';
import { BACKSTOP_FRAMES, CHECKPOINT_FRAMES, WalCheckpointer } from '../../src/storage/sqlite/wal-checkpointer.js';
import { buildTestApp, DIALECT, uniqueId } from '../support/test-app.js';

/*
 * SQLite's checkpoints (the WAL copied into the database) run in a thread of their own
 * (SQLITE_CHECKPOINTS=background, the default), not in the commit that fills the WAL.
 */

const dir = mkdtempSync(join(tmpdir(), 'engram-checkpoints-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function openWith(env: Record<string, string>, file: string) {
  const config = loadConfig({ DATABASE_URL: join(dir, file), ...env }, '/nonexistent/.env');
  const database = await openDatabase(config.databaseUrl, databaseOptions(config));
  if (!(database.driver instanceof SqliteDriver)) throw new Error('not SQLite');
  return { database, driver: database.driver };
}

/** Commits one row at a time, each a page or more, until the WAL holds more than `frames` frames. */
async function fillWal(driver: SqliteDriver, rows: number): Promise<void> {
  await driver.run('CREATE TABLE IF NOT EXISTS filler (n INTEGER PRIMARY KEY, text TEXT NOT NULL)');
  for (let n = 0; n < rows; n++) await driver.run('INSERT INTO filler (n, text) VALUES (?, ?)', [n, 'x'.repeat(5000)]);
}

describe.skipIf(DIALECT === 'postgres')('SQLite checkpoints', () => {
  it('run in a thread of their own once the WAL passes 1,000 frames; the connection checkpoints itself only far past that', async () => {
    const { driver } = await openWith({}, 'background.db');
    try {
      const [auto] = await driver.all<{ wal_autocheckpoint: number }>('PRAGMA wal_autocheckpoint');
      expect(auto.wal_autocheckpoint).toBe(BACKSTOP_FRAMES);
      expect(driver.checkpoints).toEqual({ done: 0, failed: 0 });
      // two pages a row: past CHECKPOINT_FRAMES after about 500 rows
      await fillWal(driver, CHECKPOINT_FRAMES);
      const deadline = Date.now() + 10_000;
      while (driver.checkpoints!.done === 0 && Date.now() < deadline) await sleep(20);
      expect(driver.checkpoints).toMatchObject({ failed: 0 });
      expect(driver.checkpoints!.done).toBeGreaterThan(0);
      const [count] = await driver.all<{ n: number }>('SELECT COUNT(*) AS n FROM filler');
      expect(count.n).toBe(CHECKPOINT_FRAMES);
    } finally {
      await driver.close();
    }
    // everything is there for the next connection
    const { driver: again } = await openWith({ SQLITE_CHECKPOINTS: 'inline' }, 'background.db');
    try {
      const [count] = await again.all<{ n: number }>('SELECT COUNT(*) AS n FROM filler');
      expect(count.n).toBe(CHECKPOINT_FRAMES);
    } finally {
      await again.close();
    }
  });

  it('stay in the commits with SQLITE_CHECKPOINTS=inline, and in memory (no WAL)', async () => {
    const { driver } = await openWith({ SQLITE_CHECKPOINTS: 'inline' }, 'inline.db');
    try {
      const [auto] = await driver.all<{ wal_autocheckpoint: number }>('PRAGMA wal_autocheckpoint');
      expect(auto.wal_autocheckpoint).toBe(CHECKPOINT_FRAMES);
      await fillWal(driver, CHECKPOINT_FRAMES);
      expect(driver.checkpoints).toBeUndefined();
    } finally {
      await driver.close();
    }
    const memory = new SqliteDriver(':memory:');
    expect(memory.checkpoints).toBeUndefined();
    await memory.close();
  });

  it('are counted at /metrics', async () => {
    const api = await buildTestApp({ DATABASE_URL: join(dir, 'metrics.db'), METRICS_ENABLED: 'true' });
    try {
      const counted = async () => (await api.get('/metrics')).text.split('\n').filter((line) => line.startsWith('engram_sqlite_checkpoints_total'));
      expect(await counted()).toEqual(['engram_sqlite_checkpoints_total{outcome="done"} 0', 'engram_sqlite_checkpoints_total{outcome="failed"} 0']);
      // messages of about a page each, 20 to a request, until the thread has run
      const ws = uniqueId();
      await api.post('/v3/workspaces', { id: ws });
      await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's' });
      const deadline = Date.now() + 30_000;
      for (let batch = 0; (await counted())[0].endsWith(' 0'); batch++) {
        if (Date.now() > deadline) throw new Error('no checkpoint by the thread');
        const messages = Array.from({ length: 20 }, (_, i) => ({ peer_id: 'alice', content: `note ${batch} ${i} ${'word '.repeat(800)}` }));
        expect((await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages })).status).toBe(201);
      }
      expect(await counted()).toEqual([expect.stringMatching(/^engram_sqlite_checkpoints_total\{outcome="done"\} [1-9]\d*$/), 'engram_sqlite_checkpoints_total{outcome="failed"} 0']);
    } finally {
      await api.close();
    }
  });

  it('refuse a SQLITE_CHECKPOINTS that is neither background nor inline', () => {
    expect(() => loadConfig({ SQLITE_CHECKPOINTS: 'sometimes' }, '/nonexistent/.env')).toThrow(ConfigError);
    expect(() => loadConfig({ SQLITE_CHECKPOINTS: 'sometimes' }, '/nonexistent/.env')).toThrow(/SQLITE_CHECKPOINTS must be one of background, inline, got "sometimes"/);
  });

  it('are left to the commits again, once, when the thread fails', async () => {
    const failures: string[] = [];
    // a file that does not exist: the thread cannot open it
    const checkpointer = new WalCheckpointer(join(dir, 'missing', 'gone.db'), 'NORMAL', (message) => failures.push(message));
    try {
      // too few frames: no thread yet
      checkpointer.afterCommit(CHECKPOINT_FRAMES - 1);
      await sleep(100);
      expect(failures).toEqual([]);
      checkpointer.afterCommit(CHECKPOINT_FRAMES);
      const deadline = Date.now() + 10_000;
      while (failures.length === 0 && Date.now() < deadline) await sleep(20);
      expect(failures).toHaveLength(1);
      expect(failures[0]).toMatch(/^the checkpoint (thread failed|failed|thread exited)/);
      // not asked again
      await sleep(100);
      checkpointer.afterCommit(10 * CHECKPOINT_FRAMES);
      await sleep(200);
      expect(failures).toHaveLength(1);
      expect(checkpointer.counts).toEqual({ done: 0, failed: 1 });
    } finally {
      await checkpointer.close();
    }
  });
});
