/**
 * Which SQL statements cost more when a scope holds more rows? (`npm run bench:scopes`; on
 * PostgreSQL: `node scripts/with-postgres.mjs npm run bench:scopes`)
 *
 * Runs one mixed workload (HTTP routes of v2 and v3, the worker with the fake model server of the
 * tests) twice, against two stores that differ only in how much each scope holds: with
 * BENCH_SCOPE_SMALL (1,000) and BENCH_SCOPE_LARGE (10,000) rows per scope, a session holds that many
 * messages (the workspace twice as many), the peers alice and bob are members of that many
 * sessions, each of the two collections about alice holds that many conclusions (with vectors),
 * and the workspace that many more peers. Pages are full at both sizes, so a statement that
 * reads what it returns costs the same in both; one that walks its scope costs about
 * LARGE / SMALL times as much. Every statement the server and its worker send is timed
 * (better-sqlite3 is synchronous, so a call's wall time is the statement's) and the table
 * lists them by their mean time in the large store, with the growth.
 *
 * It hooks SqliteDriver's prepared-statement cache (a private method), as a measurement tool
 * may; the server runs unchanged otherwise. On PostgreSQL (TEST_DATABASE_URL or DATABASE_URL
 * postgres://, as the tests take it) it hooks node-postgres' `Client.query` instead: a call's
 * time is then its round trip (with the wait for locks, as the worker runs beside the routes),
 * and the store is ANALYZEd after loading, as autovacuum would soon do.
 *
 * Environment: BENCH_SCOPE_SMALL, BENCH_SCOPE_LARGE, BENCH_SCOPE_ROUNDS (workload rounds, 3),
 * BENCH_SCOPE_ALL=1 (list every statement, not only those over 30 µs or growing 3 times).
 */
import type { Statement } from 'better-sqlite3';
import pg from 'pg';
import { createWorker } from '../src/runtime/runtime.js';
import { SqliteDriver } from '../src/storage/sqlite/sqlite-driver.js';
import type { ConclusionRecord, MessageRecord } from '../src/storage/store.js';
import { hashedVector, startFakeModelServer } from '../test/support/fake-model-server.js';
import { silent } from '../test/support/polling.js';
import { facts } from '../test/support/reasoning-harness.js';
import { buildTestApp, DIALECT } from '../test/support/test-app.js';

const SMALL = Number(process.env.BENCH_SCOPE_SMALL ?? 1_000);
const LARGE = Number(process.env.BENCH_SCOPE_LARGE ?? 10_000);
const ROUNDS = Number(process.env.BENCH_SCOPE_ROUNDS ?? 3);
const ALL = process.env.BENCH_SCOPE_ALL === '1';
const SHOW_CHARS = Number(process.env.BENCH_SCOPE_SQL_CHARS ?? 150);
const DIMENSIONS = 8;
const WS = 'scopes';

interface Timing {
  calls: number;
  ms: number;
  rows: number;
}

let timings = new Map<string, Timing>();
let recording = false;

// every statement goes through the driver's cache of prepared statements: time their calls
const driver = SqliteDriver.prototype as unknown as { statement(sql: string): Statement };
const prepare = driver.statement;
const timed = new WeakSet<Statement>();
driver.statement = function (this: unknown, sql: string): Statement {
  const statement = prepare.call(this, sql);
  if (timed.has(statement)) return statement;
  timed.add(statement);
  const methods = statement as unknown as Record<'all' | 'get' | 'run', (...params: unknown[]) => unknown>;
  for (const name of ['all', 'get', 'run'] as const) {
    const call = methods[name].bind(statement);
    methods[name] = (...params: unknown[]) => {
      if (!recording) return call(...params);
      const started = performance.now();
      const result = call(...params);
      record(sql, performance.now() - started, Array.isArray(result) ? result.length : result === undefined ? 0 : 1);
      return result;
    };
  }
  return statement;
};

function record(sql: string, ms: number, rows: number): void {
  const timing = timings.get(sql) ?? { calls: 0, ms: 0, rows: 0 };
  timing.calls++;
  timing.ms += ms;
  timing.rows += rows;
  timings.set(sql, timing);
}

// on PostgreSQL every statement goes through a client's query (the pool's own query passes a callback)
const client = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
const clientQuery = client.query;
client.query = function (this: unknown, ...args: unknown[]): unknown {
  // a text, or a query config (`{ name, text, values }`: the driver's prepared statements)
  const sql = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: unknown } | null | undefined)?.text;
  if (!recording || typeof sql !== 'string') return clientQuery.apply(this, args);
  const started = performance.now();
  const last = args.length - 1;
  const callback = args[last];
  if (typeof callback === 'function') {
    args[last] = (error: unknown, result: { rows?: unknown[] } | undefined) => {
      record(sql, performance.now() - started, result?.rows?.length ?? 0);
      return (callback as (...a: unknown[]) => unknown)(error, result);
    };
    return clientQuery.apply(this, args);
  }
  const result = clientQuery.apply(this, args) as Promise<{ rows?: unknown[] }>;
  return result.then((value) => {
    record(sql, performance.now() - started, value?.rows?.length ?? 0);
    return value;
  });
};

