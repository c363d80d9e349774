import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { firstColumn } from '../../src/storage/sql/driver.js';
import { DIALECT, TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

/*
 * firstColumn reads one column's values without a row object each (SQLite: better-sqlite3's
 * pluck mode); the statement is cached and shared with `all`, which must still get rows.
 */

let database: Database;
let workspaceId: string;
beforeAll(async () => {
  database = await openDatabase(TEST_DATABASE_URL);
  workspaceId = uniqueId('ws');
  await database.store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, new Date());
  await database.store.peers.ensure(workspaceId, ['ann', 'bob', 'cy'], new Date());
});
afterAll(() => database.driver.close());

const SQL = 'SELECT id, workspace_id FROM peers WHERE workspace_id = ? ORDER BY id';

describe('firstColumn', () => {
  it('gives the first column of each row, in order, and leaves the statement giving rows to all', async () => {
    expect(await firstColumn<string>(database.driver, SQL, [workspaceId])).toEqual(['ann', 'bob', 'cy']);
    expect(await database.driver.all(SQL, [workspaceId])).toEqual(['ann', 'bob', 'cy'].map((id) => ({ id, workspace_id: workspaceId })));
    expect(await firstColumn<string>(database.driver, SQL, [uniqueId('none')])).toEqual([]);
  });

  it('works inside a transaction, and without a column method of the executor (the fallback through all)', async () => {
    const seen = await database.driver.transaction((tx) => firstColumn<string>(tx, SQL, [workspaceId]));
    expect(seen).toEqual(['ann', 'bob', 'cy']);
    const driver = database.driver;
    const withoutColumn = { dialect: driver.dialect, all: driver.all.bind(driver), get: driver.get.bind(driver), run: driver.run.bind(driver) };
    expect(await firstColumn<string>(withoutColumn, SQL, [workspaceId])).toEqual(['ann', 'bob', 'cy']);
  });

  it('is the driver plucking on SQLite, none on PostgreSQL', () => {
    expect(database.driver.column !== undefined).toBe(DIALECT === 'sqlite');
  });

  // json('{') fails as the row is read, after the statement was put in pluck mode
  it.runIf(DIALECT === 'sqlite')('leaves the statement giving rows when it fails while running', async () => {
    const failing = `SELECT id, workspace_id FROM peers WHERE workspace_id = ? AND (CASE WHEN ? = 1 THEN json('{') ELSE 1 END) ORDER BY id`;
    await expect(firstColumn(database.driver, failing, [workspaceId, 1])).rejects.toThrow(/malformed JSON/);
    expect(await database.driver.all(failing, [workspaceId, 0])).toEqual(['ann', 'bob', 'cy'].map((id) => ({ id, workspace_id: workspaceId })));
  });
});
