import { openDatabase, type Database } from '../../src/app.js';
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
