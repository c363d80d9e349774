import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { databaseOptions, openDatabase } from '../../src/runtime/database.js';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { ReadThread, ReadThreadUnavailable } from '../../src/storage/sqlite/read-thread.js';
import { SqliteDriver } from '../../src/storage/sqlite/sqlite-driver.js';
import type { MessageVectorQuery, Store } from '../../src/storage/store.js';
import { seededRandom } from '../../bench/corpus.js';
import { startFakeModelServer } from '../support/fake-model-server.js';
import { buildTestApp, DIALECT, uniqueId } from '../support/test-app.js';

/*
 * SQLite's scans of vectors run on a connection in a thread of their own
 * (SQLITE_VECTOR_SCANS=thread, the default for a file), so a long scan holds no other work of the
 * process; in a transaction, in memory and with SQLITE_VECTOR_SCANS=inline they run on the
 * server connection.
 */

const dir = mkdtempSync(join(tmpdir(), 'engram-read-thread-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NOW = new Date('2025-01-02T03:04:05.000Z');
const DIMENSIONS = 16;

async function openWith(env: Record<string, string>, file: string) {
  const config = loadConfig({ DATABASE_URL: join(dir, file), ...env }, '/nonexistent/.env');
  const database = await openDatabase(config.databaseUrl, databaseOptions(config));
  if (!(database.driver instanceof SqliteDriver)) throw new Error('not SQLite');
  return { store: database.store, driver: database.driver };
}

/** Seconds of work for SQLite alone: a count to `n` through a recursive query (about 100 ms for 2,000,000 here). */
const SLOW_COUNT = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) SELECT count(*) AS n FROM c';

/** How often a 1 ms timer fired while `work` ran, and how long it took. */
async function ticksDuring(work: () => Promise<unknown>): Promise<{ ticks: number; ms: number }> {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  // the timer's first turn comes before the work starts
  await new Promise((resolve) => setTimeout(resolve, 5));
  ticks = 0;
  const started = performance.now();
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return { ticks, ms: performance.now() - started };
}

/** Peers, sessions, messages with 1 to 3 random chunks each and conclusions in two collections. */
async function fill(store: Store, ws: string): Promise<void> {
  const random = seededRandom(7);
  const vector = () => Array.from({ length: DIMENSIONS }, () => random() * 2 - 1);
  await store.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, NOW);
  await store.peers.ensure(ws, ['alice', 'bob', 'carol'], NOW);
  for (let s = 0; s < 12; s++) {
    const sessionId = `s${s}`;
    await store.sessions.createIfAbsent(ws, { id: sessionId, metadata: {}, configuration: {} }, NOW);
    await store.sessions.saveMemberships(ws, sessionId, [{ peerId: s % 2 === 0 ? 'alice' : 'bob', configuration: {}, joinedAt: NOW, leftAt: null }]);
    for (let m = 0; m < 40; m++) {
      const id = `m${s}-${m}`;
      const peerId = ['alice', 'bob', 'carol'][m % 3];
      await store.messages.insert([{ id, workspaceId: ws, sessionId, peerId, content: 'text', metadata: {}, tokenCount: 1, createdAt: NOW }]);
      const chunks = 1 + (m % 3);
      await store.vectors.putMessageChunks(Array.from({ length: chunks }, (_, chunk) => ({ messageId: id, chunk, workspaceId: ws, sessionId, peerId, vector: vector() })));
    }
  }
  for (let c = 0; c < 200; c++) {
    const observedId = c % 2 === 0 ? 'bob' : 'carol';
    const id = `c${c}`;
    const level = c % 4 === 0 ? 'deductive' : 'explicit';
    await store.memory.insertConclusions([
      { id, workspaceId: ws, observerId: 'alice', observedId, sessionId: null, content: `conclusion ${c}`, level, sourceIds: null, timesDerived: 1, createdAt: NOW },
    ]);
    await store.vectors.putConclusions([{ conclusionId: id, workspaceId: ws, observerId: 'alice', observedId, level, sessionId: null, vector: vector() }]);
  }
}

