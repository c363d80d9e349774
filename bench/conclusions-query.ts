/**
 * `POST /v3/workspaces/{w}/conclusions/query` over HTTP (`npm run bench`, case "conclusions/query
 * v3"; alone: `BENCH_ONLY=conclusions npm run bench`): `engram serve` in a child process with the
 * fake model server (test/support, in a process of its own) as its embedding model, answering at
 * once with 1536-wide vectors, so what is measured is Engram's own overhead: the request read and
 * checked, the query embedded (one call to the model), the nearest conclusions of the collection
 * found (sqlite-vec, or pgvector), read, filtered and serialised.
 *
 * The conclusions are loaded through the store (not over HTTP), each with the vector the fake
 * embedder returns for its text, so a query with a conclusion's text finds that conclusion first
 * (checked before measuring). Each request asks another conclusion's text in another collection.
 *
 * Environment (optional): BENCH_CONCLUSIONS (default 100000), BENCH_CONCLUSION_COLLECTIONS (1000),
 * BENCH_CONCLUSION_DIMENSIONS (1536); BENCH_DATABASE_URL as for the other cases (default: a fresh
 * SQLite file; on PostgreSQL a unique workspace, deleted at the end); BENCH_EMBEDDING_ENCODING
 * (base64, as from OpenAI's API; float for JSON numbers).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { openDatabase } from '../src/runtime/database.js';
import type { ConclusionRecord } from '../src/storage/store.js';
import { hashedVector } from '../test/support/fake-model-server.js';
import { startServerProcess, type ServerProcess } from '../test/support/server-process.js';
import { forkServer, profileArgs } from './ipc.js';
import { percentile } from './load.js';
import { cpuSeconds } from './process-stat.js';

export const CONCLUSIONS_CASE = 'conclusions/query v3';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TOP_K = 10;
/** Queries checked one at a time before measuring: the first result must be the conclusion asked. */
const CHECKED = 200;
/** Embedding calls timed alone, driver to fake server, to show what the model's part costs. */
const EMBED_ALONE = 500;
/** The aim of issue 9: query p99 under 20 ms on SQLite. */
const AIM_MS = 20;

export interface ConclusionsOptions {
  databaseUrl?: string;
  conclusions: number;
  collections: number;
  dimensions: number;
  durationS: number;
  warmupS: number;
  connections: number;
}

interface Run {
  connections: number;
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  engramCpuUs: number;
  modelCpuUs: number;
  embeddingCalls: number;
}

export interface ConclusionsResult {
  options: ConclusionsOptions;
  onPostgres: boolean;
  loadS: number;
  fileBytes?: number;
  checked: number;
  foundFirst: number;
  embedAlone: { p50: number; p99: number };
  runs: Run[];
}

const SUBJECTS = ['the garden', 'her sister', 'the new job', 'hiking', 'the dog', 'jazz records', 'the move to Lisbon', 'chess', 'the night shift', 'baking bread'];
const VERBS = ['talks about', 'worries about', 'is proud of', 'spends weekends on', 'mentioned', 'dislikes', 'plans to change', 'asked advice on'];

/** Collection c: peer c observes peer c + 1 (so 1,000 collections are 1,000 distinct pairs). */
const observerOf = (c: number) => `peer-${c}`;
const observedOf = (c: number, collections: number) => `peer-${(c + 1) % collections}`;

/** The text of conclusion i (collection i mod C), distinct for every i. */
function contentOf(i: number, collections: number): string {
  const observed = observedOf(i % collections, collections);
  return `${observed} ${VERBS[i % VERBS.length]} ${SUBJECTS[Math.floor(i / VERBS.length) % SUBJECTS.length]} (note ${i})`;
}

/** Conclusion asked by request k: another collection each time (7919 is prime to 1,000), another member of it. */
function askedBy(k: number, options: ConclusionsOptions): number {
  const perCollection = Math.floor(options.conclusions / options.collections);
  const collection = (k * 7919) % options.collections;
  return ((k * 31) % perCollection) * options.collections + collection;
}

function requestOf(k: number, options: ConclusionsOptions, workspaceId: string): { path: string; body: string; expected: string } {
  const i = askedBy(k, options);
  const c = i % options.collections;
  return {
    path: `/v3/workspaces/${workspaceId}/conclusions/query`,
    body: JSON.stringify({ query: contentOf(i, options.collections), top_k: TOP_K, filters: { observer: observerOf(c), observed: observedOf(c, options.collections) } }),
    expected: `c${i}`,
  };
}

