/*
 * Message vectors in parts on PostgreSQL (migration 0048, storage/postgres/message-vector-parts.ts):
 * the open part sealed into parts indexed at once, parts merged, what is written meanwhile kept,
 * the step cancelled or put off without a trace, the worker running it, and a store of the
 * version before moved into parts by the migration. Small thresholds (parts of 20 vectors) unless
 * the test is of the defaults. Searches are checked against distances computed here.
 */
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { mountMetrics } from '../../src/http/shared/metrics.js';
import { UPKEEP_KIND, Worker } from '../../src/jobs/worker.js';
import { loadConfig } from '../../src/config/config.js';
import { databaseOptions, openDatabase } from '../../src/runtime/database.js';
import { migrate } from '../../src/storage/migrate.js';
import { graphBytes, levelOf, MERGE_WIDTH, messageVectorParts, SEAL_AT, type PartOptions } from '../../src/storage/postgres/message-vector-parts.js';
import { PostgresDriver } from '../../src/storage/postgres/postgres-driver.js';
import { PostgresVectorIndex } from '../../src/storage/postgres/postgres-vector-index.js';
import type { SqlDriver, SqlExecutor } from '../../src/storage/sql/driver.js';
import { SqlStore } from '../../src/storage/sql/sql-store.js';
import type { MessageChunkVector, Store } from '../../src/storage/store.js';
import { openFreshDatabase, openUnmigratedDriver } from '../support/fresh-database.js';
import { cosineDistance } from '../support/cosine.js';
import { DIALECT, TEST_DATABASE_URL } from '../support/test-app.js';

const NOW = new Date('2025-01-02T03:04:05.000Z');
const DIMENSIONS = 8;

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (opened.length > 0) await opened.pop()!.close();
});

/** A deterministic vector of message `i`, chunk `chunk` (spread over the sphere, never zero). */
function vectorOf(i: number, chunk = 0): number[] {
  return Array.from({ length: DIMENSIONS }, (_, d) => Math.sin((i + 1) * (d + 1) * 0.7 + chunk * 1.3) + (d === 0 ? 1.5 : 0));
}

interface Fixture {
  store: Store;
  driver: SqlDriver;
  ws: string;
  /** The index with small parts. */
  index: PostgresVectorIndex;
  /** What the test put: message id -> chunk -> vector. */
  put: Map<string, Map<number, number[]>>;
  putVectors(ids: number[], chunk?: number, vector?: (i: number) => number[]): Promise<void>;
}

async function fixture(messages: number, parts: Partial<PartOptions> = {}): Promise<Fixture> {
  const database = await openFreshDatabase();
  opened.push(database);
  const { store, driver } = database;
  const ws = 'parts';
  await store.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, NOW);
  await store.peers.ensure(ws, ['alice'], NOW);
  await store.sessions.createIfAbsent(ws, { id: 's1', metadata: {}, configuration: {} }, NOW);
  await store.messages.insert(
    Array.from({ length: messages }, (_, i) => ({ id: `m${i}`, workspaceId: ws, sessionId: 's1', peerId: 'alice', content: 'text', metadata: {}, tokenCount: 1, createdAt: NOW })),
  );
  const index = new PostgresVectorIndex(driver, undefined, driver, { sealAt: 20, mergeWidth: 2, ...parts });
  const put = new Map<string, Map<number, number[]>>();
  const putVectors = async (ids: number[], chunk = 0, vector = (i: number) => vectorOf(i, chunk)) => {
    const rows: MessageChunkVector[] = ids.map((i) => ({ messageId: `m${i}`, chunk, workspaceId: ws, sessionId: 's1', peerId: 'alice', vector: vector(i) }));
    await index.putMessageChunks(rows);
    for (const row of rows) (put.get(row.messageId) ?? put.set(row.messageId, new Map()).get(row.messageId)!).set(chunk, Array.from(row.vector));
  };
  return { store, driver, ws, index, put, putVectors };
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

