import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../../src/storage/sql/dialects.js';
import { buildTestApp, uniqueId, type TestApi } from '../support/test-app.js';

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
const expectedDetail = `The filter took longer than ${LIMIT_MS} ms to evaluate; narrow the query's scope or simplify the filter`;

describe('the filter time limit', () => {
  it('ends a filtered list past the limit with a 422, and the server goes on serving', async () => {
    const response = await api.post(`/v3/workspaces/${ws}/peers/list`, { filters: slowFilter });
    expect(response.status).toBe(422);
    expect(response.body).toEqual({ detail: expectedDetail });
    const v2 = await api.post(`/v2/workspaces/${ws}/peers/list`, { filters: slowFilter });
    expect(v2.status).toBe(422);
    expect(v2.body).toEqual({ detail: expectedDetail });

    const cheap = await api.post(`/v3/workspaces/${ws}/peers/list?size=5`, { filters: { metadata: { field3: 'value 3 of a peer' } } });
    expect(cheap.status).toBe(200);
    expect(cheap.body).toMatchObject({ total: PEERS, size: 5 });
    expect(cheap.body.items).toHaveLength(5);
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
