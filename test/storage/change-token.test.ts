import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/runtime/database.js';
import { SqliteDriver } from '../../src/storage/sqlite/sqlite-driver.js';
import { DIALECT, TEST_DATABASE_URL } from '../support/test-app.js';

/*
 * The store's change token: the same while nothing commits, from any connection or process,
 * and different after every commit, so a cached page may skip its version query on it.
 */

const dir = mkdtempSync(join(tmpdir(), 'engram-change-token-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('change token on a SQLite file', () => {
  it('stays while only reads happen and changes with every commit, ours or another connection\'s', async () => {
    const path = join(dir, 'tokens.db');
    const database = await openDatabase(path);
    const other = new Database(path);
    other.pragma('busy_timeout = 5000');
    try {
      const store = database.store;
      const first = store.changeToken();
      expect(first).toBeDefined();
      await store.workspaces.find('nobody');
      other.prepare('SELECT COUNT(*) FROM workspaces').get();
      expect(store.changeToken()).toBe(first);

      const seen = new Set([first]);
      const expectNew = () => {
        const token = store.changeToken();
        expect(token).toBeDefined();
        expect(seen.has(token)).toBe(false);
        seen.add(token);
      };
      await store.workspaces.createIfAbsent({ id: 'w1', metadata: {}, configuration: {} }, new Date());
      expectNew();
      other.prepare(`UPDATE workspaces SET metadata = '{"a":1}' WHERE id = 'w1'`).run();
      expectNew();
      // many small commits from the other connection, then a checkpoint that restarts the WAL
      for (let i = 0; i < 20; i++) {
        other.prepare(`UPDATE workspaces SET metadata = ? WHERE id = 'w1'`).run(JSON.stringify({ i }));
        expectNew();
      }
      other.pragma('wal_checkpoint(TRUNCATE)');
      const afterCheckpoint = store.changeToken();
      other.prepare(`UPDATE workspaces SET metadata = '{"b":2}' WHERE id = 'w1'`).run();
      expect(store.changeToken()).not.toBe(afterCheckpoint);
      // a transaction rolled back commits nothing
      const beforeRollback = store.changeToken();
      other.exec('BEGIN IMMEDIATE');
      other.prepare(`UPDATE workspaces SET metadata = '{"c":3}' WHERE id = 'w1'`).run();
      other.exec('ROLLBACK');
      expect(store.changeToken()).toBe(beforeRollback);
    } finally {
      other.close();
      await database.driver.close();
    }
  });

  it('cannot tell for an in-memory database, inside a transaction, or once closed', async () => {
    const memory = new SqliteDriver(':memory:');
    expect(memory.changeToken()).toBeUndefined();
    await memory.close();
    const database = await openDatabase(join(dir, 'closed.db'));
    expect(await database.store.transaction(async (tx) => tx.changeToken())).toBeUndefined();
    expect(database.store.changeToken()).toBeDefined();
    await database.driver.close();
    expect(database.driver.changeToken()).toBeUndefined();
  });
});

describe.runIf(DIALECT === 'postgres')('change token on PostgreSQL', () => {
  it('cannot tell: every check queries', async () => {
    const database = await openDatabase(TEST_DATABASE_URL);
    try {
      expect(database.store.changeToken()).toBeUndefined();
    } finally {
      await database.driver.close();
    }
  });
});