/** `executor` with its `run` replaced by `run` (given the real one), its other methods its own. */
function withRun<T extends SqlExecutor>(executor: T, run: (sql: string, params: readonly unknown[] | undefined, real: SqlExecutor['run']) => Promise<number>): T {
  return new Proxy(executor, {
    get(target, key) {
      if (key === 'run') return (sql: string, params?: readonly unknown[]) => run(sql, params, (sql, params) => target.run(sql, params));
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The URL of the fixture's database on connections whose maintenance_work_mem is 1 MB (PostgreSQL's least). */
async function smallMemoryUrl(f: Fixture): Promise<string> {
  const { db } = (await f.driver.get<{ db: string }>('SELECT current_database() AS db'))!;
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${db}`;
  url.searchParams.set('options', '-c maintenance_work_mem=1MB');
  return url.toString();
}

/** The k nearest messages by the vectors put, each at its nearest chunk. */
function expectedNearest(put: Fixture['put'], query: number[], k: number): { messageId: string; distance: number }[] {
  const nearest = [...put].map(([messageId, chunks]) => ({ messageId, distance: Math.min(...[...chunks.values()].map((v) => cosineDistance(query, v))) }));
  return nearest.sort((a, b) => a.distance - b.distance).slice(0, k);
}

async function checkSearch(f: Fixture, query: number[], k = 10): Promise<void> {
  const found = await f.index.nearestMessages({ workspaceId: f.ws, vector: query, k });
  const expected = expectedNearest(f.put, query, k);
  expect(found.map((n) => n.messageId)).toEqual(expected.map((n) => n.messageId));
  for (const [i, n] of found.entries()) expect(n.distance).toBeCloseTo(expected[i].distance, 5);
}

/** The tables attached to message_vectors, by name, with whether each has an HNSW index. */
async function attached(driver: SqlDriver): Promise<Map<string, { rows: number; hnsw: boolean }>> {
  const rows = await driver.all<{ name: string; hnsw: boolean }>(
    `SELECT c.relname AS name, EXISTS (SELECT 1 FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_am a ON a.oid = x.relam WHERE i.indrelid = c.oid AND a.amname = 'hnsw') AS hnsw
     FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid WHERE h.inhparent = 'message_vectors'::regclass ORDER BY c.relname`,
  );
  const result = new Map<string, { rows: number; hnsw: boolean }>();
  for (const row of rows) result.set(row.name, { rows: Number((await driver.get<{ n: string }>(`SELECT count(*) AS n FROM ${row.name}`))?.n), hnsw: row.hnsw });
  return result;
}

/** Tables named like parts that are not attached (what a step that failed could leave). */
async function strayParts(driver: SqlDriver): Promise<string[]> {
  const rows = await driver.all<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c WHERE c.relkind = 'r' AND c.relname LIKE 'message\\_vectors\\_%' AND c.relname <> 'message_vectors_open'
     AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = c.oid)`,
  );
  return rows.map((row) => row.name);
}

describe.runIf(DIALECT === 'postgres')('message vectors in parts (PostgreSQL)', () => {
  it('seals the open part into parts indexed at once, merges parts of a level, and searches across them all', async () => {
    const f = await fixture(200);
    await f.putVectors(range(0, 19));
    // 19 vectors: under the seal's 20, nothing to do
    expect(await f.index.upkeep()).toBeUndefined();
    await f.putVectors(range(19, 30));
    const first = await f.index.upkeep();
    expect(first).toMatchObject({ kind: 'sealed', part: { rows: 30, level: 0 }, from: 1 });
    await checkSearch(f, vectorOf(7));
    expect(await f.index.upkeep()).toBeUndefined();

    await f.putVectors(range(30, 55));
    expect(await f.index.upkeep()).toMatchObject({ kind: 'sealed', part: { rows: 25, level: 0 } });
    // two parts of level 0: merged into one of level 1
    expect(await f.index.upkeep()).toMatchObject({ kind: 'merged', part: { rows: 55, level: 1 }, from: 2 });
    expect(await f.index.upkeep()).toBeUndefined();

    await f.putVectors(range(55, 62));
    const parts = await messageVectorParts(f.driver);
    expect(parts).toEqual([{ name: parts[0].name, lo: undefined, hi: 55, level: 1, rows: 55 }].map((p) => ({ ...p, hi: expect.any(Number) })));
    const tables = await attached(f.driver);
    // the catalog's parts are what is attached, each with its HNSW index; the open part has none
    expect([...tables.keys()].sort()).toEqual([parts[0].name, 'message_vectors_open'].sort());
    expect(tables.get(parts[0].name)).toEqual({ rows: 55, hnsw: true });
    expect(tables.get('message_vectors_open')).toEqual({ rows: 7, hnsw: false });
    // a search reads the sealed part's index and the open part's rows together
    for (const i of [3, 40, 58, 61]) await checkSearch(f, vectorOf(i, 1));
    const plan = (await f.driver.all<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT message_pk FROM message_vectors WHERE workspace_id = 'parts' ORDER BY embedding <=> '[${vectorOf(3).join(',')}]'::vector LIMIT 10`,
    )).map((row) => row['QUERY PLAN']).join('\n');
    expect(plan).toMatch(/message_vectors_open/);
    expect(plan).toMatch(new RegExp(parts[0].name));
    expect(await strayParts(f.driver)).toEqual([]);
  });

  it('vacuums the open part after a seal, so searches do not read the rows it sealed', async () => {
    const f = await fixture(40);
    const openPages = async () => Number((await f.driver.get<{ pages: string }>("SELECT pg_relation_size('message_vectors_open') / current_setting('block_size')::int AS pages"))?.pages);
    const deadRows = async () => Number((await f.driver.get<{ n: string }>("SELECT n_dead_tup AS n FROM pg_stat_user_tables WHERE relname = 'message_vectors_open'"))?.n);
    await f.putVectors(range(0, 30));
    expect(await openPages()).toBeGreaterThan(0);
    expect(await f.index.upkeep()).toMatchObject({ kind: 'sealed', part: { rows: 30 } });
    // every row was sealed: the vacuum freed the pages and gave them back (the table's end is empty)
    expect(await openPages()).toBe(0);
    expect(await deadRows()).toBe(0);
    // new vectors land in the open part again, and are found with the sealed ones
    await f.putVectors(range(30, 40));
    expect(await openPages()).toBeGreaterThan(0);
    await checkSearch(f, vectorOf(35, 1));
  });

  it('gives a part sealed large at once the level of its size, so small parts merge among themselves', async () => {
    const f = await fixture(300);
    // vectors that came in while no worker ran: one seal of 90 (four and a half seals' worth)
    await f.putVectors(range(0, 90));
    expect(await f.index.upkeep()).toMatchObject({ kind: 'sealed', part: { rows: 90, level: 2 } });
    await f.putVectors(range(90, 115));
    expect(await f.index.upkeep()).toMatchObject({ kind: 'sealed', part: { rows: 25, level: 0 } });
    await f.putVectors(range(115, 140));
    expect(await f.index.upkeep()).toMatchObject({ kind: 'sealed', part: { rows: 25, level: 0 } });
    // the two small ones merge; the large one is left as it is
    expect(await f.index.upkeep()).toMatchObject({ kind: 'merged', part: { rows: 50, level: 1 }, from: 2 });
    expect(await f.index.upkeep()).toBeUndefined();
    expect((await messageVectorParts(f.driver)).map((part) => [part.rows, part.level])).toEqual([
      [90, 2],
      [50, 1],
    ]);
    await checkSearch(f, vectorOf(120));
    // the levels as the migration computes them for the store's own thresholds
    expect([4999, 5000, 19_999, 20_000, 80_000, 1_000_000].map((rows) => levelOf(rows, { sealAt: SEAL_AT, mergeWidth: MERGE_WIDTH }))).toEqual([0, 0, 0, 1, 2, 3]);
  });

  it('keeps a vector replaced in a sealed part in its place, and a message deleted takes its vectors from every part', async () => {
    const f = await fixture(60);
    await f.putVectors(range(0, 25));
    await f.index.upkeep();
    await f.putVectors(range(25, 30));
    // a sealed message's vector replaced and a second chunk of it added: into its part, once
    await f.putVectors([4], 0, () => vectorOf(100));
    await f.putVectors([4], 1, () => vectorOf(101));
    const [part] = await messageVectorParts(f.driver);
    const rowsOf4 = await f.driver.all<{ table: string; chunk: number }>(
      "SELECT v.tableoid::regclass::text AS table, v.chunk FROM message_vectors v JOIN messages m ON m.pk = v.message_pk WHERE m.id = 'm4' ORDER BY v.chunk",
    );
    expect(rowsOf4).toEqual([{ table: part.name, chunk: 0 }, { table: part.name, chunk: 1 }]);
    await checkSearch(f, vectorOf(100));

    // deleted: one message in the sealed part, one in the open part
    await f.driver.run("DELETE FROM messages WHERE workspace_id = 'parts' AND id IN ('m4', 'm27')");
    f.put.delete('m4');
    f.put.delete('m27');
    const left = await f.driver.get<{ n: string }>('SELECT count(*) AS n FROM message_vectors');
    expect(Number(left?.n)).toBe(28);
    await checkSearch(f, vectorOf(100));
  });

  it('keeps what was written to the range while the part was built, and the writes did not wait for the step', async () => {
    let wrote = false;
    const f: Fixture = await fixture(60, {
      async beforeLock() {
        // the step's transaction is open, its part built: these writes must not wait for it
        await f.putVectors([2], 0, () => vectorOf(200)); // replaced
        await f.putVectors([3], 1); // a chunk added in the range
        await f.driver.run("DELETE FROM messages WHERE workspace_id = 'parts' AND id = 'm5'"); // gone
        f.put.delete('m5');
        wrote = true;
      },
    });
    await f.putVectors(range(0, 24));
    const step = await f.index.upkeep();
    expect(wrote).toBe(true);
    expect(step).toMatchObject({ kind: 'sealed', part: { rows: 24 } });
    const tables = await attached(f.driver);
    expect(tables.get('message_vectors_open')?.rows).toBe(0);
    await checkSearch(f, vectorOf(200));
    await checkSearch(f, vectorOf(3, 1));
    const m5 = await f.driver.get<{ n: string }>("SELECT count(*) AS n FROM message_vectors v WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.pk = v.message_pk)");
    expect(Number(m5?.n)).toBe(0);
  });

  it('is put off without a trace when its lock stays busy, and rolled back when cancelled', async () => {
    const f = await fixture(60, { lockWaitMs: 150 });
    await f.putVectors(range(0, 24));
    // a transaction writing to the open part holds it past the step's wait
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let writing!: () => void;
    const started = new Promise<void>((resolve) => (writing = resolve));
    const writer = f.store.transaction(async (tx) => {
      await tx.vectors.putMessageChunks([{ messageId: 'm30', chunk: 0, workspaceId: f.ws, sessionId: 's1', peerId: 'alice', vector: vectorOf(30) }]);
      writing();
      await held;
    });
    await started;
    const busy = await f.index.upkeep();
    expect(busy?.kind).toBe('busy');
    expect(await messageVectorParts(f.driver)).toEqual([]);
    expect(await strayParts(f.driver)).toEqual([]);
    release();
    await writer;
    f.put.set('m30', new Map([[0, vectorOf(30)]]));

    // cancelled while it builds, the cancel slow to get a connection (a busy pool)
    const abort = new AbortController();
    const slowCancels = withRun(f.driver, async (sql, params, run) => {
      if (sql.includes('pg_cancel_backend')) await new Promise((resolve) => setTimeout(resolve, 150));
      return run(sql, params);
    });
    const cancelling = new PostgresVectorIndex(f.driver, undefined, slowCancels, {
      sealAt: 20,
      mergeWidth: 2,
      lockWaitMs: 150,
      async beforeLock() {
        abort.abort(new Error('stop'));
      },
    });
    await expect(cancelling.upkeep(abort.signal)).rejects.toThrow();
    // the cancel was sent before the step's connection went back to the pool: the statements
    // run next on the pool's connections (the step's first) are not the ones cancelled
    await Promise.all(range(0, 3).map(() => f.driver.get('SELECT pg_sleep(0.3)')));
    expect(await messageVectorParts(f.driver)).toEqual([]);
    expect(await strayParts(f.driver)).toEqual([]);
    expect((await attached(f.driver)).get('message_vectors_open')?.rows).toBe(25);

    // and then done
    expect(await f.index.upkeep()).toMatchObject({ kind: 'sealed', part: { rows: 25 } });
    await checkSearch(f, vectorOf(30));
  });

  it("gives a part's HNSW build the memory its graph needs, at most VECTOR_BUILD_MEMORY_MB, never less than the role's", async () => {
    const f = await fixture(1100);
    await f.putVectors(range(0, 1100));
    // connections whose maintenance_work_mem is 1 MB (PostgreSQL's least): 1,100 vectors of 8 dimensions need more
    const needKb = Math.ceil(graphBytes(1100, DIMENSIONS) / 1024);
    expect(needKb).toBeGreaterThan(1024);
    const small = new PostgresDriver(await smallMemoryUrl(f), { maxConnections: 3 });
    opened.push(small);
    const setting = async (tx: SqlExecutor) =>
      Number((await tx.get<{ setting: string }>("SELECT setting FROM pg_settings WHERE name = 'maintenance_work_mem'"))!.setting);
    /** maintenance_work_mem (kB) while a seal's index was built with `buildMemoryMb`; the step then rolled back. */
    const during = async (buildMemoryMb: number): Promise<number> => {
      let seen = NaN;
      const index = new PostgresVectorIndex(small, undefined, small, {
        sealAt: 1000,
        buildMemoryMb,
        async beforeLock(tx) {
          seen = await setting(tx);
          throw new Error('looked');
        },
      });
      await expect(index.upkeep()).rejects.toThrow('looked');
      return seen;
    };
    expect(await during(512)).toBe(needKb);
    // capped below the need: the role's setting is not lowered
    expect(await during(1)).toBe(1024);
    expect(await during(0)).toBe(1024);
    // set for the step's transaction alone: the pool's connections are at 1 MB again
    expect(await Promise.all(range(0, 3).map(() => small.transaction(async (tx) => (await tx.get('SELECT pg_sleep(0.05)'), setting(tx)))))).toEqual([1024, 1024, 1024]);
    // and the step goes through: the part attached with its HNSW index (whether an approximate
    // search over 1,100 of these vectors finds a given one depends on the graph's random levels:
    // one CI run in several missed it, so the search is not what this checks)
    const step = await new PostgresVectorIndex(small, undefined, small, { sealAt: 1000 }).upkeep();
    expect(step).toMatchObject({ kind: 'sealed', part: { rows: 1100 } });
    expect((await attached(f.driver)).get((step as { part: { name: string } }).part.name)).toEqual({ rows: 1100, hnsw: true });
    expect((await f.index.nearestMessages({ workspaceId: f.ws, vector: vectorOf(500), k: 10 })).length).toBe(10);
  });

  it('takes VECTOR_BUILD_MEMORY_MB from the settings, through openDatabase to the upkeep', async () => {
    // a seal at the store's own threshold
    const f = await fixture(SEAL_AT);
    await f.putVectors(range(0, SEAL_AT));
    const url = await smallMemoryUrl(f);
    /** The maintenance_work_mem statements of a seal with the setting at `mb`, stopped at its HNSW build (rolled back). */
    const setBy = async (mb: string): Promise<string[]> => {
      const config = loadConfig({ DATABASE_URL: url, VECTOR_BUILD_MEMORY_MB: mb }, '/nonexistent/.env');
      const database = await openDatabase(config.databaseUrl, databaseOptions(config));
      opened.push(database.driver);
      const seen: string[] = [];
      const transaction = database.driver.transaction.bind(database.driver);
      database.driver.transaction = (fn) =>
        transaction((tx) =>
          fn(
            withRun(tx, async (sql, params, run) => {
              if (sql.includes('maintenance_work_mem')) seen.push(sql);
              if (sql.includes('USING hnsw')) throw new Error('stopped at the build');
              return run(sql, params);
            }),
          ),
        );
      await expect(database.store.vectors.upkeep!()).rejects.toThrow('stopped at the build');
      return seen;
    };
    expect(await setBy('512')).toEqual([`SET LOCAL maintenance_work_mem = '${Math.ceil(graphBytes(SEAL_AT, DIMENSIONS) / 1024)}kB'`]);
    expect(await setBy('0')).toEqual([]);
  });

  it('tells its layout, and /metrics shows it: parts by level, vectors sealed and open', async () => {
    const f = await fixture(200);
    const layout = () => f.index.layout();
    expect(await layout()).toEqual({ levels: [], openRows: 0 });
    await f.putVectors(range(0, 30));
    await f.index.upkeep();
    await f.putVectors(range(30, 55));
    await f.index.upkeep();
    // two parts of level 0 (30 and 25 vectors), not merged yet, and 3 vectors open
    await f.putVectors(range(55, 58));
    expect(await layout()).toEqual({ levels: [{ level: 0, parts: 2, rows: 55 }], openRows: 3 });
    expect(await f.index.upkeep()).toMatchObject({ kind: 'merged' });
    await f.putVectors(range(58, 80));
    expect(await f.index.upkeep()).toMatchObject({ kind: 'sealed', part: { rows: 25 } });
    await f.putVectors(range(80, 84));
    expect(await layout()).toEqual({
      levels: [
        { level: 0, parts: 1, rows: 25 },
        { level: 1, parts: 1, rows: 55 },
      ],
      openRows: 4,
    });
    const parts = await messageVectorParts(f.driver);
    const tables = await attached(f.driver);
    expect(parts.map((p) => tables.get(p.name)?.rows)).toEqual(parts.map((p) => p.rows));

    // the store's own index reads the same catalog: its layout is what /metrics shows
    const app = Fastify();
    mountMetrics(app, f.store, f.driver, true);
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    await app.close();
    const sample = (name: string, labels: string) => Number(new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(sample('engram_message_vector_parts', 'level="0"')).toBe(1);
    expect(sample('engram_message_vector_parts', 'level="1"')).toBe(1);
    expect(sample('engram_message_vectors', 'part="sealed"')).toBe(80);
    expect(sample('engram_message_vectors', 'part="open"')).toBe(4);
  });

  it('empties with clear: parts dropped, the size forgotten', async () => {
    const f = await fixture(60);
    await f.putVectors(range(0, 24));
    await f.index.upkeep();
    expect((await messageVectorParts(f.driver)).length).toBe(1);
    await f.index.clear();
    expect(await messageVectorParts(f.driver)).toEqual([]);
    expect([...(await attached(f.driver)).keys()]).toEqual(['message_vectors_open']);
    expect(await f.index.dimensions()).toBeUndefined();
    // vectors of another size can be stored again, and sealed
    f.put.clear();
    await f.putVectors(range(0, 21), 0, (i) => [...vectorOf(i), 1, 2]);
    expect(await f.index.upkeep()).toMatchObject({ kind: 'sealed', part: { rows: 21 } });
    await checkSearch(f, [...vectorOf(9), 1, 2]);
  });

  it('is run by the worker beside its claims, at the store\'s own thresholds', async () => {
    const f = await fixture(SEAL_AT + 10);
    await f.store.vectors.putMessageChunks(
      range(0, SEAL_AT + 10).map((i) => ({ messageId: `m${i}`, chunk: 0, workspaceId: f.ws, sessionId: 's1', peerId: 'alice', vector: vectorOf(i) })),
    );
    const logged: string[] = [];
    const logger = { info: (_: object, message: string) => void logged.push(message), warn: () => undefined, error: (_: object, message: string) => void logged.push(message) };
    const attempts: { kind: string; outcome: string }[] = [];
    const onAttempt = ({ kind, outcome }: { kind: string; outcome: string }) => void attempts.push({ kind, outcome });
    const worker = new Worker(f.store, {}, { concurrency: 1, pollMs: 20, retryBaseMs: 10, retryMaxMs: 100, logger, onAttempt });
    worker.start();
    try {
      await expect.poll(() => messageVectorParts(f.driver), { timeout: 30_000, interval: 100 }).toHaveLength(1);
    } finally {
      await worker.stop(1000);
    }
    expect((await messageVectorParts(f.driver))[0].rows).toBe(SEAL_AT + 10);
    expect(logged).toContain('message vectors sealed');
    // counted with the job attempts; the rounds with nothing due are not
    expect(attempts).toEqual([{ kind: UPKEEP_KIND, outcome: 'done' }]);
  });
});

describe.runIf(DIALECT === 'postgres')('migration 0048 (PostgreSQL)', () => {
  it('makes the vectors a store held the first sealed part, with their HNSW index, and keeps them searchable', async () => {
    const driver = await openUnmigratedDriver();
    try {
      await migrate(driver, { through: '0047_workspace_statistics' });
      const before = SqlStore.over(driver);
      await before.workspaces.createIfAbsent({ id: 'w', metadata: {}, configuration: {} }, NOW);
      await before.peers.ensure('w', ['alice'], NOW);
      await before.sessions.createIfAbsent('w', { id: 's1', metadata: {}, configuration: {} }, NOW);
      await before.messages.insert(range(0, 40).map((i) => ({ id: `m${i}`, workspaceId: 'w', sessionId: 's1', peerId: 'alice', content: 't', metadata: {}, tokenCount: 1, createdAt: NOW })));
      // the version before: vectors in one table, its size fixed and its HNSW index made
      await driver.run(`ALTER TABLE message_vectors ALTER COLUMN embedding TYPE vector(${DIMENSIONS})`);
      await driver.run('CREATE INDEX message_vectors_hnsw ON message_vectors USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)');
      await driver.run(
        `INSERT INTO message_vectors (message_pk, chunk, workspace_id, session_id, peer_id, embedding)
         SELECT m.pk, 0, m.workspace_id, m.session_id, m.peer_id, r.e::vector FROM messages m JOIN unnest(?::text[], ?::text[]) AS r(id, e) ON r.id = m.id`,
        [range(0, 30).map((i) => `m${i}`), range(0, 30).map((i) => `[${vectorOf(i).join(',')}]`)],
      );
      await driver.run("INSERT INTO store_settings (name, value) VALUES ('vector_dimensions', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value", [String(DIMENSIONS)]);

      await migrate(driver);
      const parts = await messageVectorParts(driver);
      expect(parts).toEqual([{ name: 'message_vectors_first', lo: undefined, hi: expect.any(Number), level: 0, rows: 30 }]);
      const tables = await attached(driver);
      expect(tables.get('message_vectors_first')).toEqual({ rows: 30, hnsw: true });
      expect(tables.get('message_vectors_open')).toEqual({ rows: 0, hnsw: false });

      const index = new PostgresVectorIndex(driver, undefined, driver, { sealAt: 5, mergeWidth: 2 });
      const put: Fixture['put'] = new Map(range(0, 30).map((i) => [`m${i}`, new Map([[0, vectorOf(i)]])]));
      await index.putMessageChunks(range(30, 40).map((i) => ({ messageId: `m${i}`, chunk: 0, workspaceId: 'w', sessionId: 's1', peerId: 'alice', vector: vectorOf(i) })));
      for (const i of range(30, 40)) put.set(`m${i}`, new Map([[0, vectorOf(i)]]));
      const found = await index.nearestMessages({ workspaceId: 'w', vector: vectorOf(33), k: 10 });
      expect(found.map((n) => n.messageId)).toEqual(expectedNearest(put, vectorOf(33), 10).map((n) => n.messageId));
      // the new vectors sealed after the first part; a message deleted takes its vector with it
      // (10 vectors are two seals' worth at these thresholds: level 1)
      expect(await index.upkeep()).toMatchObject({ kind: 'sealed', part: { rows: 10, level: 1 } });
      await driver.run("DELETE FROM messages WHERE id IN ('m1', 'm35')");
      expect(Number((await driver.get<{ n: string }>('SELECT count(*) AS n FROM message_vectors'))?.n)).toBe(38);
    } finally {
      await driver.discard();
    }
  });
});
