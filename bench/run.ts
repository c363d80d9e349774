/**
 * `npm run bench`: Engram's HTTP throughput on a large workspace, each case beside a bare
 * node:http server answering the same bytes. See bench/README.md for how to read the output.
 *
 * Environment (all optional):
 *   BENCH_DATABASE_URL  postgres://... runs against PostgreSQL (default: a fresh SQLite file)
 *   BENCH_DURATION      measured seconds per case and server (default 6)
 *   BENCH_WARMUP        warm-up seconds before each measurement (default 1.5)
 *   BENCH_CONNECTIONS   concurrent connections (default 16)
 *   BENCH_PEERS, BENCH_SESSIONS  dataset size (default 100000 each)
 *   BENCH_MEMBERSHIPS   extra memberships of other peers, spread over the sessions (default 0)
 *   BENCH_ONLY          run only the cases whose name contains this text (e.g. "peers/list")
 *   BENCH_BREAKDOWN     0 skips the in-process per-layer timings printed at the end
 *   BENCH_CPU_PROF      a directory: the Engram process runs with --cpu-prof and writes its
 *                       profile there on exit (open it in Chrome DevTools or speedscope)
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { BENCH_PEER, peerId, sessionId, type DatasetShape, type LoadStats } from './dataset.js';
import type { Breakdown, StartRequest } from './engram-server.js';
import { forkServer, type ChildServer } from './ipc.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function numberFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

const DURATION_S = numberFromEnv('BENCH_DURATION', 6);
const WARMUP_S = numberFromEnv('BENCH_WARMUP', 1.5);
const CONNECTIONS = Math.round(numberFromEnv('BENCH_CONNECTIONS', 16));
const PEERS = Math.round(numberFromEnv('BENCH_PEERS', 100_000));
const SESSIONS = Math.round(numberFromEnv('BENCH_SESSIONS', 100_000));
const MEMBERSHIPS = Math.round(process.env.BENCH_MEMBERSHIPS === '0' ? 0 : numberFromEnv('BENCH_MEMBERSHIPS', 0));
const BREAKDOWN_ITERATIONS = 2_000;
/** The aim reported against: Engram at >= 60% of bare node:http on peers/list (SQLite). */
const AIM_RATIO = 0.6;

// ------------------------------------------------------------------ cases

interface Case {
  name: string;
  method?: 'GET' | 'POST';
  path: string;
  /** Changes the data: the in-process breakdown is taken before the first such case runs. */
  writes?: boolean;
  /** Not one of the brief's cases: shown for reading the others (e.g. the framework floor). */
  diagnostic?: boolean;
  headers?: Record<string, string>;
  body?: string;
  /** Per-request path and body, for cases that must not repeat one request. */
  next?: (k: number) => { path: string; body: string };
}

function casesFor(shape: DatasetShape): Case[] {
  const ws = encodeURIComponent(shape.workspaceId);
  // add-peers walks (session, peer) pairs that are not memberships yet, so each request
  // inserts a row: session k mod S, peer (7919 k + 1) mod P (7919 is prime, so pairs spread).
  const addPeers = (k: number) => ({
    path: `/v3/workspaces/${ws}/sessions/${sessionId(k % shape.sessions)}/peers`,
    body: JSON.stringify({ [peerId(1 + ((k * 7919) % (shape.peers - 1)))]: {} }),
  });
  return [
    { name: 'peers/list v3', path: `/v3/workspaces/${ws}/peers/list?page=1&size=50` },
    { name: 'sessions of peer v3', path: `/v3/workspaces/${ws}/peers/${BENCH_PEER}/sessions?size=50` },
    { name: 'sessions of peer v2', path: `/v2/workspaces/${ws}/peers/${BENCH_PEER}/sessions` },
    {
      name: 'add-peers v3',
      path: addPeers(0).path,
      headers: { 'content-type': 'application/json' },
      body: addPeers(0).body,
      next: addPeers,
      writes: true,
    },
    // Engram's cheapest route: what Fastify plus Engram's hooks cost with no route work
    { name: 'GET /health (floor)', method: 'GET', path: '/health', diagnostic: true },
  ];
}

// ------------------------------------------------------------------ measuring

interface Captured {
  status: number;
  contentType: string;
  body: Buffer;
}

