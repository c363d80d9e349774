/**
 * Vector search through the store (storage/vector-index.ts): `nearestConclusions` latency on
 * BENCH_VECTOR_CONCLUSIONS conclusions (default 100,000) spread evenly over
 * BENCH_VECTOR_COLLECTIONS collections (default 1,000) with BENCH_VECTOR_DIMENSIONS-wide vectors
 * (default 1536), random unit vectors, k = 10. Runs on a fresh SQLite file, or on PostgreSQL
 * (pgvector) when BENCH_DATABASE_URL is postgres://... (its tables are dropped and remade: use an
 * empty database). Part of `npm run bench`; alone: `npx tsx bench/vectors.ts`.
 * BENCH_VECTOR_QUERIES queries are measured (default 2,000) after 200 warm-up queries.
 *
 * Then `nearestMessages` on BENCH_VECTOR_MESSAGES message chunks (default 100,000; 0 skips it) of
 * one workspace in 1,000 sessions, vectors clustered around 2,000 topics (a unit vector each,
 * plus noise of the same size), as a workspace's messages are about a number of things: latency
 * for a workspace (k = 40, what a search of 10 asks), for a session and for lists of 100 and of 4
 * sessions (what a chat searches), over 100 queries each;
 * on SQLite also the share of the exact ten nearest found (computed by a scan of every stored
 * vector, or of the listed sessions' vectors), and the time of that scan, which is what every
 * search cost before the signs; on SQLite the event loop's delay during workspace searches with
 * the scans in the read thread and on the server connection; on SQLite workspace searches with a
 * commit of another connection before each, on a connection with the file mapped and on one
 * without; and the
 * purge of one session of 100 messages.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { openDatabase } from '../src/runtime/database.js';
import type { ConclusionRecord } from '../src/storage/store.js';
import { percentile } from './load.js';
import { VECTOR_CASE } from './case-names.js';

const env = process.env;
const CONCLUSIONS = Number(env.BENCH_VECTOR_CONCLUSIONS ?? 100_000);
const COLLECTIONS = Number(env.BENCH_VECTOR_COLLECTIONS ?? 1_000);
const DIMENSIONS = Number(env.BENCH_VECTOR_DIMENSIONS ?? 1536);
const QUERIES = Number(env.BENCH_VECTOR_QUERIES ?? 2_000);
const K = 10;
const MESSAGES = Number(env.BENCH_VECTOR_MESSAGES ?? 100_000);
const MESSAGE_QUERIES = 100;
const LOOP_SEARCHES = 50;

/** A deterministic generator, so runs compare. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function unitVector(next: () => number): Float32Array {
  const v = new Float32Array(DIMENSIONS);
  let norm = 0;
  for (let i = 0; i < DIMENSIONS; i++) {
    v[i] = next() * 2 - 1;
    norm += v[i] * v[i];
  }
  norm = Math.sqrt(norm);
  for (let i = 0; i < DIMENSIONS; i++) v[i] /= norm;
  return v;
}

async function main(): Promise<void> {
  // `npm run bench` runs this after bench/run.ts: with BENCH_ONLY it runs only when asked for
  const only = env.BENCH_ONLY;
  if (only && !only.split('|').some((part) => VECTOR_CASE.includes(part))) return;
  const pgUrl = env.BENCH_DATABASE_URL?.startsWith('postgres') ? env.BENCH_DATABASE_URL : undefined;
  const folder = pgUrl === undefined ? mkdtempSync(join(tmpdir(), 'engram-vectors-')) : undefined;
  const file = folder === undefined ? undefined : join(folder, 'vectors.db');
  const database = await openDatabase(pgUrl ?? file!);
  const store = database.store;
  const where = pgUrl === undefined ? 'SQLite (sqlite-vec)' : 'PostgreSQL (pgvector)';
  console.log(
    `\nVector search on ${where}: ${CONCLUSIONS.toLocaleString('en')} conclusions in ${COLLECTIONS.toLocaleString('en')} collections, ` +
      `${DIMENSIONS} dimensions, k = ${K}`,
  );
  try {
    await store.transaction((tx) => tx.vectors.clear());
    const workspaceId = `vectors-${Date.now()}`;
    const now = new Date();
    await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
    const peers = Array.from({ length: COLLECTIONS }, (_, i) => `p${i}`);
    await store.peers.ensure(workspaceId, peers, now);

    const next = random(42);
    const started = performance.now();
    const batch = 1_000;
    for (let start = 0; start < CONCLUSIONS; start += batch) {
      const records: ConclusionRecord[] = [];
      for (let i = start; i < Math.min(CONCLUSIONS, start + batch); i++) {
        const peer = peers[i % COLLECTIONS];
        records.push({ id: `c${i}`, workspaceId, observerId: peer, observedId: peer, sessionId: null, content: `conclusion ${i}`, level: 'explicit', sourceIds: null, timesDerived: 1, createdAt: now });
      }
      await store.transaction(async (tx) => {
        await tx.memory.insertConclusions(records);
        await tx.vectors.putConclusions(records.map((r) => ({ conclusionId: r.id, workspaceId, observerId: r.observerId, observedId: r.observedId, level: r.level, sessionId: null, vector: unitVector(next) })));
      });
      if ((start / batch) % 10 === 9) process.stdout.write('.');
    }
    const loadSeconds = (performance.now() - started) / 1000;
    const size = file === undefined ? '' : `, file ${((statSync(file).size + walSize(file)) / 1e6).toFixed(0)} MB`;
    console.log(`\n  stored in ${loadSeconds.toFixed(1)} s (${Math.round(CONCLUSIONS / loadSeconds).toLocaleString('en')} vectors/s${size})`);

    const times: number[] = [];
    for (let q = 0; q < QUERIES + 200; q++) {
      const peer = peers[Math.floor(next() * COLLECTIONS)];
      const vector = unitVector(next);
      const t0 = performance.now();
      const found = await store.vectors.nearestConclusions({ workspaceId, observerId: peer, observedId: peer, vector, k: K });
      const elapsed = performance.now() - t0;
      if (found.length !== Math.min(K, CONCLUSIONS / COLLECTIONS)) throw new Error(`expected ${K} neighbours, got ${found.length}`);
      if (q >= 200) times.push(elapsed);
    }
    times.sort((a, b) => a - b);
    console.log(
      `  nearestConclusions: p50 ${percentile(times, 50).toFixed(2)} ms, p99 ${percentile(times, 99).toFixed(2)} ms, ` +
        `max ${times[times.length - 1].toFixed(2)} ms over ${QUERIES.toLocaleString('en')} queries (aim: p99 under 20 ms on SQLite)`,
    );
    await store.workspaces.delete(workspaceId);
    if (MESSAGES > 0) await messages(database, file);
  } finally {
    await database.driver.close();
    if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
  }
}

/** A vector near `topic`: the topic plus noise of about its own length, normalised. */
function nearTopic(topic: Float32Array, next: () => number): Float32Array {
  const noise = unitVector(next);
  const v = new Float32Array(DIMENSIONS);
  let norm = 0;
  for (let i = 0; i < DIMENSIONS; i++) {
    v[i] = topic[i] + noise[i];
    norm += v[i] * v[i];
  }
  norm = Math.sqrt(norm);
  for (let i = 0; i < DIMENSIONS; i++) v[i] /= norm;
  return v;
}

