import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/storage/migrate.js';
import type { SqlDriver } from '../../src/storage/sql/driver.js';
import { countPeerMetamessages } from '../../src/storage/sql/kept-counts.js';
import { openUnmigratedDriver } from '../support/fresh-database.js';
import { DIALECT } from '../support/test-app.js';

/*
 * A v1 user's metamessages are counted on its peer row by triggers (migration 0028), which also
 * counts the metamessages a database already holds when it is migrated.
 */

const at = () => (DIALECT === 'postgres' ? new Date() : Date.now() * 1000);

async function metamessage(driver: SqlDriver, id: string, peer: string, session: string | null): Promise<void> {
  await driver.run("INSERT INTO metamessages (id, workspace_id, peer_id, session_id, label, content, created_at) VALUES (?, 'w1', ?, ?, 'note', 'c', ?)", [
    id,
    peer,
    session,
    at(),
  ]);
}

describe("a v1 user's metamessage count", () => {
  it('is counted at the migration, then kept by inserts, deletes, an owner changed and cascades', async () => {
    const driver = await openUnmigratedDriver();
    try {
      await migrate(driver, { through: '0027_finished_work_by_hour' });
      await driver.run('INSERT INTO workspaces (id, created_at) VALUES (?, ?)', ['w1', at()]);
      for (const peer of ['alice', 'bob', 'carol']) await driver.run('INSERT INTO peers (workspace_id, id, created_at) VALUES (?, ?, ?)', ['w1', peer, at()]);
      await driver.run('INSERT INTO sessions (workspace_id, id, created_at) VALUES (?, ?, ?)', ['w1', 's1', at()]);
      await metamessage(driver, 'm1', 'alice', null);
      await metamessage(driver, 'm2', 'alice', 's1');
      await metamessage(driver, 'm3', 'bob', 's1');
      await migrate(driver);
      const counts = async () => Promise.all(['alice', 'bob', 'carol'].map((peer) => countPeerMetamessages(driver, 'w1', peer)));
      expect(await counts()).toEqual([2, 1, 0]);

      await metamessage(driver, 'm4', 'carol', null);
      await metamessage(driver, 'm5', 'carol', 's1');
      expect(await counts()).toEqual([2, 1, 2]);
      await driver.run("DELETE FROM metamessages WHERE id = 'm1'");
      expect(await counts()).toEqual([1, 1, 2]);
      await driver.run("UPDATE metamessages SET peer_id = 'bob' WHERE id = 'm4'");
      await driver.run("UPDATE metamessages SET label = 'other' WHERE id = 'm5'");
      expect(await counts()).toEqual([1, 2, 1]);
      // the session's row deleted: its metamessages go by cascade, and their counts with them
      await driver.run("DELETE FROM sessions WHERE workspace_id = 'w1' AND id = 's1'");
      expect(await counts()).toEqual([0, 1, 0]);
      expect(Number((await driver.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM metamessages'))?.n)).toBe(1);
    } finally {
      await driver.discard();
    }
  });
});
