import { afterEach, describe, expect, it } from 'vitest';
import { TIME_LIMITED } from '../../src/storage/filter-time-limit.js';
import { MAX_NAMED_STATEMENTS, PostgresDriver } from '../../src/storage/postgres/postgres-driver.js';
import { buildTestApp, DIALECT, TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

/*
 * DATABASE_PREPARED_STATEMENTS (src/storage/postgres/postgres-driver.ts): frequent statements run
 * by name. Each driver here has one connection, so pg_prepared_statements (the session's own
 * prepared statements) shows what that connection holds.
 */
describe.skipIf(DIALECT !== 'postgres')('prepared statements on PostgreSQL', () => {
  const drivers: PostgresDriver[] = [];
  const table = `prepared_${process.pid}_${uniqueId('t').replace(/\W/g, '_')}`.toLowerCase();
  const open = (preparedStatements?: boolean) => {
    const driver = new PostgresDriver(TEST_DATABASE_URL, { maxConnections: 1, preparedStatements });
    drivers.push(driver);
    return driver;
  };
  const prepared = async (driver: PostgresDriver) =>
    (await driver.all<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).map((row) => row.statement);

  afterEach(async () => {
    await drivers[0]?.run(`DROP TABLE IF EXISTS ${table}`);
    await Promise.all(drivers.splice(0).map((driver) => driver.close()));
  });

  it('names a statement from its third run, and never a filter, a full-text match or a vector distance', async () => {
    const driver = open();
    await driver.run(`CREATE TABLE ${table} (n integer PRIMARY KEY, words tsvector)`);
    await driver.run(`INSERT INTO ${table} SELECT g, to_tsvector('simple', 'word ' || g) FROM generate_series(1, 10) g`);
    const byKey = `SELECT n FROM ${table} WHERE n = ?`;
    const filtered = `SELECT n FROM ${table} WHERE ${TIME_LIMITED} n > ?`;
    const match = `SELECT n FROM ${table} WHERE words @@ plainto_tsquery('simple', ?)`;
    for (let run = 1; run <= 5; run++) {
      expect(await driver.get(byKey, [run])).toEqual({ n: run });
      expect(await driver.all(filtered, [8])).toEqual([{ n: 9 }, { n: 10 }]);
      expect(await driver.all(match, ['7'])).toEqual([{ n: 7 }]);
      const names = await prepared(driver);
      expect(names.some((text) => text.includes(`FROM ${table} WHERE n = $1`)), `run ${run}`).toBe(run >= 3);
    }
    const names = await prepared(driver);
    expect(names.filter((text) => text.includes('@@') || text.includes(TIME_LIMITED))).toEqual([]);
  });

  it('names nothing when DATABASE_PREPARED_STATEMENTS is off', async () => {
    const driver = open(false);
    for (let run = 0; run < 5; run++) expect(await driver.get('SELECT ?::int + 1 AS n', [run])).toEqual({ n: run + 1 });
    expect(await prepared(driver)).toEqual([]);
    expect(driver.preparedStatements).toBeUndefined();
  });

  it('are counted at /metrics', async () => {
    const api = await buildTestApp({ METRICS_ENABLED: 'true' });
    try {
      for (let run = 0; run < 4; run++) expect((await api.post('/v3/workspaces', { id: uniqueId() })).status).toBe(201);
      const counts = api.database.driver.preparedStatements;
      expect(counts?.named).toBeGreaterThan(0);
      const text = (await api.get('/metrics')).text;
      // the metrics' own statements may be named while the page is made
      const named = Number(/^engram_postgres_prepared_statements_total\{outcome="named"\} (\d+)$/m.exec(text)?.[1]);
      expect(named).toBeGreaterThan(0);
      expect(named).toBeLessThanOrEqual(counts?.named ?? 0);
      expect(text).toMatch(/^engram_postgres_prepared_statements_total\{outcome="dropped"\} 0$/m);
    } finally {
      await api.close();
    }
  });

  it('names at most MAX_NAMED_STATEMENTS texts, in a transaction too', async () => {
    const driver = open();
    const texts = Array.from({ length: MAX_NAMED_STATEMENTS + 20 }, (_, i) => `SELECT ?::int + ${i} AS n`);
    await driver.transaction(async (tx) => {
      for (const text of texts) for (let run = 0; run < 3; run++) expect(await tx.get(text, [run])).toEqual({ n: run + texts.indexOf(text) });
    });
    const names = await prepared(driver);
    expect(names.length).toBe(MAX_NAMED_STATEMENTS);
  });

  it('runs a statement unnamed from then on when its prepared statement is gone or its result changed, a transaction again', async () => {
    const driver = open();
    await driver.run(`CREATE TABLE ${table} (n integer PRIMARY KEY)`);
    await driver.run(`INSERT INTO ${table} VALUES (1), (2)`);
    // a pooler's DEALLOCATE ALL: the connection no longer has the statement pg believes it prepared
    const count = `SELECT count(*)::int AS c FROM ${table} WHERE n > ?`;
    for (let run = 0; run < 3; run++) await driver.get(count, [0]);
    expect((await prepared(driver)).some((text) => text.includes(`FROM ${table} WHERE n > $1`))).toBe(true);
    await driver.exec('DEALLOCATE ALL');
    expect(await driver.get(count, [0])).toEqual({ c: 2 });
    expect(await driver.get(count, [1])).toEqual({ c: 1 });
    expect((await prepared(driver)).some((text) => text.includes(`FROM ${table} WHERE n > $1`))).toBe(false);

    // a column added under a named SELECT *: the cached plan's result type no longer holds
    const every = `SELECT * FROM ${table} WHERE n = ?`;
    for (let run = 0; run < 3; run++) expect(await driver.get(every, [1])).toEqual({ n: 1 });
    await driver.run(`ALTER TABLE ${table} ADD COLUMN label text DEFAULT 'x'`);
    expect(await driver.get(every, [1])).toEqual({ n: 1, label: 'x' });

    // in a transaction the failure ends the transaction, which runs again with the statements
    // unnamed, each one that fails: its writes are made once
    const first = `SELECT n FROM ${table} WHERE n = ? AND n > 0`;
    const second = `SELECT count(*)::int AS c FROM ${table} WHERE n >= ?`;
    const insert = `INSERT INTO ${table} (n) VALUES (?)`;
    for (let run = 0; run < 3; run++) await driver.transaction(async (tx) => [await tx.get(first, [2]), await tx.get(second, [0]), await tx.run(insert, [10 + run])]);
    const names = await prepared(driver);
    for (const part of ['AND n > 0', 'WHERE n >= $1', `INSERT INTO ${table}`]) expect(names.some((text) => text.includes(part)), part).toBe(true);
    await driver.exec('DEALLOCATE ALL');
    let attempts = 0;
    const answer = await driver.transaction(async (tx) => {
      attempts++;
      const found = await tx.get(first, [2]);
      await tx.run(insert, [20]);
      return [found, await tx.get(second, [0])];
    });
    expect(answer).toEqual([{ n: 2 }, { c: 6 }]);
    expect(attempts).toBe(4);
    // the count and the SELECT * above, then these three
    expect(driver.preparedStatements?.dropped).toBe(5);
    expect(await driver.get(`SELECT count(*)::int AS c FROM ${table} WHERE n = 20`)).toEqual({ c: 1 });
  });

  it('does not run a transaction again for a statement that was not named', async () => {
    const driver = open();
    let attempts = 0;
    await expect(
      driver.transaction(async (tx) => {
        attempts++;
        await tx.run('EXECUTE engram_never_prepared');
      }),
    ).rejects.toMatchObject({ code: '26000' });
    expect(attempts).toBe(1);
  });
});