/** A session id of the length of a UUID, as clients often choose (long ids cost some filters more). */
const sessionName = (i: number) => `a3e1c0de-5e55-4000-8000-${String(i).padStart(12, '0')}`;

function summary(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  return `p50 ${percentile(sorted, 50).toFixed(2)} ms, p99 ${percentile(sorted, 99).toFixed(2)} ms`;
}

async function messages(database: Awaited<ReturnType<typeof openDatabase>>, file: string | undefined): Promise<void> {
  const sqlite = file !== undefined;
  const store = database.store;
  const sessions = 1_000;
  console.log(`\nMessage vector search: ${MESSAGES.toLocaleString('en')} message chunks in one workspace of ${sessions.toLocaleString('en')} sessions, ${DIMENSIONS} dimensions`);
  const workspaceId = `vector-messages-${Date.now()}`;
  const now = new Date();
  await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
  await store.peers.ensure(workspaceId, ['user', 'assistant'], now);
  for (let s = 0; s < sessions; s++) await store.sessions.createIfAbsent(workspaceId, { id: sessionName(s), metadata: {}, configuration: {} }, now);
  const next = random(7);
  const topics = Array.from({ length: 2_000 }, () => unitVector(next));
  const started = performance.now();
  const batch = 1_000;
  for (let start = 0; start < MESSAGES; start += batch) {
    const rows = Array.from({ length: Math.min(batch, MESSAGES - start) }, (_, j) => {
      const i = start + j;
      return { id: `m${i}`, workspaceId, sessionId: sessionName(i % sessions), peerId: i % 2 === 0 ? 'user' : 'assistant', content: `message ${i}`, metadata: {}, tokenCount: 2, createdAt: now };
    });
    await store.transaction(async (tx) => {
      await tx.messages.insert(rows);
      await tx.vectors.putMessageChunks(rows.map((r) => ({ messageId: r.id, chunk: 0, workspaceId, sessionId: r.sessionId, peerId: r.peerId, vector: nearTopic(topics[Math.floor(next() * topics.length)], next) })));
    });
  }
  console.log(`  stored in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const workspaceTimes: number[] = [];
  const sessionTimes: number[] = [];
  const listTimes: number[] = [];
  const fewTimes: number[] = [];
  // what a chat searches: the sessions its observer may see (here every tenth, 100 of them), and
  // for a peer that is in few sessions, four of them
  const observed = Array.from({ length: sessions / 10 }, (_, i) => sessionName(i * 10));
  const few = Array.from({ length: 4 }, (_, i) => sessionName(i * 37 + 3));
  const exactTimes: number[] = [];
  let found = 0;
  const foundInList = { observed: 0, few: 0 };
  const exactTable = sqlite && (await database.driver.get("SELECT 1 AS x FROM sqlite_master WHERE name = 'message_embeddings'")) !== undefined;
  for (let q = 0; q < MESSAGE_QUERIES + 10; q++) {
    const vector = nearTopic(topics[Math.floor(next() * topics.length)], next);
    let t0 = performance.now();
    const near = await store.vectors.nearestMessages({ workspaceId, vector, k: 40 });
    const workspaceMs = performance.now() - t0;
    t0 = performance.now();
    await store.vectors.nearestMessages({ workspaceId, sessionId: sessionName(q % sessions), vector, k: 40 });
    const sessionMs = performance.now() - t0;
    t0 = performance.now();
    const inList = await store.vectors.nearestMessages({ workspaceId, sessionIds: observed, vector, k: 40 });
    const listMs = performance.now() - t0;
    t0 = performance.now();
    const inFew = await store.vectors.nearestMessages({ workspaceId, sessionIds: few, vector, k: 40 });
    const fewMs = performance.now() - t0;
    if (q < 10) continue;
    workspaceTimes.push(workspaceMs);
    sessionTimes.push(sessionMs);
    listTimes.push(listMs);
    fewTimes.push(fewMs);
    if (!exactTable) continue;
    for (const [name, list, got] of [['observed', observed, inList], ['few', few, inFew]] as const) {
      const exactInList = await database.driver.all<{ id: string }>(
        `SELECT m.id FROM messages m JOIN message_embeddings e ON e.rowid = m.pk * 1024
         WHERE m.workspace_id = ? AND m.session_id IN (SELECT value FROM json_each(?)) ORDER BY vec_distance_cosine(e.embedding, ?) LIMIT 10`,
        [workspaceId, JSON.stringify(list), Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength)],
      );
      const top = new Set(got.slice(0, 10).map((n) => n.messageId));
      foundInList[name] += exactInList.filter((row) => top.has(row.id)).length;
    }
    t0 = performance.now();
    const exact = await database.driver.all<{ id: string }>(
      `SELECT m.id FROM (SELECT rowid AS vid, vec_distance_cosine(embedding, ?) AS d FROM message_embeddings ORDER BY d LIMIT 10) e JOIN messages m ON m.pk = e.vid / 1024`,
      [Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength)],
    );
    exactTimes.push(performance.now() - t0);
    const top = new Set(near.slice(0, 10).map((n) => n.messageId));
    found += exact.filter((row) => top.has(row.id)).length;
  }
  console.log(
    `  nearestMessages (k = 40), workspace: ${summary(workspaceTimes)}; session: ${summary(sessionTimes)}; ` +
      `${observed.length} sessions of the workspace: ${summary(listTimes)}; ${few.length} sessions: ${summary(fewTimes)}; over ${MESSAGE_QUERIES} queries each`,
  );
  if (exactTable) {
    const share = (n: number) => `${((100 * n) / (MESSAGE_QUERIES * 10)).toFixed(1)} %`;
    console.log(`  exact ten nearest found among its first ten: ${share(found)}; a scan of every vector (the exact answer): ${summary(exactTimes)}`);
    console.log(`  exact ten nearest of the sessions found: ${share(foundInList.observed)} of ${observed.length} sessions, ${share(foundInList.few)} of ${few.length}`);
  }
  if (file !== undefined) await loopWhileSearching(database, file, workspaceId, () => nearTopic(topics[Math.floor(next() * topics.length)], next));
  if (file !== undefined) await searchesBetweenWrites(database, file, workspaceId, () => nearTopic(topics[Math.floor(next() * topics.length)], next));
  const purged = sessionName(sessions - 1);
  const t0 = performance.now();
  await store.sessions.deactivate(workspaceId, purged);
  await store.sessions.purgeInactive(workspaceId, purged);
  console.log(`  purge of a session of ${Math.ceil(MESSAGES / sessions)} messages with vectors: ${(performance.now() - t0).toFixed(1)} ms`);
  await store.workspaces.delete(workspaceId);
}

/**
 * SQLite: what the workspace searches do to the rest of the process. LOOP_SEARCHES searches run
 * one after another (a turn of the event loop between two), once on the store as opened (the scans in the read thread,
 * SQLITE_VECTOR_SCANS=thread) and once through a second connection with the scans inline; the
 * event loop's delay during each (monitorEventLoopDelay, 1 ms resolution) is what any other
 * request of the process would have waited.
 */
async function loopWhileSearching(database: Awaited<ReturnType<typeof openDatabase>>, file: string, workspaceId: string, query: () => Float32Array): Promise<void> {
  const inline = await openDatabase(file, { sqlite: { vectorScans: 'inline' } });
  try {
    const vectors = Array.from({ length: LOOP_SEARCHES }, query);
    const line: string[] = [];
    for (const [name, store] of [['inline', inline.store], ['read thread', database.store]] as const) {
      const delay = monitorEventLoopDelay({ resolution: 1 });
      const times: number[] = [];
      delay.enable();
      for (const vector of vectors) {
        // a turn of the event loop between searches, as between the requests of a server
        await new Promise((resolve) => setImmediate(resolve));
        const t0 = performance.now();
        await store.vectors.nearestMessages({ workspaceId, vector, k: 40 });
        times.push(performance.now() - t0);
      }
      delay.disable();
      const ms = (ns: number) => (ns / 1e6).toFixed(1);
      line.push(`${name}: search ${summary(times)}, event-loop delay p99 ${ms(delay.percentile(99))} ms, max ${ms(delay.max)} ms`);
    }
    console.log(`  ${LOOP_SEARCHES} workspace searches one after another, ${line.join('; ')}`);
  } finally {
    await inline.driver.close();
  }
}

/**
 * SQLite: workspace searches while another connection writes, as the read thread searches while
 * the server connection commits. A commit on the file between two searches, then a search on a
 * connection with the whole file mapped (SQLITE_MMAP_MB's default) and on one without a map,
 * taking turns over rounds: a connection that finds the file changed drops its page cache and
 * its map, and maps and faults in again what it reads (the read thread reads without a map).
 */
async function searchesBetweenWrites(database: Awaited<ReturnType<typeof openDatabase>>, file: string, workspaceId: string, query: () => Float32Array): Promise<void> {
  const mapped = await openDatabase(file, { sqlite: { vectorScans: 'inline', mmapMb: 2047 } });
  const unmapped = await openDatabase(file, { sqlite: { vectorScans: 'inline', mmapMb: 0 } });
  try {
    await database.driver.run('CREATE TABLE IF NOT EXISTS bench_writes (n INTEGER)');
    const times = { mapped: [] as number[], unmapped: [] as number[] };
    for (let round = 0; round < 6; round++) {
      for (const [name, store] of round % 2 === 0 ? ([['mapped', mapped.store], ['unmapped', unmapped.store]] as const) : ([['unmapped', unmapped.store], ['mapped', mapped.store]] as const)) {
        for (let i = 0; i < LOOP_SEARCHES / 5; i++) {
          await database.driver.run('INSERT INTO bench_writes (n) VALUES (?)', [i]);
          const t0 = performance.now();
          await store.vectors.nearestMessages({ workspaceId, vector: query(), k: 40 });
          times[name].push(performance.now() - t0);
        }
      }
    }
    const p50 = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50);
    console.log(
      `  workspace searches with a commit of another connection before each, ${times.mapped.length} each in turns: file mapped ${summary(times.mapped)}; ` +
        `no map ${summary(times.unmapped)}; no map / mapped (p50) ${(p50(times.unmapped) / p50(times.mapped)).toFixed(2)}`,
    );
  } finally {
    await mapped.driver.close();
    await unmapped.driver.close();
  }
}

function walSize(file: string): number {
  try {
    return statSync(`${file}-wal`).size;
  } catch {
    return 0;
  }
}

await main();
