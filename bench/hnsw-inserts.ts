/**
 * What a vector costs to insert into pgvector's HNSW index, and what the index's settings trade
 * for it: the message vectors' index is where PostgreSQL spends most of its time under the soak
 * (docs/operations.md, "Soak runs"). Each variant gets a table of its own, filled with
 * BENCH_HNSW_ROWS uniform random unit vectors (default 20,000) BENCH_HNSW_DIMENSIONS wide (default
 * 64, the soak's width), then BENCH_HNSW_ROUNDS rounds (default 5) in which every variant in turn
 * takes BENCH_HNSW_TAIL more (default 500) in statements of 5 rows, as the embedding job writes
 * them under load. Prints per variant the bulk fill and the tail's microseconds a row (median of
 * the rounds), the tail's ratio to the default taken within each round (median), recall@10 of
 * BENCH_HNSW_QUERIES queries (default 50) against an exact scan, and the index's size.
 *
 * Variants: the index Engram creates (vector, m 16, ef_construction 64); ef_construction 32;
 * m 8 with ef_construction 32; half-precision (an index on `embedding::halfvec`); binary
 * quantization (an index on `binary_quantize(embedding)`, searched for 4k and re-ranked exactly).
 * Beside them, what the same rows cost indexed in bulk: loaded into a table without the index,
 * then the index Engram creates built over them by one CREATE INDEX (maintenance_work_mem 256 MB,
 * no parallel workers), against the default variant's fill one row at a time.
 *
 * Needs a PostgreSQL with pgvector: BENCH_DATABASE_URL or DATABASE_URL (its tables `hnsw_bench_*`
 * are replaced), e.g. `node scripts/with-postgres.mjs npx tsx bench/hnsw-inserts.ts`.
 */
import pg from 'pg';
import { median, seededUnitVectors } from './stats.js';

const env = process.env;
const URL = env.BENCH_DATABASE_URL ?? env.DATABASE_URL;
const ROWS = Number(env.BENCH_HNSW_ROWS ?? 20_000);
const DIMENSIONS = Number(env.BENCH_HNSW_DIMENSIONS ?? 64);
const ROUNDS = Number(env.BENCH_HNSW_ROUNDS ?? 5);
const TAIL = Number(env.BENCH_HNSW_TAIL ?? 500);
const QUERIES = Number(env.BENCH_HNSW_QUERIES ?? 50);
const STATEMENT_ROWS = 5;
const K = 10;

if (!URL?.startsWith('postgres')) {
  console.error('hnsw-inserts: set BENCH_DATABASE_URL (or DATABASE_URL) to a PostgreSQL with pgvector, or run it through node scripts/with-postgres.mjs');
  process.exit(2);
}

interface Variant {
  name: string;
  index: (table: string) => string;
  /** The k nearest through the index, as Engram would ask; $1 the query vector. */
  nearest: (table: string) => string;
}

const cosineIndex = (m: number, ef: number) => (table: string) =>
  `CREATE INDEX ON ${table} USING hnsw (embedding vector_cosine_ops) WITH (m = ${m}, ef_construction = ${ef})`;
const cosineNearest = (table: string) => `SELECT id FROM ${table} ORDER BY embedding <=> $1::vector LIMIT ${K}`;

const VARIANTS: Variant[] = [
  { name: 'vector m16 ef64 (default)', index: cosineIndex(16, 64), nearest: cosineNearest },
  { name: 'vector m16 ef32', index: cosineIndex(16, 32), nearest: cosineNearest },
  { name: 'vector m8 ef32', index: cosineIndex(8, 32), nearest: cosineNearest },
  {
    name: 'halfvec m16 ef64',
    index: (table) => `CREATE INDEX ON ${table} USING hnsw ((embedding::halfvec(${DIMENSIONS})) halfvec_cosine_ops) WITH (m = 16, ef_construction = 64)`,
    nearest: (table) => `SELECT id FROM ${table} ORDER BY embedding::halfvec(${DIMENSIONS}) <=> $1::halfvec(${DIMENSIONS}) LIMIT ${K}`,
  },
  {
    name: 'binary quantized m16 ef64',
    index: (table) => `CREATE INDEX ON ${table} USING hnsw ((binary_quantize(embedding)::bit(${DIMENSIONS})) bit_hamming_ops) WITH (m = 16, ef_construction = 64)`,
    nearest: (table) =>
      `SELECT id FROM (SELECT id, embedding FROM ${table} ORDER BY binary_quantize(embedding)::bit(${DIMENSIONS}) <~> binary_quantize($1::vector) LIMIT ${K * 4}) c
       ORDER BY embedding <=> $1::vector LIMIT ${K}`,
  },
];

