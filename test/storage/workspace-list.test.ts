import { describe, expect, it } from 'vitest';
import { WORKSPACE_FILTER } from '../../src/domain/filters/filter-schemas.js';
import { parseFilters, CURRENT_RULES } from '../../src/domain/filters/filters.js';
import { migrate } from '../../src/storage/migrate.js';
import type { SqlExecutor } from '../../src/storage/sql/driver.js';
import { DIALECTS } from '../../src/storage/sql/dialects.js';
import { countWorkspaces } from '../../src/storage/sql/kept-counts.js';
import { SEEK_FROM_ROWS } from '../../src/storage/sql/list-page.js';
import { SeekPoints } from '../../src/storage/sql/seek-points.js';
import { SqlStore } from '../../src/storage/sql/sql-store.js';
import { SqlV1Store } from '../../src/storage/sql/v1-store.js';
import { SqlWorkspaceStore, workspacesVersion } from '../../src/storage/sql/workspace-store.js';
import type { Page } from '../../src/storage/store.js';
import { openFreshDatabase, openUnmigratedDriver } from '../support/fresh-database.js';
import { recordingExecutor } from '../support/recording-executor.js';
import { DIALECT } from '../support/test-app.js';

/*
 * The list of workspaces (v3/v2 `workspaces/list`, v1 apps) takes its total from a row that
 * triggers keep (migration 0036 on SQLite, 0038 on PostgreSQL) and starts its deep pages after
 * the last row of an earlier page read at the same version of that row, as the other long lists
 * do. Both run on a database of their own: the list is the whole database's.
 */