interface Measurement {
  rps: number;
  requests: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Server CPU (user + system) per completed request, µs. */
  cpuUsPerRequest: number;
  /** The kernel's share of it (system time: socket reads and writes, fsync, ...), µs. */
  sysUsPerRequest: number;
  /** Server CPU use during the run, in cores (1.0 = one core busy all the time). */
  cpuCores: number;
}

/** One request to Engram, to learn the exact response the bare server must repeat. */
async function capture(base: string, kase: Case): Promise<Captured> {
  const response = await fetch(base + kase.path, { method: kase.method ?? 'POST', headers: kase.headers, body: kase.body });
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? 'application/octet-stream',
    body: Buffer.from(await response.arrayBuffer()),
  };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function cannonOptions(base: string, kase: Case, duration: number, counter: { k: number }): autocannon.Options {
  const options: autocannon.Options = {
    url: base + kase.path,
    method: kase.method ?? 'POST',
    connections: CONNECTIONS,
    duration,
    timeout: 10,
    headers: kase.headers,
    body: kase.body,
  };
  const next = kase.next;
  if (next !== undefined) {
    options.requests = [
      {
        method: 'POST',
        setupRequest: (request) => {
          const { path, body } = next(counter.k++);
          return { ...request, path, body };
        },
      },
    ];
  }
  return options;
}

async function measure(server: ChildServer, base: string, kase: Case, counter: { k: number }): Promise<Measurement> {
  await autocannon(cannonOptions(base, kase, WARMUP_S, counter));

  // autocannon's own histogram has 1 ms resolution; record exact latencies instead
  const latencies: number[] = [];
  const before = await server.call<NodeJS.CpuUsage>('cpu');
  const wallStart = process.hrtime.bigint();
  // without a callback autocannon returns its event emitter, made thenable
  const instance = autocannon(cannonOptions(base, kase, DURATION_S, counter)) as unknown as autocannon.Instance &
    Promise<autocannon.Result>;
  instance.on('response', (_client, _status, _bytes, responseMs) => latencies.push(responseMs));
  const result = await instance;
  const wallUs = Number(process.hrtime.bigint() - wallStart) / 1000;
  const after = await server.call<NodeJS.CpuUsage>('cpu');

  const cpuUs = after.user - before.user + (after.system - before.system);
  const sorted = Float64Array.from(latencies).sort();
  const completed = result.requests.total;
  return {
    rps: completed / result.duration,
    requests: completed,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    cpuUsPerRequest: completed > 0 ? cpuUs / completed : NaN,
    sysUsPerRequest: completed > 0 ? (after.system - before.system) / completed : NaN,
    cpuCores: cpuUs / wallUs,
  };
}

// ------------------------------------------------------------------ output

const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');
const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

function describeLoad(load: LoadStats): string {
  const s = (x: number) => (x / 1000).toFixed(2);
  return (
    `loaded ${int(load.peers)} peers, ${int(load.sessions)} sessions, ${load.memberships} memberships of ${BENCH_PEER}` +
    (load.extraMemberships > 0 ? ` and ${int(load.extraMemberships)} of other peers` : '') +
    ' ' +
    `in ${s(load.totalMs)} s (peers ${s(load.peersMs)} s, sessions ${s(load.sessionsMs)} s, memberships ${s(load.membershipsMs)} s)`
  );
}

// ------------------------------------------------------------------ main

const children: ChildServer[] = [];
let tempDir: string | undefined;
let cleaned = false;

