/**
 * What several writers at once cost pgvector's HNSW index: under the soak the message vectors'
 * inserts come from every embedding job running at the time (up to half of WORKER_CONCURRENCY in
 * each process), and their statements took longer with two processes than with one. One table
 * with the index Engram creates (m 16, ef_construction 64), filled with BENCH_HNSW_ROWS uniform
 * unit vectors (default 40,000) BENCH_HNSW_DIMENSIONS wide (default 64, the soak's width); then
 * BENCH_HNSW_ROUNDS rounds (default 5), each inserting BENCH_HNSW_TAIL vectors (default 800) in
 * 5-row statements once per case, the cases in a new order each round:
 *
 * - 1 writer; 2 and 4 writers side by side (the tail split between them);
 * - 1 writer whose statements go to 4 connections in turn (one statement at a time);
 * - 4 writers taking turns: each statement in a transaction that first takes one advisory lock
 *   (pg_advisory_xact_lock), so that one insert runs at a time.
 *
 * Prints per case the wall time and the database's CPU (its backends', from /proc: run it on the
 * database's machine) in microseconds a row, medians of the rounds, and their ratios to one
 * writer taken within each round (median).
 *
 * Needs a PostgreSQL with pgvector on this machine: BENCH_DATABASE_URL or DATABASE_URL (its table
 * `hnsw_writers_bench` is replaced), e.g. `node scripts/with-postgres.mjs npx tsx bench/hnsw-writers.ts`.
 */
import pg from 'pg';
import { cpuSeconds } from './process-stat.js';
import { median, seededUnitVectors } from './stats.js';

const env = process.env;
const URL = env.BENCH_DATABASE_URL ?? env.DATABASE_URL;
const ROWS = Number(env.BENCH_HNSW_ROWS ?? 40_000);
const DIMENSIONS = Number(env.BENCH_HNSW_DIMENSIONS ?? 64);
const ROUNDS = Number(env.BENCH_HNSW_ROUNDS ?? 5);
const TAIL = Number(env.BENCH_HNSW_TAIL ?? 800);
const STATEMENT_ROWS = 5;
const TABLE = 'hnsw_writers_bench';
/** Any number: the advisory lock the turns-taking writers share. */
const TURN_LOCK = 4_811_207;

if (!URL?.startsWith('postgres')) {
  console.error('hnsw-writers: set BENCH_DATABASE_URL (or DATABASE_URL) to a PostgreSQL with pgvector, or run it through node scripts/with-postgres.mjs');
  process.exit(2);
}

const unitVector = seededUnitVectors(DIMENSIONS, 0x9e3779b9);
const text = (v: number[]) => `[${v.join(',')}]`;

/** CPU seconds (user and system) of a writer's backend so far. */
function backendCpu(pid: number): number {
  const seconds = cpuSeconds(pid);
  if (seconds === undefined) throw new Error(`hnsw-writers: no /proc/${pid}/stat (the backend ended, or this is not Linux)`);
  return seconds;
}

interface Writer {
  client: pg.Client;
  pid: number;
}

async function connect(): Promise<Writer> {
  const client = new pg.Client({ connectionString: URL });
  await client.connect();
  const pid = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
  return { client, pid };
}

const INSERT = `INSERT INTO ${TABLE} (embedding) SELECT e::vector FROM unnest($1::text[]) AS r(e)`;

/**
 * How a case's statements go: split among the writers, each sending its own one after another
 * (`side by side`), the same with a lock taken before each (`turns`), or one statement at a time,
 * each on the next connection (`rotating`).
 */
type Mode = 'side by side' | 'turns' | 'rotating';

/** Sends one statement of `rows` on `writer`, in `mode`. */
async function send(writer: Writer, rows: number[][], mode: Mode): Promise<void> {
  const chunk = rows.map(text);
  if (mode !== 'turns') {
    await writer.client.query(INSERT, [chunk]);
    return;
  }
  await writer.client.query('BEGIN');
  await writer.client.query('SELECT pg_advisory_xact_lock($1)', [TURN_LOCK]);
  await writer.client.query(INSERT, [chunk]);
  await writer.client.query('COMMIT');
}

