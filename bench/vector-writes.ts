/**
 * Storing vectors through the store (storage/vector-index.ts): message chunks as the embedding
 * job stores them (a job's vectors in one transaction) and conclusions' vectors as the deriver
 * does, each way two ways in the same run, one right after the other in every round:
 *   - batched: one `putMessageChunks` / `putConclusions` call with all of a job's rows (the
 *     store writes them in a few statements);
 *   - one a call: a call per row in the same transaction (a statement or more a row, which is
 *     what the stores did with any batch before they wrote them set-wise).
 * BENCH_VECTOR_WRITE_ROUNDS rounds (default 11) of BENCH_VECTOR_WRITE_ROWS rows (default 100, a
 * full embedding job) each way, BENCH_VECTOR_DIMENSIONS wide (default 1536); vectors/s, median of
 * the rounds and the median of the ratios taken within rounds; also this process's CPU a vector
 * (on SQLite all the work; on PostgreSQL the client's share). On a fresh SQLite file, or on
 * PostgreSQL when BENCH_DATABASE_URL is postgres://... (its vector tables are emptied: use an
 * empty database). `npx tsx bench/vector-writes.ts`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/runtime/database.js';
import type { ConclusionRecord, MessageRecord, Store } from '../src/storage/store.js';
import { median, seededUnitVectors } from './stats.js';

const env = process.env;
const ROUNDS = Number(env.BENCH_VECTOR_WRITE_ROUNDS ?? 11);
const ROWS = Number(env.BENCH_VECTOR_WRITE_ROWS ?? 100);
const DIMENSIONS = Number(env.BENCH_VECTOR_DIMENSIONS ?? 1536);

const unitVector = (seed: number): number[] => seededUnitVectors(DIMENSIONS, seed)();

async function main(): Promise<void> {
  const pgUrl = env.BENCH_DATABASE_URL?.startsWith('postgres') ? env.BENCH_DATABASE_URL : undefined;
  const folder = pgUrl === undefined ? mkdtempSync(join(tmpdir(), 'engram-vector-writes-')) : undefined;
  const database = await openDatabase(pgUrl ?? join(folder!, 'vectors.db'));
  const store = database.store;
  console.log(`Vector writes on ${pgUrl === undefined ? 'SQLite (sqlite-vec)' : 'PostgreSQL (pgvector)'}: ${ROUNDS} rounds of ${ROWS} rows each way, ${DIMENSIONS} dimensions`);
  try {
    await store.transaction((tx) => tx.vectors.clear());
    const workspaceId = `vector-writes-${Date.now()}`;
    const now = new Date();
    await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
    await store.peers.ensure(workspaceId, ['alice', 'bob'], now);
    await store.sessions.createIfAbsent(workspaceId, { id: 's', metadata: {}, configuration: {} }, now);
    // rows for every round and way, each stored once (as the jobs store new ones)
    const total = ROUNDS * 2 * ROWS;
    const messages: MessageRecord[] = Array.from({ length: total }, (_, i) => ({
      id: `m${i}`,
      workspaceId,
      sessionId: 's',
      peerId: i % 2 === 0 ? 'alice' : 'bob',
      content: `message ${i}`,
      metadata: {},
      tokenCount: 3,
      createdAt: now,
    }));
    const conclusions: ConclusionRecord[] = Array.from({ length: total }, (_, i) => ({
      id: `c${i}`,
      workspaceId,
      observerId: 'bob',
      observedId: 'alice',
      sessionId: 's',
      content: `conclusion ${i}`,
      level: 'explicit',
      sourceIds: null,
      timesDerived: 1,
      createdAt: now,
    }));
    for (let start = 0; start < total; start += 500) {
      await store.transaction(async (tx) => {
        await tx.messages.insert(messages.slice(start, start + 500));
        await tx.memory.insertConclusions(conclusions.slice(start, start + 500));
      });
    }
    const vectors = Array.from({ length: total }, (_, i) => unitVector(i + 1));
    // the first vector fixes the size (and makes the indexes): not measured
    await store.transaction((tx) => tx.vectors.putMessageChunks([{ messageId: 'm0', chunk: 1, workspaceId, sessionId: 's', peerId: 'alice', vector: vectors[0] }]));
    await store.transaction((tx) => tx.vectors.putConclusions([{ conclusionId: 'c0', workspaceId, observerId: 'bob', observedId: 'alice', level: 'explicit', sessionId: 's', vector: vectors[0] }]));

    const chunkRows = (from: number) =>
      messages.slice(from, from + ROWS).map((m, i) => ({ messageId: m.id, chunk: 0, workspaceId, sessionId: 's', peerId: m.peerId, vector: vectors[from + i] }));
    const conclusionRows = (from: number) =>
      conclusions.slice(from, from + ROWS).map((c, i) => ({ conclusionId: c.id, workspaceId, observerId: 'bob', observedId: 'alice', level: 'explicit' as const, sessionId: 's', vector: vectors[from + i] }));
    /** Vectors a second of wall time, and this process's CPU µs a vector (all of SQLite's work; on PostgreSQL the client's part). */
    const timed = async (fn: (tx: Store) => Promise<void>) => {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await store.transaction(fn);
      const cpu = process.cpuUsage(c0);
      return { rate: ROWS / ((performance.now() - t0) / 1000), cpuUs: (cpu.user + cpu.system) / ROWS };
    };
    for (const kind of ['message chunks', 'conclusions'] as const) {
      const batched: number[] = [];
      const single: number[] = [];
      const ratios: number[] = [];
      const cpu = { batched: [] as number[], single: [] as number[], ratios: [] as number[] };
      let next = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const ways = [
          async () => {
            const from = next;
            next += ROWS;
            const rate = await timed(async (tx) => {
              if (kind === 'message chunks') await tx.vectors.putMessageChunks(chunkRows(from));
              else await tx.vectors.putConclusions(conclusionRows(from));
            });
            batched.push(rate.rate);
            cpu.batched.push(rate.cpuUs);
            return rate;
          },
          async () => {
            const from = next;
            next += ROWS;
            const rate = await timed(async (tx) => {
              if (kind === 'message chunks') for (const row of chunkRows(from)) await tx.vectors.putMessageChunks([row]);
              else for (const row of conclusionRows(from)) await tx.vectors.putConclusions([row]);
            });
            single.push(rate.rate);
            cpu.single.push(rate.cpuUs);
            return rate;
          },
        ];
        // the batched way first in every other round
        const [a, b] = round % 2 === 0 ? [await ways[0](), await ways[1]()] : [await ways[1](), await ways[0]()].reverse();
        ratios.push(a.rate / b.rate);
        cpu.ratios.push(b.cpuUs / a.cpuUs);
      }
      console.log(
        `  ${kind}: batched ${Math.round(median(batched)).toLocaleString('en')} vectors/s, one a call ${Math.round(median(single)).toLocaleString('en')} vectors/s, ` +
          `x${median(ratios).toFixed(2)} (rounds: ${ratios.map((r) => r.toFixed(2)).join(', ')}); ` +
          `CPU of this process ${median(cpu.batched).toFixed(0)} and ${median(cpu.single).toFixed(0)} µs a vector, x${median(cpu.ratios).toFixed(2)} less batched`,
      );
    }
    const stored = await store.vectors.nearestMessages({ workspaceId, vector: vectors[5], k: 1 });
    if (stored[0]?.messageId !== 'm5') throw new Error(`the stored chunks do not answer a search: ${JSON.stringify(stored)}`);
    await store.workspaces.delete(workspaceId);
  } finally {
    await database.driver.close();
    if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
  }
}

await main();
