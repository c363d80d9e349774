/**
 * Message vectors in parts on PostgreSQL (docs/decisions/0043-message-vector-parts.md): what the
 * parts cost a workspace's vector search, beside the one HNSW index of the version before, and
 * what sealing and merging them cost. One workspace (as the soak), BENCH_PARTS_VECTORS message
 * vectors (default 66,000, the soak's ten minutes) of BENCH_PARTS_DIMENSIONS uniform random unit
 * floats (default 64, the soak's width). Three layouts of the same rows, each searched by the
 * store's own statement (PostgresVectorIndex.nearestMessages, k 10) with BENCH_PARTS_QUERIES
 * queries (default 200) in BENCH_PARTS_ROUNDS rounds (default 5), the layouts in turn within each
 * round; ms a search, medians of the rounds, the ratio to one index at 100 within each round:
 *
 * - one index: every vector in one table with one HNSW index (what 0048 replaced), searched at
 *   the connections' `hnsw.ef_search` (100);
 * - parts: the vectors put through the upkeep's seals and merges at the store's thresholds, as
 *   they would be had they come in one by one, the last ones left in the open part; searched at
 *   100, and as the store searches them (ef_search 40);
 * - recall@10 of each against an exact scan (the first round).
 *
 * Needs a PostgreSQL with pgvector: `node scripts/with-postgres.mjs npx tsx bench/vector-parts.ts`
 * (DATABASE_URL's database is migrated and its message vectors replaced).
 */
import { migrate } from '../src/storage/migrate.js';
import { messageVectorParts, SEAL_AT } from '../src/storage/postgres/message-vector-parts.js';
import { PostgresDriver } from '../src/storage/postgres/postgres-driver.js';
import { PostgresVectorIndex } from '../src/storage/postgres/postgres-vector-index.js';
import { median, seededUnitVectors } from './stats.js';

const env = process.env;
const URL = env.BENCH_DATABASE_URL ?? env.DATABASE_URL;
const VECTORS = Number(env.BENCH_PARTS_VECTORS ?? 66_000);
const DIMENSIONS = Number(env.BENCH_PARTS_DIMENSIONS ?? 64);
const QUERIES = Number(env.BENCH_PARTS_QUERIES ?? 200);
const ROUNDS = Number(env.BENCH_PARTS_ROUNDS ?? 5);
const K = 10;
const WS = 'bench-parts';

if (!URL?.startsWith('postgres')) {
  console.error('vector-parts: set BENCH_DATABASE_URL (or DATABASE_URL) to a PostgreSQL with pgvector, or run it through node scripts/with-postgres.mjs');
  process.exit(2);
}

const driver = new PostgresDriver(URL, { maxConnections: 4 });
await migrate(driver);
const index = new PostgresVectorIndex(driver, undefined, driver);
await index.clear();
await driver.run('DELETE FROM workspaces WHERE id = ?', [WS]);
await driver.run("INSERT INTO workspaces (id, metadata, configuration, created_at) VALUES (?, '{}', '{}', now())", [WS]);
await driver.run("INSERT INTO peers (workspace_id, id, metadata, configuration, created_at) VALUES (?, 'p', '{}', '{}', now())", [WS]);
await driver.run("INSERT INTO sessions (workspace_id, id, metadata, configuration, created_at) VALUES (?, 's', '{}', '{}', now())", [WS]);
await driver.run(
  `INSERT INTO messages (id, workspace_id, session_id, peer_id, content, metadata, token_count, created_at)
   SELECT 'm' || g, ?, 's', 'p', 'text', '{}', 1, now() FROM generate_series(1, ?) g`,
  [WS, VECTORS],
);
const next = seededUnitVectors(DIMENSIONS, 7);
const vectors = Array.from({ length: VECTORS }, () => next());
console.log(`vector-parts: ${VECTORS} message vectors of ${DIMENSIONS} dimensions in one workspace; ${QUERIES} searches (k ${K}) a layout in each of ${ROUNDS} rounds`);

// parts: put in seal-sized batches, each followed by the upkeep's steps, as a worker would run them
let built = 0;
const steps: Record<string, { count: number; ms: number; lockedMs: number; rows: number }> = {};
const started = performance.now();
for (let at = 0; at < VECTORS; at += SEAL_AT) {
  const batch = vectors.slice(at, at + SEAL_AT).map((vector, i) => ({ messageId: `m${at + i + 1}`, chunk: 0, workspaceId: WS, sessionId: 's', peerId: 'p', vector }));
  await index.putMessageChunks(batch);
  for (;;) {
    const step = await index.upkeep();
    if (step === undefined || step.kind === 'busy') break;
    const kind = (steps[`${step.kind} to level ${step.part.level}`] ??= { count: 0, ms: 0, lockedMs: 0, rows: 0 });
    kind.count++;
    kind.ms += step.ms;
    kind.lockedMs += step.lockedMs;
    kind.rows += step.part.rows;
    built += step.part.rows;
  }
}
const upkeepMs = performance.now() - started;
const parts = await messageVectorParts(driver);
const open = Number((await driver.get<{ n: string }>('SELECT count(*) AS n FROM message_vectors_open'))?.n);
console.log(`parts: ${parts.length} (rows ${parts.map((p) => p.rows).join(', ')}), open part ${open}; loading with the upkeep took ${(upkeepMs / 1000).toFixed(1)} s`);
for (const [kind, s] of Object.entries(steps)) {
  console.log(`  ${kind}: ${s.count} steps, ${(s.ms / s.rows * 1000).toFixed(0)} µs a vector built, lock held ${(s.lockedMs / s.count).toFixed(1)} ms a step`);
}
console.log(`  every vector built into a graph ${(built / (VECTORS - open)).toFixed(2)} times on average`);