async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  await Promise.all(children.map((child) => child.stop()));
  if (tempDir !== undefined) rmSync(tempDir, { recursive: true, force: true });
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping servers and removing temporary files`);
    void cleanup().finally(() => process.exit(130));
  });
}

async function main(): Promise<void> {
  const started = performance.now();
  const pgUrl = process.env.BENCH_DATABASE_URL;
  const onPostgres = pgUrl !== undefined && /^postgres(ql)?:\/\//i.test(pgUrl);
  if (pgUrl !== undefined && pgUrl !== '' && !onPostgres) throw new Error('BENCH_DATABASE_URL must be a postgres:// URL');
  tempDir = mkdtempSync(join(tmpdir(), 'engram-bench-'));
  const databaseUrl = onPostgres ? pgUrl! : join(tempDir, 'bench.db');
  const shape: DatasetShape = {
    // a PostgreSQL database may be shared: a unique workspace, deleted at the end
    workspaceId: onPostgres ? `bench-${randomBytes(4).toString('hex')}` : 'bench',
    peers: PEERS,
    sessions: SESSIONS,
    benchPeerSessions: 60,
    extraMemberships: MEMBERSHIPS,
  };

  const only = process.env.BENCH_ONLY;
  const cases = casesFor(shape).filter((kase) => !only || kase.name.includes(only));
  if (cases.length === 0) throw new Error(`BENCH_ONLY="${only}" matches no case`);

  const execArgv = ['--import', 'tsx'];
  const profileDir = process.env.BENCH_CPU_PROF;
  const engramArgv = [...execArgv];
  if (profileDir) {
    mkdirSync(resolve(profileDir), { recursive: true });
    engramArgv.push('--cpu-prof', `--cpu-prof-dir=${resolve(profileDir)}`);
  }
  const engram = forkServer('engram server', join(ROOT, 'bench/engram-server.ts'), { cwd: ROOT, execArgv: engramArgv });
  children.push(engram);
  const bare = forkServer('bare server', join(ROOT, 'bench/bare-server.ts'), { cwd: ROOT, execArgv });
  children.push(bare);

  const where = onPostgres ? `PostgreSQL (${new URL(pgUrl!).host})` : `SQLite (${databaseUrl})`;
  console.log(`Engram benchmark on ${where}; node ${process.version}; ${CONNECTIONS} connections, ` +
    `${WARMUP_S} s warm-up + ${DURATION_S} s per case and server`);
  const startRequest: StartRequest = { databaseUrl, shape, dropWorkspaceOnClose: onPostgres };
  const [engramInfo, bareInfo] = await Promise.all([
    engram.call<{ port: number; load: LoadStats }>('start', startRequest),
    bare.call<{ port: number }>('listen'),
  ]);
  console.log(describeLoad(engramInfo.load));
  const engramBase = `http://127.0.0.1:${engramInfo.port}`;
  const bareBase = `http://127.0.0.1:${bareInfo.port}`;

  const rows: { kase: Case; engram: Measurement; bare: Measurement; captured: Captured }[] = [];
  const wantBreakdown = process.env.BENCH_BREAKDOWN !== '0';
  let breakdowns: Breakdown[] | undefined;
  const takeBreakdown = async () => {
    if (!wantBreakdown || breakdowns !== undefined) return;
    process.stdout.write('  per-layer timings (in-process)...');
    breakdowns = await engram.call<Breakdown[]>('breakdown', { iterations: BREAKDOWN_ITERATIONS });
    console.log(' done');
  };
  for (const kase of cases) {
    if (kase.writes) await takeBreakdown();
    const counter = { k: 1 }; // k = 0 is the captured request
    const captured = await capture(engramBase, kase);
    if (captured.status < 200 || captured.status > 299) {
      console.log(`!! ${kase.name}: Engram answered ${captured.status}: ${captured.body.toString('utf8').slice(0, 300)}`);
    }
    await bare.call('set', { status: captured.status, contentType: captured.contentType, body: captured.body.toString('base64') });
    process.stdout.write(`  ${kase.name}: engram...`);
    const engramResult = await measure(engram, engramBase, kase, counter);
    process.stdout.write(` ${int(engramResult.rps)} req/s; bare...`);
    const bareResult = await measure(bare, bareBase, kase, { k: 1 });
    console.log(` ${int(bareResult.rps)} req/s (response ${captured.status}, ${captured.body.length} bytes)`);
    rows.push({ kase, engram: engramResult, bare: bareResult, captured });
  }
  await takeBreakdown();

  console.log('');
  console.log(
    table(
      ['case', 'engram req/s', 'bare req/s', 'ratio', 'engram p50/p99 ms', 'bare p50/p99 ms', 'non-2xx engram/bare'],
      rows.map(({ kase, engram: e, bare: b }) => [
        kase.name,
        int(e.rps),
        int(b.rps),
        (e.rps / b.rps).toFixed(2),
        `${ms(e.p50)} / ${ms(e.p99)}`,
        `${ms(b.p50)} / ${ms(b.p99)}`,
        `${e.non2xx} / ${b.non2xx}`,
      ]),
    ),
  );
  console.log('');
  console.log('server CPU during each measured run (1.00 cores = one core busy all the time):');
  console.log(
    table(
      ['case', 'engram CPU µs/req (sys)', 'engram cores', 'bare CPU µs/req (sys)', 'bare cores', 'errors/timeouts engram', 'bare'],
      rows.map(({ kase, engram: e, bare: b }) => [
        kase.name,
        `${e.cpuUsPerRequest.toFixed(1)} (${e.sysUsPerRequest.toFixed(1)})`,
        e.cpuCores.toFixed(2),
        `${b.cpuUsPerRequest.toFixed(1)} (${b.sysUsPerRequest.toFixed(1)})`,
        b.cpuCores.toFixed(2),
        `${e.errors}/${e.timeouts}`,
        `${b.errors}/${b.timeouts}`,
      ]),
    ),
  );

  const unsaturated = rows.filter((r) => r.bare.cpuCores < 0.85);
  if (unsaturated.length > 0) {
    console.log('');
    console.log(
      `note: the bare server used less than a full core in ${unsaturated.map((r) => r.kase.name).join(', ')}: there its req/s is ` +
        `the load generator's ceiling on this machine, not node:http's, so those ratios flatter Engram. CPU µs/req compares the servers' own cost.`,
    );
  }
  const failures = rows.filter((r) => r.engram.non2xx > 0 || r.bare.non2xx > 0 || r.engram.errors > 0 || r.captured.status >= 300);
  console.log('');
  console.log(
    failures.length === 0
      ? 'non-2xx responses: 0 in every case'
      : `WARNING: non-2xx responses or errors in: ${failures.map((r) => r.kase.name).join(', ')} (numbers for those cases are not meaningful)`,
  );
  const peersList = rows.find((r) => r.kase.name === 'peers/list v3');
  const ratio = peersList === undefined ? NaN : peersList.engram.rps / peersList.bare.rps;
  if (peersList === undefined) {
    console.log('aim: peers/list was not run (BENCH_ONLY)');
  } else if (onPostgres) {
    console.log(`aim (ratio >= ${AIM_RATIO} on peers/list) is set for SQLite; on PostgreSQL the ratio is ${ratio.toFixed(2)} (informational)`);
  } else {
    console.log(`aim: peers/list ratio >= ${AIM_RATIO} on SQLite -> ${ratio.toFixed(2)}: ${ratio >= AIM_RATIO ? 'MET' : 'NOT MET'}`);
  }

  if (breakdowns !== undefined) printBreakdown(breakdowns, rows, onPostgres);
  console.log('');
  console.log(`total ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

function printBreakdown(
  breakdowns: Breakdown[],
  rows: { kase: Case; engram: Measurement; bare: Measurement }[],
  onPostgres: boolean,
): void {
  console.log('');
  console.log(
    `where a request's time goes (µs; layers timed in-process one call at a time, mean of up to ${int(BREAKDOWN_ITERATIONS)} calls, ` +
      'on the data the read cases saw):',
  );
  const floor = rows.find((r) => r.kase.name === 'GET /health (floor)');
  const us = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '').padStart(8);
  for (const breakdown of breakdowns) {
    console.log(`  ${breakdown.name}  POST ${breakdown.url}`);
    for (const layer of breakdown.layers) console.log(`    ${us(layer.us)}  ${layer.label}${layer.note ? `  (${layer.note})` : ''}`);
    const loaded = rows.find((r) => r.kase.name === breakdown.name);
    if (loaded === undefined) continue;
    const sum = breakdown.layers.find((l) => l.label.startsWith('sum:'))?.us ?? NaN;
    console.log(`    ${us(loaded.engram.cpuUsPerRequest)}  under HTTP load: Engram server CPU per request`);
    if (onPostgres) {
      // SQL timings are round trips (PostgreSQL's own work included), not Engram's CPU
      console.log('                (PostgreSQL: SQL times above are round trips, so no "rest" is derived)');
    } else {
      console.log(`    ${us(loaded.engram.cpuUsPerRequest - sum)}    rest: HTTP parse/write, Fastify, route wrapper, GC (CPU per request - sum)`);
    }
    if (floor !== undefined) {
      console.log(`    ${us(floor.engram.cpuUsPerRequest)}    for scale: GET /health under load (Fastify + Engram hooks, no route work)`);
    }
    console.log(`    ${us(loaded.bare.cpuUsPerRequest)}    for scale: bare node:http, same response bytes`);
  }
}

try {
  await main();
} catch (error) {
  console.error('benchmark failed:', error);
  process.exitCode = 1;
} finally {
  await cleanup();
  if (process.env.BENCH_CPU_PROF) console.log(`CPU profile of the Engram process written to ${resolve(process.env.BENCH_CPU_PROF)}`);
}