async function load(databaseUrl: string, workspaceId: string, options: ConclusionsOptions): Promise<number> {
  const database = await openDatabase(databaseUrl);
  const store = database.store;
  try {
    const now = new Date();
    await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
    await store.peers.ensure(workspaceId, Array.from({ length: options.collections }, (_, c) => observerOf(c)), now);
    const started = performance.now();
    const batch = 1_000;
    for (let start = 0; start < options.conclusions; start += batch) {
      const records: ConclusionRecord[] = [];
      for (let i = start; i < Math.min(options.conclusions, start + batch); i++) {
        const c = i % options.collections;
        const createdAt = new Date(now.getTime() - (options.conclusions - i) * 1000);
        records.push({ id: `c${i}`, workspaceId, observerId: observerOf(c), observedId: observedOf(c, options.collections), sessionId: null, content: contentOf(i, options.collections), level: 'explicit', sourceIds: null, timesDerived: 1, createdAt });
      }
      const vectors = records.map((r) => ({
        conclusionId: r.id,
        workspaceId,
        observerId: r.observerId,
        observedId: r.observedId,
        level: r.level,
        sessionId: null,
        vector: Float32Array.from(hashedVector(r.content, options.dimensions)),
      }));
      await store.transaction(async (tx) => {
        await tx.memory.insertConclusions(records);
        await tx.vectors.putConclusions(vectors);
      });
      if ((start / batch) % 10 === 9) process.stdout.write('.');
    }
    return (performance.now() - started) / 1000;
  } finally {
    await database.driver.close();
  }
}

/** CPU time (user + system) of another process, µs, from /proc (Linux); NaN elsewhere. */
function processCpuUs(pid: number | undefined): number {
  return (cpuSeconds(pid) ?? NaN) * 1e6;
}

function cannon(base: string, connections: number, duration: number, next: () => { path: string; body: string }): autocannon.Options {
  return {
    url: `${base}/`,
    method: 'POST',
    connections,
    duration,
    timeout: 10,
    headers: { 'content-type': 'application/json' },
    requests: [{ method: 'POST', setupRequest: (request) => ({ ...request, ...next() }) }],
  };
}