const WORDS = ['tea', 'coffee', 'garden', 'music', 'chess', 'hiking', 'dog', 'bread', 'train', 'river', 'lisbon', 'piano'];
const sentence = (i: number) => `I like ${WORDS[i % WORDS.length]} and ${WORDS[(i * 7 + 3) % WORDS.length]} number ${i}`;

/** The workload: each route once per round, in this order. */
const ROUTES: [string, string, unknown?][] = [
  ['POST', `/v3/workspaces/${WS}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I like green tea' }, { peer_id: 'bob', content: 'nice' }] }],
  ['POST', `/v3/workspaces/${WS}/search`, { query: 'tea garden', limit: 10 }],
  ['POST', `/v3/workspaces/${WS}/search`, { query: 'tea', limit: 10, filters: { peer_id: 'alice' } }],
  ['POST', `/v3/workspaces/${WS}/sessions/s1/search`, { query: 'tea like', limit: 10 }],
  ['POST', `/v3/workspaces/${WS}/peers/alice/search`, { query: 'tea', limit: 10 }],
  ['POST', `/v3/workspaces/${WS}/peers/list`, {}],
  ['POST', `/v3/workspaces/${WS}/peers/list?page=3`, {}],
  ['POST', `/v3/workspaces/${WS}/sessions/list`, {}],
  ['POST', `/v3/workspaces/${WS}/peers/alice/sessions`, {}],
  ['POST', `/v3/workspaces/${WS}/peers/bob/sessions?page=4`, {}],
  ['POST', `/v3/workspaces/${WS}/sessions/s1/messages/list`, {}],
  ['POST', `/v3/workspaces/${WS}/sessions/s1/messages/list?reverse=true&page=2`, {}],
  ['GET', `/v3/workspaces/${WS}/sessions/s1/context?tokens=500`],
  ['GET', `/v3/workspaces/${WS}/sessions/s1/context?tokens=500&peer_target=alice&search_query=tea`],
  ['GET', `/v3/workspaces/${WS}/sessions/s1/summaries`],
  ['GET', `/v3/workspaces/${WS}/queue/status`],
  ['POST', `/v3/workspaces/${WS}/conclusions/list`, { filters: { observer_id: 'alice', observed_id: 'alice' } }],
  ['POST', `/v3/workspaces/${WS}/conclusions/query`, { query: 'alice likes tea', filters: { observer: 'alice', observed: 'alice' } }],
  ['POST', `/v3/workspaces/${WS}/conclusions/query`, { query: 'alice likes tea', filters: { observer: 'alice', observed: 'alice', level: 'explicit' } }],
  ['POST', `/v3/workspaces/${WS}/conclusions`, { conclusions: [{ content: 'alice drinks tea', observer_id: 'alice', observed_id: 'alice', session_id: 's1' }] }],
  ['GET', `/v3/workspaces/${WS}/peers/alice/card`],
  ['POST', `/v3/workspaces/${WS}/peers/alice/representation`, {}],
  ['POST', `/v3/workspaces/${WS}/peers/alice/representation`, { search_query: 'tea', search_top_k: 5 }],
  ['POST', `/v3/workspaces/${WS}/peers/bob/representation`, { target: 'alice', include_most_frequent: true, max_conclusions: 25 }],
  ['POST', `/v3/workspaces/${WS}/peers/bob/chat`, { query: 'what does alice like?', target: 'alice' }],
  ['POST', `/v3/workspaces/${WS}/peers/alice/chat`, { query: 'what do I like?', session_id: 's1' }],
  ['PUT', `/v3/workspaces/${WS}/peers/alice`, { metadata: { a: 1 } }],
  ['PUT', `/v3/workspaces/${WS}/sessions/s1`, { metadata: { a: 1 } }],
  ['GET', `/v3/workspaces/${WS}/sessions/s1/peers`],
  ['GET', `/v3/workspaces/${WS}/peers/alice/context`],
  ['POST', `/v2/workspaces/${WS}/sessions/list`, {}],
  ['POST', `/v2/workspaces/${WS}/sessions/s1/messages/list`, {}],
  ['POST', `/v2/workspaces/${WS}/peers/alice/sessions`, {}],
  ['GET', `/v2/workspaces/${WS}/deriver/status`],
];

async function measure(size: number): Promise<Map<string, Timing>> {
  const fake = await startFakeModelServer({ dimensions: DIMENSIONS });
  fake.script.defaultChat((request) =>
    request.body.response_format ? facts('alice likes tea', 'alice lives in Porto') : request.body.tools ? { text: 'done' } : { text: 'a summary' },
  );
  const api = await buildTestApp({ ...fake.env(), EMBEDDING_VECTOR_DIMENSIONS: String(DIMENSIONS), DERIVER_FLUSH_ENABLED: 'true', WORKER_POLL_MS: '20' }, { ownDatabase: true });
  const worker = createWorker(api.config, api.database, silent);
  try {
    const store = api.database.store;
    const base = Date.now() - 86_400_000;
    const at = (i: number) => new Date(base + i);
    await store.workspaces.createIfAbsent({ id: WS, metadata: {}, configuration: {} }, at(0));
    await store.transaction(async (tx) => {
      await tx.peers.ensure(WS, ['alice', 'bob'], at(0));
      for (let start = 0; start < size; start += 500) await tx.peers.ensure(WS, Array.from({ length: Math.min(500, size - start) }, (_, k) => `p${start + k}`), at(0));
      for (let s = 0; s < size; s++) {
        await tx.sessions.createIfAbsent(WS, { id: `s${s}`, metadata: {}, configuration: {} }, at(s));
        await tx.sessions.saveMemberships(WS, `s${s}`, ['alice', 'bob'].map((peerId) => ({ peerId, configuration: {}, joinedAt: at(0), leftAt: null })));
      }
    });
    for (let start = 0; start < 2 * size; start += 1_000) {
      const messages: MessageRecord[] = [];
      const conclusions: ConclusionRecord[] = [];
      for (let i = start; i < Math.min(2 * size, start + 1_000); i++) {
        const peerId = i % 2 === 0 ? 'alice' : 'bob';
        messages.push({ id: `m${i}`, workspaceId: WS, sessionId: i < size ? 's1' : `s${2 + (i % 50)}`, peerId, content: sentence(i), metadata: {}, tokenCount: 8, createdAt: at(i) });
        conclusions.push({ id: `c${i}`, workspaceId: WS, observerId: peerId, observedId: 'alice', sessionId: 's1', content: `alice ${sentence(i)}`, level: 'explicit', sourceIds: null, timesDerived: 1 + (i % 5), createdAt: at(i) });
      }
      await store.transaction(async (tx) => {
        await tx.messages.insert(messages);
        await tx.vectors.putMessageChunks(messages.map((m) => ({ messageId: m.id, chunk: 0, workspaceId: WS, sessionId: m.sessionId, peerId: m.peerId, vector: hashedVector(m.content, DIMENSIONS) })));
        await tx.memory.insertConclusions(conclusions);
        await tx.vectors.putConclusions(conclusions.map((c) => ({ conclusionId: c.id, workspaceId: WS, observerId: c.observerId, observedId: c.observedId, level: c.level, sessionId: c.sessionId, vector: hashedVector(c.content, DIMENSIONS) })));
      });
    }
    if (api.database.driver.dialect === 'postgres') await api.database.driver.run('ANALYZE');
    worker.start();
    timings = new Map();
    recording = true;
    for (let round = 0; round < ROUNDS; round++) {
      for (const [method, url, body] of ROUTES) {
        const response = await api.request(method, url, body);
        if (response.status >= 400) throw new Error(`${method} ${url} answered ${response.status}: ${response.text.slice(0, 300)}`);
      }
      // the worker's jobs (deriver, summaries, embeddings) run between rounds
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    recording = false;
    return timings;
  } finally {
    recording = false;
    await worker.stop(2_000);
    await api.close();
    await fake.close();
  }
}

const small = await measure(SMALL);
const large = await measure(LARGE);
const rows = [...large]
  .filter(([sql]) => small.has(sql))
  .map(([sql, b]) => {
    const a = small.get(sql)!;
    const usA = (a.ms / a.calls) * 1000;
    const usB = (b.ms / b.calls) * 1000;
    return { sql, usA, usB, growth: usB / usA, calls: `${a.calls}/${b.calls}`, rows: `${Math.round(a.rows / a.calls)}/${Math.round(b.rows / b.calls)}` };
  })
  .sort((x, y) => y.usB - x.usB);
const shown = rows.filter((row) => ALL || row.usB >= 30 || row.growth >= 3);
console.log(`SQL statements of one workload (${ROUTES.length} routes x ${ROUNDS} rounds, and the worker) with ${SMALL.toLocaleString('en')} and ${LARGE.toLocaleString('en')} rows per scope (${DIALECT === 'postgres' ? 'PostgreSQL' : 'SQLite'}): ${rows.length} statements ran in both, ${shown.length} shown`);
console.log(`| mean µs at ${SMALL.toLocaleString('en')} | at ${LARGE.toLocaleString('en')} | growth | calls | rows per call | statement |`);
console.log('|---:|---:|---:|---|---|---|');
for (const row of shown) {
  const text = row.sql.replace(/\s+/g, ' ').trim();
  console.log(`| ${row.usA.toFixed(0)} | ${row.usB.toFixed(0)} | ${row.growth.toFixed(1)} | ${row.calls} | ${row.rows} | ${text.length > SHOW_CHARS ? `${text.slice(0, SHOW_CHARS)}...` : text} |`);
}
const growing = rows.filter((row) => row.growth >= 3 && row.usB >= 100);
console.log(`statements growing 3 times or more and over 100 µs at ${LARGE.toLocaleString('en')}: ${growing.length}`);
