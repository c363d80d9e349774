import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { FilterTimeLimitError, TIME_LIMITED } from '../../src/storage/filter-time-limit.js';
import { PostgresDriver } from '../../src/storage/postgres/postgres-driver.js';
import { DIALECTS } from '../../src/storage/sql/dialects.js';
import { SqliteDriver } from '../../src/storage/sqlite/sqlite-driver.js';
import { buildTestApp, DIALECT, TEST_DATABASE_URL, uniqueId, type TestApi } from '../support/test-app.js';

/*
 * A filtered statement ends once it has run past FILTER_TIME_LIMIT_MS (storage/filter-time-limit.ts):
 * here 100 ms, against a filter of 500 metadata conditions that matches none of 10,000 peers of
 * 40 metadata fields each, which takes seconds on either dialect when nothing stops it (SQLite
 * about 0.7 ms a peer, PostgreSQL about 0.15 ms).
 */
const LIMIT_MS = 100;
const PEERS = 10_000;

let api: TestApi;
let ws: string;
beforeAll(async () => {
  api = await buildTestApp({ FILTER_TIME_LIMIT_MS: String(LIMIT_MS) });
  ws = uniqueId();
  expect((await api.post('/v3/workspaces', { id: ws })).status).toBe(201);
  const store = api.database.store;
  const now = new Date();
  for (let start = 0; start < PEERS; start += 500) {
    await store.transaction((tx) => tx.peers.ensure(ws, Array.from({ length: 500 }, (_, k) => `p${start + k}`), now));
  }
  const metadata = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`field${i}`, `value ${i} of a peer`]));
  const dialect = DIALECTS[api.database.driver.dialect];
  await api.database.driver.run(`UPDATE peers SET metadata = ${dialect.jsonParam} WHERE workspace_id = ?`, [JSON.stringify(metadata), ws]);
}, 60_000);
afterAll(() => api.close());

const slowFilter = { OR: Array.from({ length: 500 }, (_, i) => ({ metadata: { [`field${i % 40}`]: { contains: `absent ${i}` } } })) };
// conditions each true for every peer but the last: PostgreSQL's planner tests these cheap ones
// first, so a clock test in the statement would never be reached
const slowAnd = { AND: [...Array.from({ length: 499 }, (_, i) => ({ metadata: { [`field${i % 40}`]: { contains: 'of a peer' } } })), { metadata: { field0: { contains: 'absent' } } }] };
const expectedDetail = `The filter took longer than ${LIMIT_MS} ms to evaluate; narrow the query's scope or simplify the filter`;

describe('the filter time limit', () => {
  it('ends a filtered list past the limit with a 422, and the server goes on serving', async () => {
    const response = await api.post(`/v3/workspaces/${ws}/peers/list`, { filters: slowFilter });
    expect(response.status).toBe(422);
    expect(response.body).toEqual({ detail: expectedDetail });
    const v2 = await api.post(`/v2/workspaces/${ws}/peers/list`, { filters: slowFilter });
    expect(v2.status).toBe(422);
    expect(v2.body).toEqual({ detail: expectedDetail });
    const conjunction = await api.post(`/v3/workspaces/${ws}/peers/list`, { filters: slowAnd });
    expect(conjunction.status).toBe(422);
    expect(conjunction.body).toEqual({ detail: expectedDetail });

    // the big workspace's pages without a filter, and a filtered page of a small one (a filter
    // over all 10,000 peers takes 20 to 90 ms here: too near the limit to be sure of under load)
    const unfiltered = await api.post(`/v3/workspaces/${ws}/peers/list?size=5`, {});
    expect(unfiltered.status).toBe(200);
    expect(unfiltered.body).toMatchObject({ total: PEERS, size: 5 });
    expect(unfiltered.body.items).toHaveLength(5);
    const small = uniqueId();
    expect((await api.post('/v3/workspaces', { id: small })).status).toBe(201);
    for (const id of ['a', 'b', 'c']) expect((await api.post(`/v3/workspaces/${small}/peers`, { id, metadata: { field3: id === 'b' ? 'other' : 'value 3' } })).status).toBe(201);
    const filtered = await api.post(`/v3/workspaces/${small}/peers/list`, { filters: { metadata: { field3: 'value 3' } } });
    expect(filtered.status).toBe(200);
    expect(filtered.body).toMatchObject({ total: 2 });
    expect(filtered.body.items.map((peer: { id: string }) => peer.id).sort()).toEqual(['a', 'c']);
  });

  it('logs a warning naming the limit', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const { app } = await buildApp({ config: api.config, database: api.database, logger: { level: 'warn', stream } });
    try {
      const response = await app.inject({ method: 'POST', url: `/v3/workspaces/${ws}/peers/list`, payload: { filters: slowFilter } });
      expect(response.statusCode).toBe(422);
    } finally {
      await app.close();
    }
    const warnings = lines.map((line) => JSON.parse(line) as { level: number; msg: string; limitMs?: number }).filter((line) => line.level === 40);
    expect(warnings).toEqual([expect.objectContaining({ msg: 'a filtered statement ran past FILTER_TIME_LIMIT_MS', limitMs: LIMIT_MS })]);
  });

  it('lets a statement that finishes within the limit answer', async () => {
    // the same conditions over 20 peers: well within 100 ms
    const small = uniqueId();
    expect((await api.post('/v3/workspaces', { id: small })).status).toBe(201);
    for (let i = 0; i < 20; i++) expect((await api.post(`/v3/workspaces/${small}/peers`, { id: `q${i}`, metadata: { field1: 'x' } })).status).toBe(201);
    const response = await api.post(`/v3/workspaces/${small}/peers/list`, { filters: slowFilter });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ items: [], total: 0 });
  });
});

