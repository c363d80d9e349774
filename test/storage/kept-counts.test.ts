import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/storage/migrate.js';
import type { SqlDriver } from '../../src/storage/sql/driver.js';
import { countPeerMetamessages } from '../../src/storage/sql/kept-counts.js';
import { SqlStore } from '../../src/storage/sql/sql-store.js';
import type { ConclusionLevel } from '../../src/storage/store.js';
import { openUnmigratedDriver } from '../support/fresh-database.js';
import { DIALECT } from '../support/test-app.js';

/*
 * Counts kept by triggers, which the migration that adds each also takes of the rows a database
 * already holds: a v1 user's metamessages on its peer row (0028), a collection's conclusions per
 * level (0029).
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

let conclusions = 0;
async function conclusion(driver: SqlDriver, observer: string, observed: string, level: ConclusionLevel, session: string | null = null): Promise<string> {
  const id = `c${++conclusions}`;
  await driver.run('INSERT INTO conclusions (id, workspace_id, observer_id, observed_id, session_id, content, level, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', [
    id,
    'w1',
    observer,
    observed,
    session,
    `fact ${id}`,
    level,
    at(),
  ]);
  return id;
}

describe("a collection's conclusion counts", () => {
  it('are counted at the migration, then kept by inserts, soft and hard deletes, changes and cascades', async () => {
    const driver = await openUnmigratedDriver();
    try {
      await migrate(driver, { through: '0028_peer_metamessage_count' });
      await driver.run('INSERT INTO workspaces (id, created_at) VALUES (?, ?)', ['w1', at()]);
      for (const peer of ['alice', 'bob']) await driver.run('INSERT INTO peers (workspace_id, id, created_at) VALUES (?, ?, ?)', ['w1', peer, at()]);
      await driver.run('INSERT INTO sessions (workspace_id, id, created_at) VALUES (?, ?, ?)', ['w1', 's1', at()]);
      const kept = await conclusion(driver, 'alice', 'bob', 'explicit');
      await conclusion(driver, 'alice', 'bob', 'deductive');
      const deleted = await conclusion(driver, 'alice', 'bob', 'explicit');
      await driver.run('UPDATE conclusions SET deleted_at = ? WHERE id = ?', [at(), deleted]);
      await conclusion(driver, 'bob', 'bob', 'explicit');
      await migrate(driver);

      const store = SqlStore.over(driver);
      const counts = async (observer: string, observed: string) => {
        const scope = { workspaceId: 'w1', observerId: observer, observedId: observed };
        return Promise.all((['explicit', 'deductive', 'inductive'] as const).map((level) => store.memory.countConclusions(scope, level)));
      };
      expect(await counts('alice', 'bob')).toEqual([1, 1, 0]);
      expect(await counts('bob', 'bob')).toEqual([1, 0, 0]);
      expect(await counts('bob', 'alice')).toEqual([0, 0, 0]);

      await conclusion(driver, 'alice', 'bob', 'inductive', 's1');
      await conclusion(driver, 'alice', 'bob', 'explicit', 's1');
      expect(await counts('alice', 'bob')).toEqual([2, 1, 1]);
      // soft-deleted, restored (as a direct write would), its level changed, then deleted outright
      await driver.run('UPDATE conclusions SET deleted_at = ? WHERE id = ?', [at(), kept]);
      expect(await counts('alice', 'bob')).toEqual([1, 1, 1]);
      await driver.run('UPDATE conclusions SET deleted_at = NULL WHERE id = ?', [kept]);
      await driver.run("UPDATE conclusions SET level = 'inductive' WHERE id = ?", [kept]);
      expect(await counts('alice', 'bob')).toEqual([1, 1, 2]);
      await driver.run('DELETE FROM conclusions WHERE id = ?', [kept]);
      await driver.run('DELETE FROM conclusions WHERE id = ?', [deleted]);
      expect(await counts('alice', 'bob')).toEqual([1, 1, 1]);
      // the session's rows go by cascade, and their counts with them
      await driver.run("DELETE FROM sessions WHERE workspace_id = 'w1' AND id = 's1'");
      expect(await counts('alice', 'bob')).toEqual([0, 1, 0]);
      // every count equals a count of the rows
      const rows = await driver.all<{ observer_id: string; observed_id: string; level: string; n: number | string }>(
        'SELECT observer_id, observed_id, level, COUNT(*) AS n FROM conclusions WHERE deleted_at IS NULL GROUP BY observer_id, observed_id, level',
      );
      for (const row of rows) {
        const scope = { workspaceId: 'w1', observerId: row.observer_id, observedId: row.observed_id };
        expect(await store.memory.countConclusions(scope, row.level as ConclusionLevel)).toBe(Number(row.n));
      }
      // the observed peer's row deleted: its conclusions and their counts go too
      await driver.run("DELETE FROM peers WHERE workspace_id = 'w1' AND id = 'bob'");
      expect(await counts('alice', 'bob')).toEqual([0, 0, 0]);
      expect(Number((await driver.get<{ n: number | string }>('SELECT COALESCE(SUM(n), 0) AS n FROM conclusion_counts'))?.n)).toBe(0);
    } finally {
      await driver.discard();
    }
  });
});

describe("a workspace's message count", () => {
  it('is counted at the migration from its sessions, then kept by inserts, deletes and cascades, apart from other workspaces', async () => {
    const driver = await openUnmigratedDriver();
    try {
      await migrate(driver, { through: DIALECT === 'postgres' ? '0046_jobs_by_workspace_state' : '0044_jobs_by_workspace_state' });
      for (const w of ['w1', 'w2']) {
        await driver.run('INSERT INTO workspaces (id, created_at) VALUES (?, ?)', [w, at()]);
        await driver.run('INSERT INTO peers (workspace_id, id, created_at) VALUES (?, ?, ?)', [w, 'alice', at()]);
        for (const s of ['s1', 's2']) await driver.run('INSERT INTO sessions (workspace_id, id, created_at) VALUES (?, ?, ?)', [w, s, at()]);
      }
      let n = 0;
      const messages = async (w: string, s: string, count: number) => {
        // several rows a statement, as the store writes them
        const rows = Array.from({ length: count }, () => [`m${++n}`, w, s, 'alice', 'hello', at()]);
        await driver.run(`INSERT INTO messages (id, workspace_id, session_id, peer_id, content, created_at) VALUES ${rows.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}`, rows.flat());
      };
      await messages('w1', 's1', 3);
      await messages('w1', 's2', 2);
      await messages('w2', 's1', 1);
      await migrate(driver);
      const store = new SqlStore(driver, driver);
      const counts = async () => Promise.all(['w1', 'w2'].map(async (w) => (await store.workspaces.counts(w))?.messages));
      expect(await counts()).toEqual([5, 1]);

      await messages('w1', 's2', 4);
      expect(await counts()).toEqual([9, 1]);
      await driver.run("DELETE FROM messages WHERE id = 'm1'");
      expect(await counts()).toEqual([8, 1]);
      // a session's messages go by cascade, and are counted down
      await driver.run("DELETE FROM sessions WHERE workspace_id = 'w1' AND id = 's2'");
      expect(await counts()).toEqual([2, 1]);
      // the workspace's rows go with it, its messages by cascade too
      await driver.run("DELETE FROM workspaces WHERE id = 'w2'");
      expect(await counts()).toEqual([2, undefined]);
      expect(Number((await driver.get<{ n: number | string }>("SELECT COUNT(*) AS n FROM message_counts WHERE workspace_id = 'w2'"))?.n)).toBe(0);
    } finally {
      await driver.discard();
    }
  });
});
