import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { databaseOptions, openDatabase, type Database } from '../../src/runtime/database.js';
import { defaultPoolSize } from '../../src/storage/postgres/postgres-driver.js';
import { DIALECT, TEST_DATABASE_URL } from '../support/test-app.js';

/*
 * DATABASE_POOL_SIZE: the most connections a process opens to PostgreSQL for its pool, so that
 * processes x (pool + the filters' 4) fits the server's max_connections; unset, sized to the
 * machine's cores.
 */
describe.skipIf(DIALECT !== 'postgres')('DATABASE_POOL_SIZE on PostgreSQL', () => {
  const opened: Database[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((database) => database.driver.close()));
  });

  /** The connections (their backends' pids) that `count` statements of 100 ms asked for at once ran on. */
  async function connectionsUsed(env: Record<string, string>, count: number): Promise<number> {
    const config = loadConfig({ DATABASE_URL: TEST_DATABASE_URL, ...env });
    const database = await openDatabase(config.databaseUrl, databaseOptions(config));
    opened.push(database);
    const rows = await Promise.all(Array.from({ length: count }, () => database.driver.get<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.1)')));
    return new Set(rows.map((row) => row?.pid)).size;
  }

  it("opens at most that many connections, and the machine's default when unset; below 2 is refused at start-up", async () => {
    // a statement waiting for a connection runs on one of those open once one is free
    expect(await connectionsUsed({ DATABASE_POOL_SIZE: '3' }, 8)).toBe(3);
    // unset: two a core and one, at most 10 (5 on two cores)
    expect(await connectionsUsed({}, 12)).toBe(defaultPoolSize());
    // a transaction may need a second connection (a cancel of its statement): one is too few
    expect(() => loadConfig({ DATABASE_URL: TEST_DATABASE_URL, DATABASE_POOL_SIZE: '1' })).toThrow(/DATABASE_POOL_SIZE/);
  });
});