describe('FILTER_TIME_LIMIT_MS', () => {
  it('defaults to 5,000 ms and refuses what is not a whole number of milliseconds in range, naming the setting', () => {
    expect(loadConfig({}, '/nonexistent/.env').filterTimeLimitMs).toBe(5000);
    expect(loadConfig({ FILTER_TIME_LIMIT_MS: '250' }, '/nonexistent/.env').filterTimeLimitMs).toBe(250);
    for (const value of ['5', 'soon', '1.5', '3600001']) {
      const attempt = () => loadConfig({ FILTER_TIME_LIMIT_MS: value }, '/nonexistent/.env');
      expect(attempt).toThrow(ConfigError);
      expect(attempt).toThrow(/FILTER_TIME_LIMIT_MS must be an integer/);
    }
  });
});

describe.skipIf(DIALECT !== 'sqlite')('the SQLite guard', () => {
  it('ends a statement past the limit, and a transaction it was part of commits nothing', async () => {
    const driver = new SqliteDriver(':memory:', { filterTimeLimitMs: LIMIT_MS });
    try {
      await driver.run('CREATE TABLE t (n INTEGER)');
      const endless = `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 1000000000) SELECT COUNT(*) AS c FROM g WHERE engram_filter_guard(n)`;
      await expect(driver.get(endless)).rejects.toThrow(FilterTimeLimitError);
      await expect(
        driver.transaction(async (tx) => {
          await tx.run('INSERT INTO t (n) VALUES (1)');
          await tx.get(endless);
        }),
      ).rejects.toThrow(FilterTimeLimitError);
      expect(await driver.get('SELECT COUNT(*) AS c FROM t')).toEqual({ c: 0 });
      // each statement has the whole limit: a quick one after a slow one runs
      expect(await driver.get('SELECT COUNT(*) AS c FROM (SELECT 1 AS n) WHERE engram_filter_guard(n)')).toEqual({ c: 1 });
    } finally {
      await driver.close();
    }
  });
});

describe.skipIf(DIALECT !== 'postgres')('the PostgreSQL statement timeout', () => {
  it('holds for marked statements only, in a transaction or not, and ends them past the limit', async () => {
    const driver = new PostgresDriver(TEST_DATABASE_URL, { maxConnections: 2, filterTimeLimitMs: LIMIT_MS });
    const setting = `SELECT current_setting('statement_timeout') AS t`;
    const marked = `${setting} WHERE ${TIME_LIMITED} TRUE`;
    const slow = `SELECT pg_sleep(2) AS slept WHERE ${TIME_LIMITED} TRUE`;
    try {
      expect(await driver.get(marked)).toEqual({ t: `${LIMIT_MS}ms` });
      expect(await driver.get(setting)).toEqual({ t: '0' });
      await expect(driver.get(slow)).rejects.toThrow(FilterTimeLimitError);
      // a slow statement without the mark is not limited
      expect(await driver.get('SELECT pg_sleep(0.3)::text AS slept')).toEqual({ slept: '' });

      const table = `time_limit_${process.pid}`;
      await driver.run(`CREATE TABLE ${table} (n integer)`);
      try {
        await expect(
          driver.transaction(async (tx) => {
            await tx.run(`INSERT INTO ${table} (n) VALUES (1)`);
            await tx.get(slow);
          }),
        ).rejects.toThrow(FilterTimeLimitError);
        expect(await driver.get(`SELECT COUNT(*) AS c FROM ${table}`)).toEqual({ c: 0 });
        const inside = await driver.transaction(async (tx) => [await tx.get(marked), await tx.get(setting)]);
        expect(inside).toEqual([{ t: `${LIMIT_MS}ms` }, { t: '0' }]);
        expect(await driver.get(setting)).toEqual({ t: '0' });
      } finally {
        await driver.run(`DROP TABLE ${table}`);
      }
    } finally {
      await driver.close();
    }
  });
});