describe.skipIf(DIALECT === 'postgres')('SQLite vector scans in a read thread', () => {
  it('answer every kind of search exactly as the server connection does, from the thread', async () => {
    const ws = uniqueId('ws');
    const { store, driver } = await openWith({}, 'answers.db');
    const inline = await openWith({ SQLITE_VECTOR_SCANS: 'inline' }, 'answers.db');
    try {
      await fill(store, ws);
      expect(driver.threadReads).toEqual({ done: 0, failed: 0 });
      expect(inline.driver.threadReads).toBeUndefined();
      const random = seededRandom(11);
      const query = () => Array.from({ length: DIMENSIONS }, () => random() * 2 - 1);
      const messageQueries: Omit<MessageVectorQuery, 'vector'>[] = [
        { workspaceId: ws, k: 10 },
        { workspaceId: ws, k: 3 },
        { workspaceId: ws, sessionId: 's3', k: 10 },
        { workspaceId: ws, peerId: 'bob', k: 10 },
        { workspaceId: ws, sessionIds: ['s1', 's2'], k: 10 },
        { workspaceId: ws, sessionIds: Array.from({ length: 10 }, (_, s) => `s${s}`), k: 10 },
        { workspaceId: ws, memberOf: 'alice', k: 10 },
      ];
      let reads = 0;
      for (const shape of messageQueries) {
        const vector = query();
        const threaded = await store.vectors.nearestMessages({ ...shape, vector });
        expect(threaded.length).toBeGreaterThan(0);
        expect(threaded).toEqual(await inline.store.vectors.nearestMessages({ ...shape, vector }));
        reads++;
      }
      for (const levels of [undefined, ['deductive' as const]]) {
        const vector = query();
        const search = { workspaceId: ws, observerId: 'alice', observedId: 'bob', vector, k: 7, levels };
        const threaded = await store.vectors.nearestConclusions(search);
        expect(threaded).toHaveLength(7);
        expect(threaded).toEqual(await inline.store.vectors.nearestConclusions(search));
        reads++;
      }
      // every scan went to the thread
      expect(driver.threadReads).toEqual({ done: reads, failed: 0 });
    } finally {
      await driver.close();
      await inline.driver.close();
    }
  });

  it('leave the event loop free while they run, where the server connection holds it', async () => {
    const { driver } = await openWith({}, 'loop.db');
    try {
      const aside = await ticksDuring(async () => expect(await driver.allAside<{ n: number }>(SLOW_COUNT, [2_000_000])).toEqual([{ n: 2_000_000 }]));
      const inline = await ticksDuring(async () => expect(await driver.all<{ n: number }>(SLOW_COUNT, [2_000_000])).toEqual([{ n: 2_000_000 }]));
      // the same statement on the event loop: no timer runs until it is over
      expect(inline.ticks).toBe(0);
      expect(inline.ms).toBeGreaterThan(20);
      // in the thread the timer keeps firing (at least every few ms of a scan that long)
      expect(aside.ticks).toBeGreaterThan(Math.min(5, aside.ms / 10));
    } finally {
      await driver.close();
    }
  });

  it('see the transaction\'s own writes inside it, and only committed ones outside', async () => {
    const ws = uniqueId('ws');
    const { store, driver } = await openWith({}, 'transaction.db');
    try {
      await fill(store, ws);
      const vector = Array.from({ length: DIMENSIONS }, (_, i) => (i === 0 ? 1 : 0));
      const chunks = 'SELECT count(*) AS n FROM message_embeddings';
      const [{ n: committed }] = await driver.all<{ n: number }>(chunks);
      let outside: { n: number }[] = [];
      await store.transaction(async (tx) => {
        await tx.messages.insert([{ id: 'fresh', workspaceId: ws, sessionId: 's0', peerId: 'alice', content: 'text', metadata: {}, tokenCount: 1, createdAt: NOW }]);
        await tx.vectors.putMessageChunks([{ messageId: 'fresh', chunk: 0, workspaceId: ws, sessionId: 's0', peerId: 'alice', vector }]);
        // in the transaction: on its connection, so its own chunk is found (at distance 0)
        const inside = await tx.vectors.nearestMessages({ workspaceId: ws, vector, k: 1 });
        expect(inside[0]).toEqual({ messageId: 'fresh', distance: expect.closeTo(0, 5) });
        // a read aside while it is open: the last commit, without waiting for the transaction
        // (a read through the driver itself would wait for it to end)
        outside = await driver.allAside<{ n: number }>(chunks);
      });
      expect(outside).toEqual([{ n: committed }]);
      expect((await store.vectors.nearestMessages({ workspaceId: ws, vector, k: 1 }))[0].messageId).toBe('fresh');
    } finally {
      await driver.close();
    }
  });

  it('report a statement\'s error as the server connection would, and never write', async () => {
    const { driver } = await openWith({}, 'errors.db');
    try {
      await driver.run('CREATE TABLE kept (n INTEGER)');
      await expect(driver.allAside('SELECT * FROM missing_table')).rejects.toMatchObject({ message: 'no such table: missing_table', code: 'SQLITE_ERROR' });
      await expect(driver.allAside('INSERT INTO kept (n) VALUES (1) RETURNING n')).rejects.toThrow(/readonly|query_only|read-only/i);
      expect(await driver.all('SELECT * FROM kept')).toEqual([]);
      // the thread is still there
      expect(await driver.allAside('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      expect(driver.threadReads).toEqual({ done: 3, failed: 0 });
    } finally {
      await driver.close();
    }
  });

  it('read without a memory map, where the server connection maps the file: each commit there would drop the thread\'s map', async () => {
    const { driver } = await openWith({ SQLITE_MMAP_MB: '64' }, 'map.db');
    try {
      await driver.run('CREATE TABLE kept (n INTEGER)');
      expect(await driver.all('PRAGMA mmap_size')).toEqual([{ mmap_size: 64 * 1024 * 1024 }]);
      expect(await driver.allAside('PRAGMA mmap_size')).toEqual([{ mmap_size: 0 }]);
      expect(driver.threadReads?.done).toBe(1);
    } finally {
      await driver.close();
    }
  });

  it('run on the server connection in memory and with SQLITE_VECTOR_SCANS=inline', async () => {
    const memory = new SqliteDriver(':memory:');
    const { driver } = await openWith({ SQLITE_VECTOR_SCANS: 'inline' }, 'inline.db');
    try {
      for (const each of [memory, driver]) {
        expect(each.threadReads).toBeUndefined();
        const { ticks } = await ticksDuring(() => each.allAside(SLOW_COUNT, [500_000]));
        expect(ticks).toBe(0);
      }
    } finally {
      await memory.close();
      await driver.close();
    }
    expect(() => loadConfig({ SQLITE_VECTOR_SCANS: 'elsewhere' }, '/nonexistent/.env')).toThrow(ConfigError);
    expect(() => loadConfig({ SQLITE_VECTOR_SCANS: 'elsewhere' }, '/nonexistent/.env')).toThrow(/SQLITE_VECTOR_SCANS must be one of thread, inline, got "elsewhere"/);
  });

  it('go back to the server connection, once and said, when the thread fails', async () => {
    const failures: string[] = [];
    // a file that does not exist: the thread cannot open it
    const thread = new ReadThread(join(dir, 'missing', 'gone.db'), { cacheKb: 1024, mmapBytes: 0 }, (message) => failures.push(message));
    try {
      await expect(thread.all('SELECT 1', [])).rejects.toBeInstanceOf(ReadThreadUnavailable);
      expect(thread.usable).toBe(false);
      await expect(thread.all('SELECT 1', [])).rejects.toBeInstanceOf(ReadThreadUnavailable);
      expect(failures).toHaveLength(1);
      expect(failures[0]).toMatch(/^the read thread (failed|exited)/);
      expect(thread.counts).toEqual({ done: 0, failed: 1 });
    } finally {
      await thread.close();
    }

    // a driver whose thread dies: the read waiting for it, and the next ones, run inline
    const warnings: string[] = [];
    const onWarning = (warning: Error & { code?: string }) => {
      if (warning.code === 'ENGRAM_SQLITE_READ_THREAD') warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    const { driver } = await openWith({}, 'dies.db');
    try {
      expect(await driver.allAside('SELECT 2 AS two')).toEqual([{ two: 2 }]);
      const worker = (driver as unknown as { reader: { thread: { terminate(): Promise<number> } } }).reader.thread;
      const waiting = driver.allAside<{ n: number }>(SLOW_COUNT, [3_000_000]);
      await worker.terminate();
      expect(await waiting).toEqual([{ n: 3_000_000 }]);
      expect(await driver.allAside('SELECT 3 AS three')).toEqual([{ three: 3 }]);
      expect(driver.threadReads).toMatchObject({ failed: 1 });
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toEqual([expect.stringMatching(/^the read thread exited \(code \d+\); vector scans run on the server connection again$/)]);
    } finally {
      process.off('warning', onWarning);
      await driver.close();
    }
  });

  it('serve a hybrid search through the route: a message found by meaning alone, the scan counted at /metrics', async () => {
    const fake = await startFakeModelServer();
    const api = await buildTestApp({ ...fake.env(), DATABASE_URL: join(dir, 'route.db'), METRICS_ENABLED: 'true', DERIVER_ENABLED: 'false', EMBEDDING_VECTOR_DIMENSIONS: '8' });
    try {
      const axis = (i: number) => Array.from({ length: 8 }, (_, j) => (j === i ? 1 : 0));
      const question = 'Which pet does she have?';
      fake.script.defaultEmbeddings((request) => ({ vectors: [request.body.input].flat().map((text) => (text === question ? [0.99, 0.1, 0, 0, 0, 0, 0, 0] : axis(1))) }));
      const ws = uniqueId('ws');
      const store = api.database.store;
      await store.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, NOW);
      await store.peers.ensure(ws, ['alice'], NOW);
      await store.sessions.createIfAbsent(ws, { id: 's', metadata: {}, configuration: {} }, NOW);
      const messages = [
        { id: 'puppy', content: 'I adopted a puppy last spring', vector: axis(0) },
        { id: 'weather', content: 'The weather was cold and grey', vector: axis(2) },
      ];
      for (const m of messages) {
        await store.messages.insert([{ id: m.id, workspaceId: ws, sessionId: 's', peerId: 'alice', content: m.content, metadata: {}, tokenCount: 6, createdAt: NOW }]);
        await store.vectors.putMessageChunks([{ messageId: m.id, chunk: 0, workspaceId: ws, sessionId: 's', peerId: 'alice', vector: m.vector }]);
      }
      const reads = async () => Number(/^engram_sqlite_thread_reads_total\{outcome="done"\} (\d+)$/m.exec((await api.get('/metrics')).text)?.[1]);
      const before = await reads();
      // the question shares no word with the answer: only the vector search finds it
      const found = await api.post(`/v3/workspaces/${ws}/search`, { query: question, limit: 1 });
      expect(found.status, found.text).toBe(200);
      expect(found.body.map((m: { content: string }) => m.content)).toEqual(['I adopted a puppy last spring']);
      expect(await reads()).toBe(before + 1);
    } finally {
      await api.close();
      await fake.close();
    }
  });

  it('are counted at /metrics', async () => {
    const api = await buildTestApp({ DATABASE_URL: join(dir, 'metrics.db'), METRICS_ENABLED: 'true' });
    try {
      const counted = async () => (await api.get('/metrics')).text.split('\n').filter((line) => line.startsWith('engram_sqlite_thread_reads_total'));
      expect(await counted()).toEqual(['engram_sqlite_thread_reads_total{outcome="done"} 0', 'engram_sqlite_thread_reads_total{outcome="failed"} 0']);
    } finally {
      await api.close();
    }
    const memory = await buildTestApp({ METRICS_ENABLED: 'true' });
    try {
      expect((await memory.get('/metrics')).text).not.toMatch(/^engram_sqlite_thread_reads_total\{/m);
    } finally {
      await memory.close();
    }
  });
});