/** Inserts `vectors` through `writers` in `mode`; wall and backend CPU µs a row. */
async function insert(writers: Writer[], vectors: number[][], mode: Mode): Promise<{ wall: number; cpu: number }> {
  const cpuBefore = writers.reduce((sum, w) => sum + backendCpu(w.pid), 0);
  const started = process.hrtime.bigint();
  if (mode === 'rotating') {
    for (let at = 0, turn = 0; at < vectors.length; at += STATEMENT_ROWS, turn++) await send(writers[turn % writers.length], vectors.slice(at, at + STATEMENT_ROWS), mode);
  } else {
    const share = Math.ceil(vectors.length / writers.length);
    await Promise.all(
      writers.map(async (writer, i) => {
        const mine = vectors.slice(i * share, (i + 1) * share);
        for (let at = 0; at < mine.length; at += STATEMENT_ROWS) await send(writer, mine.slice(at, at + STATEMENT_ROWS), mode);
      }),
    );
  }
  const wall = Number(process.hrtime.bigint() - started) / 1000 / vectors.length;
  const cpu = ((writers.reduce((sum, w) => sum + backendCpu(w.pid), 0) - cpuBefore) * 1e6) / vectors.length;
  return { wall, cpu };
}

const writers = [await connect(), await connect(), await connect(), await connect()];
const main = writers[0].client;
await main.query('CREATE EXTENSION IF NOT EXISTS vector');
await main.query(`DROP TABLE IF EXISTS ${TABLE}`);
await main.query(`CREATE TABLE ${TABLE} (id bigserial PRIMARY KEY, embedding vector(${DIMENSIONS}) NOT NULL)`);
await main.query(`CREATE INDEX ON ${TABLE} USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)`);
console.log(`pgvector HNSW, writers at once: ${ROWS} rows of ${DIMENSIONS} dimensions, then ${ROUNDS} rounds of ${TAIL} a case in ${STATEMENT_ROWS}-row statements`);
const fill = Array.from({ length: ROWS }, unitVector);
for (let i = 0; i < fill.length; i += 1000) await main.query(INSERT, [fill.slice(i, i + 1000).map(text)]);

const CASES: { name: string; writers: number; mode: Mode }[] = [
  { name: '1 writer', writers: 1, mode: 'side by side' },
  { name: '1 writer, its statements rotating over 4 connections', writers: 4, mode: 'rotating' },
  { name: '2 writers at once', writers: 2, mode: 'side by side' },
  { name: '4 writers at once', writers: 4, mode: 'side by side' },
  { name: '4 writers taking turns (advisory lock)', writers: 4, mode: 'turns' },
];
const walls: number[][] = CASES.map(() => []);
const cpus: number[][] = CASES.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  // a new order each round: the table grows as the rounds go, alike for every case
  const order = CASES.map((_, i) => (i + round) % CASES.length);
  for (const i of order) {
    const { wall, cpu } = await insert(writers.slice(0, CASES[i].writers), Array.from({ length: TAIL }, unitVector), CASES[i].mode);
    walls[i].push(wall);
    cpus[i].push(cpu);
  }
  process.stderr.write(`  round ${round + 1} of ${ROUNDS}\n`);
}

const ratio = (values: number[][], i: number) => median(values[i].map((value, round) => value / values[0][round]));
console.log('| case | wall µs/row | ratio to 1 writer | database CPU µs/row | ratio to 1 writer |');
console.log('|---|---:|---:|---:|---:|');
for (const [i, c] of CASES.entries()) {
  console.log(`| ${c.name} | ${median(walls[i]).toFixed(0)} | ${ratio(walls, i).toFixed(2)} | ${median(cpus[i]).toFixed(0)} | ${ratio(cpus, i).toFixed(2)} |`);
}
await main.query(`DROP TABLE ${TABLE}`);
for (const writer of writers) await writer.client.end();
