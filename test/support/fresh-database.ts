import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/app.js';
import { TEST_DATABASE_URL } from './test-app.js';

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
  const name = `engram_fresh_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  const database = await openDatabase(url.toString());
  return {
    ...database,
    async close() {
      await database.driver.close();
      const cleanup = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await cleanup.connect();
      try {
        await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await cleanup.end();
      }
    },
  };
}
