import { openDatabase, type Database } from '../../src/runtime/database.js';
import { PostgresDriver } from '../../src/storage/postgres/postgres-driver.js';
import type { SqlDriver } from '../../src/storage/sql/driver.js';
import { SqliteDriver } from '../../src/storage/sqlite/sqlite-driver.js';
import { ownPostgresDatabase, TEST_DATABASE_URL } from './test-app.js';

/**
 * A database of its own, for tests of store-wide state (the fixed vector size, `clear`) that
 * would disturb other test files sharing the test database: a new in-memory SQLite database, or
 * a new PostgreSQL database on the test server, dropped by `close`.
 */
export async function openFreshDatabase(): Promise<Database & { close(): Promise<void> }> {
  if (!TEST_DATABASE_URL.startsWith('postgres')) {
    const database = await openDatabase(':memory:');
    return { ...database, close: () => database.driver.close() };
  }
  const own = await ownPostgresDatabase();
  const database = await openDatabase(own.url);
  return {
    ...database,
    async close() {
      await database.driver.close();
      await own.drop();
    },
  };
}

/**
 * An empty database of its own with no migrations run, for tests of a migration: the test
 * migrates it up to the one before, writes the rows an older version left, then migrates on.
 */
export async function openUnmigratedDriver(): Promise<SqlDriver & { discard(): Promise<void> }> {
  if (!TEST_DATABASE_URL.startsWith('postgres')) {
    const driver = new SqliteDriver(':memory:');
    return Object.assign(driver, { discard: () => driver.close() });
  }
  const own = await ownPostgresDatabase({ migrated: false });
  const driver = new PostgresDriver(own.url, { maxConnections: 2 });
  return Object.assign(driver, {
    async discard() {
      await driver.close();
      await own.drop();
    },
  });
}