// one index: the same rows in one table of the old layout
await driver.run('DROP TABLE IF EXISTS bench_one_index');
await driver.run('CREATE TABLE bench_one_index AS SELECT * FROM message_vectors');
await driver.run(`ALTER TABLE bench_one_index ALTER COLUMN embedding TYPE vector(${DIMENSIONS})`);
await driver.run('CREATE INDEX ON bench_one_index (workspace_id, session_id)');
let ms = performance.now();
await driver.run('SET maintenance_work_mem = \'256MB\'');
await driver.run('CREATE INDEX ON bench_one_index USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)');
ms = performance.now() - ms;
await driver.run('ANALYZE bench_one_index');
await driver.run('ANALYZE message_vectors');
console.log(`one index over all ${VECTORS}: built in ${(ms / 1000).toFixed(1)} s (${((ms / VECTORS) * 1000).toFixed(0)} µs a vector)`);

const vectorText = (v: number[]) => `[${v.join(',')}]`;
// the store's statement, with the table named
const searchSql = (table: string) =>
  `SELECT m.id, n.distance FROM (
     SELECT c.message_pk, min(c.distance) AS distance FROM (
       SELECT v.message_pk, v.embedding <=> ?::vector AS distance
       FROM ${table} v WHERE v.workspace_id = ? ORDER BY v.embedding <=> ?::vector LIMIT ?
     ) c GROUP BY c.message_pk
   ) n JOIN messages m ON m.pk = n.message_pk ORDER BY n.distance, m.pk LIMIT ?`;
const queries = Array.from({ length: QUERIES }, () => next());
const exact = new Map<number, Set<string>>();
for (const [i, q] of queries.entries()) {
  // exact: every row's distance, sorted (an expression no index orders by)
  const rows = await driver.all<{ id: string }>(
    `SELECT m.id FROM bench_one_index v JOIN messages m ON m.pk = v.message_pk ORDER BY (v.embedding <=> ?::vector) + 0 LIMIT ${K}`,
    [vectorText(q)],
  );
  exact.set(i, new Set(rows.map((r) => r.id)));
}

// the store's statement over each layout, at the ef_search the store's connections set (40) and
// on connections of their own at 100 (what they set before the parts)
const options = encodeURIComponent('-c hnsw.iterative_scan=strict_order -c hnsw.ef_search=100 -c jit=off');
const at100 = new PostgresDriver(`${URL}${URL.includes('?') ? '&' : '?'}options=${options}`, { maxConnections: 2 });
const over = (db: PostgresDriver, table: string) => (q: number[]) => db.all<{ id: string }>(searchSql(table), [vectorText(q), WS, vectorText(q), K * 4, K]);
const layouts: Record<string, (q: number[]) => Promise<{ id: string }[]>> = {
  'one index, ef_search 100': over(at100, 'bench_one_index'),
  'one index, ef_search 40': over(driver, 'bench_one_index'),
  'parts, ef_search 100': over(at100, 'message_vectors'),
  'parts, ef_search 40': async (q) => (await index.nearestMessages({ workspaceId: WS, vector: q, k: K })).map((n) => ({ id: n.messageId })),
};
const names = Object.keys(layouts);
const times: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
const ratios: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
const recall: Record<string, number> = {};
for (let round = 0; round < ROUNDS; round++) {
  // a new order each round
  const order = names.map((_, i) => names[(i + round) % names.length]);
  const roundMs: Record<string, number> = {};
  for (const layout of order) {
    const t = performance.now();
    let hits = 0;
    for (const [i, q] of queries.entries()) {
      const rows = await layouts[layout](q);
      for (const row of rows) if (exact.get(i)!.has(row.id)) hits++;
    }
    roundMs[layout] = (performance.now() - t) / QUERIES;
    times[layout].push(roundMs[layout]);
    if (round === 0) recall[layout] = hits / (QUERIES * K);
  }
  for (const layout of names) ratios[layout].push(roundMs[layout] / roundMs[names[0]]);
}
for (const layout of names) {
  console.log(
    `${layout.padEnd(26)} search ${median(times[layout]).toFixed(2)} ms (rounds ${times[layout].map((t) => t.toFixed(2)).join(', ')}), ratio to one index ${median(ratios[layout]).toFixed(2)}, recall@${K} ${recall[layout].toFixed(3)}`,
  );
}
await driver.run('DROP TABLE bench_one_index');
await at100.close();
await driver.close();