export async function runConclusionsBench(options: ConclusionsOptions): Promise<ConclusionsResult> {
  const onPostgres = options.databaseUrl !== undefined;
  const dir = mkdtempSync(join(tmpdir(), 'engram-bench-conclusions-'));
  const databaseUrl = options.databaseUrl ?? join(dir, 'conclusions.db');
  const workspaceId = onPostgres ? `bench-conclusions-${randomBytes(4).toString('hex')}` : 'bench-conclusions';
  const model = forkServer('fake model server', join(ROOT, 'bench/fake-model-child.ts'), { cwd: ROOT, execArgv: ['--import', 'tsx'] });
  let server: ServerProcess | undefined;
  try {
    const loadS = await load(databaseUrl, workspaceId, options);
    const fileBytes = onPostgres ? undefined : statSync(databaseUrl).size + sizeOr0(`${databaseUrl}-wal`);
    const fake = await model.call<{ url: string; env: Record<string, string> }>('listen', { dimensions: options.dimensions });
    server = await startServerProcess({
      ...fake.env,
      DATABASE_URL: databaseUrl,
      EMBEDDING_VECTOR_DIMENSIONS: String(options.dimensions),
      // as from OpenAI's API (the server's default there); BENCH_EMBEDDING_ENCODING=float for JSON numbers
      EMBEDDING_ENCODING_FORMAT: process.env.BENCH_EMBEDDING_ENCODING ?? 'base64',
      LOG_LEVEL: 'warn',
    }, [], profileArgs());
    const base = server.baseUrl;

    // the answers are right: a conclusion's own text finds it first
    let foundFirst = 0;
    for (let k = 0; k < CHECKED; k++) {
      const { path, body, expected } = requestOf(1_000_003 + k, options, workspaceId);
      const response = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${text.slice(0, 300)}`);
      const found = JSON.parse(text) as { id: string }[];
      const perCollection = Math.floor(options.conclusions / options.collections);
      if (found.length !== Math.min(TOP_K, perCollection)) throw new Error(`expected ${Math.min(TOP_K, perCollection)} conclusions, got ${found.length}`);
      if (found[0].id === expected) foundFirst++;
    }

    // what the model's part costs on its own: one embedding call of a query, one at a time
    const alone: number[] = [];
    for (let k = 0; k < EMBED_ALONE; k++) {
      const query = contentOf(askedBy(k, options), options.collections);
      const t0 = performance.now();
      const response = await fetch(`${fake.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fake-embed', input: [query] }) });
      await response.json();
      alone.push(performance.now() - t0);
    }
    const aloneSorted = Float64Array.from(alone).sort();
    await model.call('embeddings');

    const runs: Run[] = [];
    let k = 0;
    const next = () => requestOf(k++, options, workspaceId);
    for (const connections of [1, options.connections]) {
      await autocannon(cannon(base, connections, options.warmupS, next));
      await model.call('embeddings');
      const latencies: number[] = [];
      const engramBefore = processCpuUs(server.child.pid);
      const modelBefore = await model.call<NodeJS.CpuUsage>('cpu');
      const instance = autocannon(cannon(base, connections, options.durationS, next)) as unknown as autocannon.Instance & Promise<autocannon.Result>;
      instance.on('response', (_client, _status, _bytes, responseMs) => latencies.push(responseMs));
      const result = await instance;
      const engramCpu = processCpuUs(server.child.pid) - engramBefore;
      const modelAfter = await model.call<NodeJS.CpuUsage>('cpu');
      const embeddingCalls = await model.call<number>('embeddings');
      const sorted = Float64Array.from(latencies).sort();
      const completed = result.requests.total;
      runs.push({
        connections,
        requests: completed,
        rps: completed / result.duration,
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        max: sorted[sorted.length - 1] ?? NaN,
        non2xx: result.non2xx,
        errors: result.errors,
        timeouts: result.timeouts,
        engramCpuUs: engramCpu / completed,
        modelCpuUs: (modelAfter.user - modelBefore.user + modelAfter.system - modelBefore.system) / completed,
        embeddingCalls,
      });
    }
    return {
      options,
      onPostgres,
      loadS,
      fileBytes,
      checked: CHECKED,
      foundFirst,
      embedAlone: { p50: percentile(aloneSorted, 50), p99: percentile(aloneSorted, 99) },
      runs,
    };
  } finally {
    if (server !== undefined) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    await model.stop();
    if (onPostgres) await dropWorkspace(databaseUrl, workspaceId);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function dropWorkspace(databaseUrl: string, workspaceId: string): Promise<void> {
  const database = await openDatabase(databaseUrl);
  try {
    await database.store.workspaces.delete(workspaceId);
  } finally {
    await database.driver.close();
  }
}

function sizeOr0(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

export function printConclusions(result: ConclusionsResult): void {
  const o = result.options;
  const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');
  const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');
  const where = result.onPostgres ? 'PostgreSQL (pgvector)' : 'SQLite (sqlite-vec)';
  console.log('');
  console.log(
    `${CONCLUSIONS_CASE} on ${where}: ${int(o.conclusions)} conclusions in ${int(o.collections)} collections (observer/observed pairs), ` +
      `${o.dimensions} dimensions, top_k ${TOP_K}; engram serve with the fake embedding model (own process, answering at once)`,
  );
  const file = result.fileBytes === undefined ? '' : `, file ${(result.fileBytes / 1e6).toFixed(0)} MB`;
  console.log(`  loaded through the store in ${result.loadS.toFixed(1)} s (${int(o.conclusions / result.loadS)} conclusions/s with their vectors${file})`);
  console.log(`  check: the first result is the conclusion whose text was asked in ${result.foundFirst} of ${result.checked} queries`);
  console.log('');
  console.log('| connections | req/s | p50 / p99 ms | max ms | engram CPU µs/req | fake model CPU µs/req | embedding calls/req | non-2xx | errors/timeouts |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of result.runs) {
    console.log(
      `| ${r.connections} | ${int(r.rps)} | ${ms(r.p50)} / ${ms(r.p99)} | ${ms(r.max)} | ${int(r.engramCpuUs)} | ${int(r.modelCpuUs)} | ` +
        `${(r.embeddingCalls / Math.max(1, r.requests)).toFixed(2)} | ${r.non2xx} | ${r.errors}/${r.timeouts} |`,
    );
  }
  console.log(`  the embedding call alone (driver to fake server, one at a time): p50 ${ms(result.embedAlone.p50)} ms, p99 ${ms(result.embedAlone.p99)} ms`);
  const note = result.onPostgres ? ' (set for SQLite; this run is on PostgreSQL, so informational)' : '';
  console.log(`  aim: p99 < ${AIM_MS} ms on SQLite${note}:`);
  for (const r of result.runs) {
    const how = r.connections === 1 ? 'one request at a time: the latency one client sees' : `${r.connections} requests in flight: includes waiting behind the others`;
    console.log(`    ${r.connections} connection${r.connections === 1 ? '' : 's'}: p99 ${ms(r.p99)} ms -> ${r.p99 < AIM_MS ? 'MET' : 'NOT MET'} (${how})`);
  }
  const bad = result.runs.filter((r) => r.non2xx > 0 || r.errors > 0);
  if (bad.length > 0) console.log(`  WARNING: non-2xx responses or errors with ${bad.map((r) => r.connections).join(', ')} connections (those numbers are not meaningful)`);
}