const unitVector = seededUnitVectors(DIMENSIONS, 0x2545f491);
const text = (v: number[]) => `[${v.join(',')}]`;

const client = new pg.Client({ connectionString: URL });
await client.connect();
await client.query('CREATE EXTENSION IF NOT EXISTS vector');

/** Inserts the vectors in statements of `size` rows; microseconds a row. */
async function insert(table: string, vectors: number[][], size: number): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < vectors.length; i += size) {
    const chunk = vectors.slice(i, i + size).map(text);
    await client.query(`INSERT INTO ${table} (embedding) SELECT e::vector FROM unnest($1::text[]) AS r(e)`, [chunk]);
  }
  return Number(process.hrtime.bigint() - started) / 1000 / vectors.length;
}

const base = Array.from({ length: ROWS }, unitVector);
const tables = VARIANTS.map((_, i) => `hnsw_bench_${i}`);
const fill: number[] = [];
console.log(`pgvector HNSW inserts: ${ROWS} rows of ${DIMENSIONS} dimensions, then ${ROUNDS} rounds of ${TAIL} a variant in ${STATEMENT_ROWS}-row statements`);
for (const [i, variant] of VARIANTS.entries()) {
  await client.query(`DROP TABLE IF EXISTS ${tables[i]}`);
  await client.query(`CREATE TABLE ${tables[i]} (id bigserial PRIMARY KEY, embedding vector(${DIMENSIONS}) NOT NULL)`);
  await client.query(variant.index(tables[i]));
  fill.push(await insert(tables[i], base, 1000));
  process.stderr.write(`  filled ${variant.name}: ${fill[i].toFixed(0)} µs a row\n`);
}

// the same rows indexed in bulk: loaded first, then one CREATE INDEX over them
await client.query('DROP TABLE IF EXISTS hnsw_bench_bulk');
await client.query(`CREATE TABLE hnsw_bench_bulk (id bigserial PRIMARY KEY, embedding vector(${DIMENSIONS}) NOT NULL)`);
const loaded = await insert('hnsw_bench_bulk', base, 1000);
await client.query("SET maintenance_work_mem = '256MB'");
await client.query('SET max_parallel_maintenance_workers = 0');
const buildStarted = process.hrtime.bigint();
await client.query(VARIANTS[0].index('hnsw_bench_bulk'));
const built = Number(process.hrtime.bigint() - buildStarted) / 1000 / ROWS;
await client.query('DROP TABLE hnsw_bench_bulk');

const tail: number[][] = VARIANTS.map(() => []);
const ratios: number[][] = VARIANTS.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  const vectors = Array.from({ length: TAIL }, unitVector);
  for (const [i] of VARIANTS.entries()) tail[i].push(await insert(tables[i], vectors, STATEMENT_ROWS));
  for (const [i] of VARIANTS.entries()) ratios[i].push(tail[i][round] / tail[0][round]);
}

const recall: number[] = [];
for (const [i, variant] of VARIANTS.entries()) {
  let found = 0;
  for (let q = 0; q < QUERIES; q++) {
    const query = text(unitVector());
    await client.query('BEGIN');
    await client.query('SET LOCAL enable_indexscan = off');
    const exact = new Set((await client.query(cosineNearest(tables[i]), [query])).rows.map((r) => r.id));
    await client.query('COMMIT');
    const approximate = (await client.query(variant.nearest(tables[i]), [query])).rows.map((r) => r.id);
    found += approximate.filter((id) => exact.has(id)).length;
  }
  recall.push(found / (QUERIES * K));
}

const sizes: string[] = [];
for (const table of tables) sizes.push((await client.query(`SELECT pg_size_pretty(pg_indexes_size('${table}'::regclass)) AS size`)).rows[0].size as string);
console.log('| variant | fill µs/row | tail µs/row (median) | tail ratio to default (median) | recall@10 | indexes size |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const [i, variant] of VARIANTS.entries()) {
  console.log(`| ${variant.name} | ${fill[i].toFixed(0)} | ${median(tail[i]).toFixed(0)} | ${median(ratios[i]).toFixed(2)} | ${recall[i].toFixed(3)} | ${sizes[i]} |`);
}
console.log(
  `\nthe ${ROWS} rows indexed in bulk (loaded, then one CREATE INDEX, m 16, ef_construction 64): load ${loaded.toFixed(0)} + build ${built.toFixed(0)} µs a row, ` +
    `against ${fill[0].toFixed(0)} µs a row inserted into the index: ${((loaded + built) / fill[0]).toFixed(2)} of it`,
);
for (const table of tables) await client.query(`DROP TABLE ${table}`);
await client.end();