const BEFORE = DIALECT === 'postgres' ? '0037_messages_workspace_order' : '0035_conclusion_list_version';
const at = () => (DIALECT === 'postgres' ? new Date() : Date.now() * 1000);
const total = async (db: SqlExecutor) => Number((await db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM workspaces'))?.n);

describe('the number of workspaces', () => {
  it('is counted at the migration, then kept by creations, v1 apps and deletes; the version moves with them only', async () => {
    const driver = await openUnmigratedDriver();
    try {
      await migrate(driver, { through: BEFORE });
      for (const id of ['w1', 'w2', 'w3']) await driver.run('INSERT INTO workspaces (id, created_at) VALUES (?, ?)', [id, at()]);
      await migrate(driver);
      expect(await countWorkspaces(driver)).toBe(3);
      const store = SqlStore.over(driver);
      const version = () => workspacesVersion(driver);
      const first = await version();
      expect(first).toBeDefined();

      const now = new Date();
      expect((await store.workspaces.createIfAbsent({ id: 'w4', metadata: {}, configuration: {} }, now)).created).toBe(true);
      const afterCreate = await version();
      expect(afterCreate).not.toBe(first);
      // get-or-create of one that exists, a change of metadata: the list neither grows nor moves
      expect((await store.workspaces.createIfAbsent({ id: 'w1', metadata: {}, configuration: {} }, now)).created).toBe(false);
      await store.workspaces.update('w2', { metadata: { plan: 'pro' } });
      expect(await version()).toBe(afterCreate);
      expect(await countWorkspaces(driver)).toBe(4);

      await store.v1.insertApp('app-v1-id', 'w5', {}, now);
      expect(await countWorkspaces(driver)).toBe(5);
      await store.workspaces.delete('w3');
      expect(await countWorkspaces(driver)).toBe(4);
      expect(await version()).not.toBe(afterCreate);
      // a statement that inserts nothing (the id taken) changes nothing either
      const settled = await version();
      await store.v1.insertApp('app-v1-other', 'w1', {}, now);
      expect(await version()).toBe(settled);
      expect(await countWorkspaces(driver)).toBe(await total(driver));
      expect((await store.workspaces.list({ filter: null, page: 1, size: 50, reverse: false })).total).toBe(4);
      expect((await store.v1.listApps({ filter: null, page: 1, size: 50, reverse: false })).total).toBe(4);
    } finally {
      await driver.discard();
    }
  });
});

describe('deep pages of the workspaces', () => {
  it('are the pages read by offset, a deep one read from the point the page before it left, with no count of the table', async () => {
    const database = await openFreshDatabase();
    try {
      const store = database.store;
      const ROWS = 1_150;
      const SIZE = 100;
      // one instant for all: the order's tie-break (pk) decides, as it must
      const instant = new Date('2026-11-01T10:00:00.000Z');
      await store.transaction(async (tx) => {
        for (let i = 0; i < ROWS; i++) await tx.workspaces.createIfAbsent({ id: `w${String(i).padStart(4, '0')}`, metadata: { i }, configuration: {} }, instant);
      });
      const d = DIALECTS[DIALECT];
      const points = new SeekPoints();
      const recorded = recordingExecutor(database.driver);
      const lists: { name: string; read: (db: SqlExecutor, points: SeekPoints | undefined, page: number, reverse: boolean) => Promise<Page<{ id: string }>> }[] = [
        { name: 'workspaces/list', read: (db, p, page, reverse) => new SqlWorkspaceStore(db, d, p).list({ filter: null, page, size: SIZE, reverse }) },
        {
          name: 'v1 apps',
          read: async (db, p, page, reverse) => {
            const apps = await new SqlV1Store(db, p).listApps({ filter: null, page, size: SIZE, reverse });
            return { ...apps, items: apps.items.map((app) => ({ id: app.name })) };
          },
        },
      ];
      for (const list of lists) {
        for (const reverse of [false, true]) {
          const seen: string[] = [];
          for (let page = 1; page <= Math.ceil(ROWS / SIZE) + 1; page++) {
            recorded.issued.length = 0;
            const fromPoints = await list.read(recorded.executor, points, page, reverse);
            const byOffset = await list.read(database.driver, undefined, page, reverse);
            expect(fromPoints, `${list.name} page ${page}${reverse ? ' reversed' : ''}`).toEqual(byOffset);
            expect(fromPoints.total).toBe(ROWS);
            seen.push(...fromPoints.items.map((item) => item.id));
            const statements = recorded.issued.map((s) => s.sql);
            expect(statements.some((sql) => /COUNT\(\*\)/i.test(sql)), `${list.name} page ${page} counted the table`).toBe(false);
            const pageSql = statements.find((sql) => /seek_key_0\b/.test(sql));
            if ((page - 2) * SIZE >= SEEK_FROM_ROWS) {
              // read after the last row of the page before, itself deep enough to leave a point
              expect(pageSql, `${list.name} page ${page}`).toMatch(/seek_key_0\b.* (<|>) (\?|\()/s);
            }
          }
          expect(new Set(seen).size).toBe(ROWS);
        }
      }
      // a workspace added: the old points are not used, and the pages stay right
      await store.workspaces.createIfAbsent({ id: 'late', metadata: {}, configuration: {} }, instant);
      recorded.issued.length = 0;
      const page = await lists[0].read(recorded.executor, points, 10, false);
      expect(page).toEqual(await lists[0].read(database.driver, undefined, 10, false));
      expect(page.total).toBe(ROWS + 1);
      expect(recorded.issued.map((s) => s.sql).find((sql) => /seek_key_0\b/.test(sql))).not.toMatch(/seek_key_0\b.* (<|>) (\?|\()/s);
      // a filtered page still counts its matches
      const filter = parseFilters(store, { id: 'w0001' }, WORKSPACE_FILTER, CURRENT_RULES);
      recorded.issued.length = 0;
      const filtered = await new SqlWorkspaceStore(recorded.executor, d, points).list({ filter, page: 1, size: 1, reverse: false });
      expect(filtered.items.map((item) => item.id)).toEqual(['w0001']);
      expect(filtered.total).toBe(1);
      expect(recorded.issued.some((s) => /COUNT\(\*\)/i.test(s.sql))).toBe(true);
    } finally {
      await database.close();
    }
  });
});
