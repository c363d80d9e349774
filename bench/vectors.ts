/**
 * Vector search through the store (storage/vector-index.ts): `nearestConclusions` latency on
 * BENCH_VECTOR_CONCLUSIONS conclusions (default 100,000) spread evenly over
 * BENCH_VECTOR_COLLECTIONS collections (default 1,000) with BENCH_VECTOR_DIMENSIONS-wide vectors
 * (default 1536), random unit vectors, k = 10. Runs on a fresh SQLite file, or on PostgreSQL
 * (pgvector) when BENCH_DATABASE_URL is postgres://... (its tables are dropped and remade: use an
 * empty database). Part of `npm run bench`; alone: `npx tsx bench/vectors.ts`.
 * BENCH_VECTOR_QUERIES queries are measured (default 2,000) after 200 warm-up queries.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/app.js';
import type { ConclusionRecord } from '../src/storage/store.js';
import { percentile } from './load.js';

const env = process.env;
const CONCLUSIONS = Number(env.BENCH_VECTOR_CONCLUSIONS ?? 100_000);
const COLLECTIONS = Number(env.BENCH_VECTOR_COLLECTIONS ?? 1_000);
const DIMENSIONS = Number(env.BENCH_VECTOR_DIMENSIONS ?? 1536);
const QUERIES = Number(env.BENCH_VECTOR_QUERIES ?? 2_000);
const K = 10;

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
  } finally {
    await database.driver.close();
    if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
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
