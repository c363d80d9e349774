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
 *   BENCH_MESSAGES      messages loaded for the message list and search cases (default 1000000)
 *   BENCH_WEBHOOK_EVENTS  events per webhook case (default 1000)
 *   BENCH_ONLY          run only the cases whose name contains this text, or one of several
 *                       separated by "|" (e.g. "peers/list", "peers/list|search workspace v3",
 *                       "deriver")
 *   BENCH_DERIVER_MESSAGES, BENCH_DERIVER_SESSIONS  the deriver case's size (default 3000, 30)
 *   BENCH_CONCLUSIONS, BENCH_CONCLUSION_COLLECTIONS, BENCH_CONCLUSION_DIMENSIONS  the
 *                       conclusions/query case's size (default 100000, 1000, 1536)
 *   BENCH_CHAT_MESSAGES, BENCH_CHAT_CONCLUSIONS, BENCH_CHAT_SESSIONS, BENCH_CHAT_DIMENSIONS
 *                       the peer chat case's size (default 100000, 10000, 100, 1536);
 *                       BENCH_CHAT_TOOL=0 skips its variant whose first model turn calls a tool
 *   BENCH_FLAT_ROWS     the large store of the "flat with size" case (default 1000000)
 *   BENCH_IDLE_SECONDS, BENCH_IDLE_PEERS  the "after idle" case's idle time (default 30) and
 *                       peers (default 1000)
 *   BENCH_BREAKDOWN     0 skips the in-process per-layer timings and the search analysis
 *   BENCH_LOG_ROUNDS, BENCH_LOG_LINES  the request line's own CPU (lines written through a
 *                       log at info, less the same calls at warn, taking turns): rounds
 *                       (default 9) and lines a round (default 200000)
 *   BENCH_CPU_PROF      a directory: the Engram process runs with --cpu-prof and writes its
 *                       profile there on exit (open it in Chrome DevTools or speedscope)
 *   BENCH_PROCESSES     server processes of the many-process columns (`engram serve --processes
 *                       N` and a node:cluster of the bare server; default: one per core)
 *   BENCH_LOAD          autocannon: load from autocannon in this process even when wrk is
 *                       installed (default: wrk when on the PATH, see bench/wrk.ts)
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Corpus } from './corpus.js';
import {
  BENCH_PEER,
  chatSenders,
  chatSessionId,
  LIST_SESSION,
  peerId,
  sessionId,
  type DatasetShape,
  type LoadStats,
  type MessageShape,
} from './dataset.js';
import type { Breakdown, MessagesLoaded, SearchAnalysis, SearchQuery, StartRequest } from './engram-server.js';
import { startEngramGroup } from './engram-group.js';
import { freePort } from '../test/support/free-port.js';
import { forkServer, type ChildServer } from './ipc.js';
import { CHAT_CASE, printChat, runChatBench } from './chat.js';
import { CONCLUSIONS_CASE, printConclusions, runConclusionsBench } from './conclusions-query.js';
import { VECTOR_CASE } from './case-names.js';
import { DERIVER_CASE, printDeriver, runDeriverBench } from './deriver.js';
import { ownBenchDatabase } from './own-database.js';
import { FLAT_CASE, printFlat, runFlatBench } from './flat-with-size.js';
import { IDLE_CASE, printIdle, runIdleBench } from './after-idle.js';
import { runSearchEval } from './search-eval.js';
import { measureWebhooks, WEBHOOK_CASES, type WebhookResult } from './webhooks.js';
import { runWrk, wrkAvailable } from './wrk.js';
import { percentile } from './load.js';
import { SERVER_V8_FLAGS } from '../src/server/server-flags.js';
import { median } from './stats.js';

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
const MESSAGES = Math.round(numberFromEnv('BENCH_MESSAGES', 1_000_000));
/** Sessions the loaded messages are spread over (chat-000000 gets 4,000 of 1,000,000). */
const MESSAGE_SESSIONS = 1_000;
/** Vocabulary and Zipf exponent of the generated text (see corpus.ts). */
const VOCABULARY = 20_000;
const ZIPF = 1.1;
/** Rounds of each case (BENCH_ROUNDS): each server measured once a round; ratios are taken within a round, then their median. */
const ROUNDS = Math.round(numberFromEnv('BENCH_ROUNDS', 1));
/** The request line's own cost (requestLineCost): rounds, and lines a round. */
const LOG_ROUNDS = Math.round(numberFromEnv('BENCH_LOG_ROUNDS', 9));
const LOG_LINES = Math.round(numberFromEnv('BENCH_LOG_LINES', 200_000));
const WEBHOOK_EVENTS = Math.round(numberFromEnv('BENCH_WEBHOOK_EVENTS', 1_000));
/** Server processes of the many-process columns. */
const PROCESSES = Math.round(numberFromEnv('BENCH_PROCESSES', availableParallelism()));
/** The aim reported against: N processes serve at least this many times one process's req/s. */
const AIM_SCALING = 1.6;
/** The worker polls this often when idle (WORKER_POLL_MS; Engram's default is 250). */
const WORKER_POLL_MS = 10;
const BREAKDOWN_ITERATIONS = 2_000;
/** The aim reported against: Engram at >= 60% of bare node:http on peers/list (SQLite). */
const AIM_RATIO = 0.6;
/** The search target reported against: p99 under 50 ms on SQLite at 1,000,000 messages. */
const SEARCH_TARGET_MS = 50;
const SEARCH_TARGET_MESSAGES = 1_000_000;

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
  /** Reads the message dataset, which is loaded before the first such case. */
  needsMessages?: boolean;
  /** No bare-server run: responses differ per request, so no one response stands for them. */
  noBare?: boolean;
  /** Connections for this case (default BENCH_CONNECTIONS). */
  connections?: number;
  /** Items each request creates, to print items per second (batch create). */
  itemsPerRequest?: number;
  /** Latencies are also grouped by this label of request k (1-connection runs only). */
  labelOf?: (k: number) => string;
  /** Also measured with the process log on (LOG_LEVEL=info, the default) and at warn (the request log's cost). */
  logged?: boolean;
  /** Also measured with BENCH_PROCESSES server processes (Engram and, unless noBare, bare). */
  group?: boolean;
}

/** Filled once the message dataset is loaded: the search queries picked from it. */
interface MessageData {
  queries: SearchQuery[];
}

function casesFor(shape: DatasetShape, messageData: MessageData, texts: string[]): Case[] {
  const ws = encodeURIComponent(shape.workspaceId);
  const json = { 'content-type': 'application/json' };
  // search cycles over the picked queries (classes interleaved); session scope also cycles
  // over the chat sessions (37 is prime to 1,000, so consecutive requests hit different ones)
  const query = (k: number) => messageData.queries[k % messageData.queries.length];
  const searchWorkspace = (k: number) => ({
    path: `/v3/workspaces/${ws}/search`,
    body: JSON.stringify({ query: query(k).query, limit: 10 }),
  });
  const searchSession = (k: number) => ({
    path: `/v3/workspaces/${ws}/sessions/${chatSessionId((k * 37) % MESSAGE_SESSIONS)}/search`,
    body: JSON.stringify({ query: query(k).query, limit: 10 }),
  });
  const searchCase = (name: string, next: (k: number) => { path: string; body: string }, connections?: number, group?: boolean): Case => ({
    name,
    path: `/v3/workspaces/${ws}/search`,
    headers: json,
    next,
    needsMessages: true,
    noBare: true,
    connections,
    labelOf: (k) => query(k).queryClass,
    group,
  });
  // batch create: 100 messages from the session's senders into chat session 389 k mod 1,000
  const batch = (k: number) => {
    const session = (k * 389) % MESSAGE_SESSIONS;
    const senders = chatSenders(session, MESSAGE_SESSIONS);
    const messages = Array.from({ length: 100 }, (_, j) => ({
      peer_id: senders[j % senders.length],
      content: texts[(k * 100 + j) % texts.length],
    }));
    return { path: `/v3/workspaces/${ws}/sessions/${chatSessionId(session)}/messages`, body: JSON.stringify({ messages }) };
  };
  // add-peers walks (session, peer) pairs that are not memberships yet, so each request
  // inserts a row: session k mod S, peer (7919 k + 1) mod P (7919 is prime, so pairs spread).
  const addPeers = (k: number) => ({
    path: `/v3/workspaces/${ws}/sessions/${sessionId(k % shape.sessions)}/peers`,
    body: JSON.stringify({ [peerId(1 + ((k * 7919) % (shape.peers - 1)))]: {} }),
  });
  return [
    { name: 'peers/list v3', path: `/v3/workspaces/${ws}/peers/list?page=1&size=50`, group: true, logged: true },
    { name: 'sessions of peer v3', path: `/v3/workspaces/${ws}/peers/${BENCH_PEER}/sessions?size=50`, group: true },
    { name: 'sessions of peer v2', path: `/v2/workspaces/${ws}/peers/${BENCH_PEER}/sessions`, group: true },
    { name: 'message list v3', path: `/v3/workspaces/${ws}/sessions/${LIST_SESSION}/messages/list?size=50`, needsMessages: true, group: true },
    searchCase('search workspace v3', searchWorkspace, undefined, true),
    searchCase('search workspace v3, 1 conn', searchWorkspace, 1),
    searchCase('search session v3', searchSession),
    searchCase('search session v3, 1 conn', searchSession, 1),
    {
      name: 'add-peers v3',
      path: addPeers(0).path,
      headers: json,
      body: addPeers(0).body,
      next: addPeers,
      writes: true,
    },
    {
      name: 'batch create v3 (100 msgs)',
      path: batch(0).path,
      headers: json,
      next: batch,
      writes: true,
      itemsPerRequest: 100,
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
  /** The load generator's CPU use (wrk, or autocannon in this process) during the run, in cores. */
  driverCores: number;
  connections: number;
  /** By `Case.labelOf`: latencies of the requests with each label (1-connection runs). */
  byLabel?: Map<string, Float64Array>;
}

/** One request to Engram, to learn the exact response the bare server must repeat. */
async function capture(base: string, kase: Case): Promise<Captured> {
  const { path, body } = kase.next?.(0) ?? kase;
  const response = await fetch(base + path, { method: kase.method ?? 'POST', headers: kase.headers, body });
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? 'application/octet-stream',
    body: Buffer.from(await response.arrayBuffer()),
  };
}

function cannonOptions(
  base: string,
  kase: Case,
  duration: number,
  counter: { k: number },
  issued?: number[],
): autocannon.Options {
  const options: autocannon.Options = {
    url: base + kase.path,
    method: kase.method ?? 'POST',
    connections: kase.connections ?? CONNECTIONS,
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
          issued?.push(counter.k);
          const { path, body } = next(counter.k++);
          return { ...request, path, body };
        },
      },
    ];
  }
  return options;
}

/** The load generator: wrk when it is installed (bench/wrk.ts), else autocannon in this process. */
const USE_WRK = wrkAvailable();
export const LOAD_GENERATOR = USE_WRK ? 'wrk' : 'autocannon';
/** Distinct requests written into wrk's script for a case whose requests differ (search). */
const WRK_DISTINCT = 4_000;

async function measureWithWrk(server: ChildServer, base: string, kase: Case, counter: { k: number }): Promise<Measurement> {
  const connections = kase.connections ?? CONNECTIONS;
  const method = kase.method ?? 'POST';
  const requests =
    kase.next === undefined
      ? [{ method, path: kase.path, headers: kase.headers, body: kase.body }]
      : Array.from({ length: WRK_DISTINCT }, () => ({ method, headers: kase.headers, ...kase.next!(counter.k++) }));
  await runWrk({ base, requests, connections, durationS: WARMUP_S });
  const before = await server.call<NodeJS.CpuUsage>('cpu');
  const result = await runWrk({ base, requests, connections, durationS: DURATION_S });
  // cores over wrk's own run: writing and loading its script of distinct requests (4,000 bodies
  // of 25 KB for batch create) takes seconds the server spends idle
  const wallUs = result.durationS * 1e6;
  const after = await server.call<NodeJS.CpuUsage>('cpu');
  return measurement(
    { completed: result.requests, durationS: result.durationS, p50: result.p50Ms, p99: result.p99Ms, non2xx: result.non2xx, errors: result.errors, timeouts: result.timeouts },
    { before, after, driverUs: result.cpuUs, wallUs, connections },
  );
}

async function measure(server: ChildServer, base: string, kase: Case, counter: { k: number }): Promise<Measurement> {
  // 1-connection runs labelled per request need autocannon's per-response events
  const byLabel = (kase.connections ?? CONNECTIONS) === 1 && kase.next !== undefined && kase.labelOf !== undefined;
  if (USE_WRK && !byLabel) return measureWithWrk(server, base, kase, counter);
  await autocannon(cannonOptions(base, kase, WARMUP_S, counter));

  // autocannon's own histogram has 1 ms resolution; record exact latencies instead
  const latencies: number[] = [];
  // with one connection responses come back in request order, so each can be labelled
  const connections = kase.connections ?? CONNECTIONS;
  const labelOf = connections === 1 && kase.next !== undefined ? kase.labelOf : undefined;
  const issued: number[] = [];
  const labelled = new Map<string, number[]>();
  const before = await server.call<NodeJS.CpuUsage>('cpu');
  const driverBefore = process.cpuUsage();
  const wallStart = process.hrtime.bigint();
  // without a callback autocannon returns its event emitter, made thenable
  const instance = autocannon(cannonOptions(base, kase, DURATION_S, counter, labelOf && issued)) as unknown as autocannon.Instance &
    Promise<autocannon.Result>;
  instance.on('response', (_client, _status, _bytes, responseMs) => {
    latencies.push(responseMs);
    const k = issued.shift();
    if (labelOf !== undefined && k !== undefined) {
      const label = labelOf(k);
      const values = labelled.get(label) ?? [];
      values.push(responseMs);
      labelled.set(label, values);
    }
  });
  const result = await instance;
  const wallUs = Number(process.hrtime.bigint() - wallStart) / 1000;
  const driver = process.cpuUsage(driverBefore);
  const after = await server.call<NodeJS.CpuUsage>('cpu');

  const sorted = Float64Array.from(latencies).sort();
  const run = { completed: result.requests.total, durationS: result.duration, p50: percentile(sorted, 50), p99: percentile(sorted, 99), non2xx: result.non2xx, errors: result.errors, timeouts: result.timeouts };
  return {
    ...measurement(run, { before, after, driverUs: driver.user + driver.system, wallUs, connections }),
    byLabel: labelOf === undefined ? undefined : new Map([...labelled].map(([label, values]) => [label, Float64Array.from(values).sort()])),
  };
}

/** A Measurement from a load generator's counts and the server's and driver's CPU around the run. */
function measurement(
  run: { completed: number; durationS: number; p50: number; p99: number; non2xx: number; errors: number; timeouts: number },
  cpu: { before: NodeJS.CpuUsage; after: NodeJS.CpuUsage; driverUs: number; wallUs: number; connections: number },
): Measurement {
  const cpuUs = cpu.after.user - cpu.before.user + (cpu.after.system - cpu.before.system);
  const completed = run.completed;
  return {
    rps: completed / run.durationS,
    requests: completed,
    p50: run.p50,
    p99: run.p99,
    non2xx: run.non2xx,
    errors: run.errors,
    timeouts: run.timeouts,
    cpuUsPerRequest: completed > 0 ? cpuUs / completed : NaN,
    sysUsPerRequest: completed > 0 ? (cpu.after.system - cpu.before.system) / completed : NaN,
    cpuCores: cpuUs / cpu.wallUs,
    driverCores: cpu.driverUs / cpu.wallUs,
    connections: cpu.connections,
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

  // texts the driver sends (batch create, webhook events): the corpus the dataset uses, other seed
  const driverCorpus = new Corpus(VOCABULARY, 99, ZIPF);
  const texts = Array.from({ length: 1_000 }, () => driverCorpus.message());
  const messageData: MessageData = { queries: [] };
  const only = process.env.BENCH_ONLY;
  const wanted = only ? only.split('|') : [];
  const cases = casesFor(shape, messageData, texts).filter((kase) => !only || wanted.some((part) => kase.name.includes(part)));
  const webhookCases = WEBHOOK_CASES.filter((kase) => !only || wanted.some((part) => kase.name.includes(part)));
  // the search quality evaluation (bench/search-eval.ts) runs last, in this process
  const runsSearchEval = !only || wanted.some((part) => 'search quality'.includes(part));
  /** A case with a server of its own: on PostgreSQL a database of its own (bench/own-database.ts), SQLite: its own file. */
  const withOwnDatabase = async <T>(label: string, run: (databaseUrl: string | undefined) => Promise<T>): Promise<T> => {
    if (!onPostgres) return run(undefined);
    const own = await ownBenchDatabase(pgUrl!, label);
    try {
      return await run(own.url);
    } finally {
      await own.drop();
    }
  };
  // the deriver case (bench/deriver.ts) runs its own server process with the fake model server
  const runsDeriver = !only || wanted.some((part) => DERIVER_CASE.includes(part));
  const runDeriver = async () => {
    if (!runsDeriver) return;
    const messages = numberFromEnv('BENCH_DERIVER_MESSAGES', 3000);
    process.stdout.write(`  ${DERIVER_CASE}: ${int(messages)} messages...`);
    const result = await withOwnDatabase('deriver', (databaseUrl) => runDeriverBench({ databaseUrl, messages, sessions: numberFromEnv('BENCH_DERIVER_SESSIONS', 30) }));
    console.log(' done');
    printDeriver(result);
  };
  // conclusions/query (bench/conclusions-query.ts): its own server process, loaded store and fake embedding model
  const runsConclusions = !only || wanted.some((part) => CONCLUSIONS_CASE.includes(part));
  const runConclusions = async () => {
    if (!runsConclusions) return;
    const conclusions = Math.round(numberFromEnv('BENCH_CONCLUSIONS', 100_000));
    process.stdout.write(`  ${CONCLUSIONS_CASE}: loading ${int(conclusions)} conclusions`);
    const result = await withOwnDatabase('conclusions', (databaseUrl) => runConclusionsBench({
      databaseUrl,
      conclusions,
      collections: Math.round(numberFromEnv('BENCH_CONCLUSION_COLLECTIONS', 1_000)),
      dimensions: Math.round(numberFromEnv('BENCH_CONCLUSION_DIMENSIONS', 1536)),
      durationS: DURATION_S,
      warmupS: WARMUP_S,
      connections: CONNECTIONS,
    }));
    console.log(' done');
    printConclusions(result);
  };
  // peer chat (bench/chat.ts): its own server process, loaded store and fake model
  const runsChat = !only || wanted.some((part) => CHAT_CASE.includes(part));
  const runChat = async () => {
    if (!runsChat) return;
    const chatOptions = {
      messages: Math.round(numberFromEnv('BENCH_CHAT_MESSAGES', 100_000)),
      conclusions: Math.round(numberFromEnv('BENCH_CHAT_CONCLUSIONS', 10_000)),
      sessions: Math.round(numberFromEnv('BENCH_CHAT_SESSIONS', 100)),
      dimensions: Math.round(numberFromEnv('BENCH_CHAT_DIMENSIONS', 1536)),
      toolVariant: process.env.BENCH_CHAT_TOOL !== '0',
      durationS: DURATION_S,
      warmupS: WARMUP_S,
      connections: CONNECTIONS,
    };
    process.stdout.write(`  ${CHAT_CASE}: loading ${int(chatOptions.messages)} messages and ${int(chatOptions.conclusions)} conclusions, then measuring`);
    const result = await withOwnDatabase('chat', (databaseUrl) => runChatBench({ ...chatOptions, databaseUrl }));
    console.log(' done');
    printChat(result);
  };
  // flat with size (bench/flat-with-size.ts): its own stores at two sizes, SQLite only
  const runsFlat = !only || wanted.some((part) => FLAT_CASE.includes(part));
  const runFlat = async () => {
    if (!runsFlat) return;
    if (onPostgres) {
      console.log(`\n${FLAT_CASE}: SQLite only (it loads two stores of its own), skipped on PostgreSQL`);
      return;
    }
    process.stdout.write(`  ${FLAT_CASE}: two stores, each loaded, then served by a fresh process`);
    const result = await runFlatBench(
      { small: 1_000, large: Math.round(numberFromEnv('BENCH_FLAT_ROWS', 1_000_000)), connections: CONNECTIONS, warmupS: WARMUP_S, durationS: DURATION_S },
      children,
    );
    console.log(' done');
    printFlat(result);
  };
  // after idle (bench/after-idle.ts): two built servers of its own on a small SQLite store
  const runsIdle = !only || wanted.some((part) => IDLE_CASE.includes(part));
  const runIdle = async () => {
    if (!runsIdle) return;
    if (onPostgres) {
      console.log(`\n${IDLE_CASE}: SQLite only (it starts servers on a store of its own), skipped on PostgreSQL`);
      return;
    }
    const idleS = numberFromEnv('BENCH_IDLE_SECONDS', 30);
    process.stdout.write(`  ${IDLE_CASE}: two servers, measured fresh and after ${idleS} s idle...`);
    const result = await runIdleBench(
      { peers: Math.round(numberFromEnv('BENCH_IDLE_PEERS', 1_000)), idleS, connections: CONNECTIONS, warmupS: WARMUP_S, durationS: DURATION_S },
      children,
    );
    console.log(' done');
    printIdle(result);
  };
  if (cases.length === 0 && webhookCases.length === 0 && !runsSearchEval) {
    if (!runsDeriver && !runsConclusions && !runsChat && !runsFlat && !runsIdle) {
      // the vector search case is bench/vectors.ts, which `npm run bench` runs next
      if (wanted.some((part) => VECTOR_CASE.includes(part))) return;
      throw new Error(`BENCH_ONLY="${only}" matches no case`);
    }
    // nothing else selected: no dataset to load
    await runConclusions();
    await runChat();
    await runDeriver();
    await runFlat();
    await runIdle();
    console.log(`total ${((performance.now() - started) / 1000).toFixed(0)} s`);
    return;
  }

  const execArgv = ['--import', 'tsx'];
  const profileDir = process.env.BENCH_CPU_PROF;
  // the V8 flags `npm start` passes (src/server-flags.ts)
  const engramArgv = [...execArgv, ...SERVER_V8_FLAGS];
  if (profileDir) {
    mkdirSync(resolve(profileDir), { recursive: true });
    engramArgv.push('--cpu-prof', `--cpu-prof-dir=${resolve(profileDir)}`);
  }
  const engram = forkServer('engram server', join(ROOT, 'bench/engram-server.ts'), { cwd: ROOT, execArgv: engramArgv });
  children.push(engram);
  const bare = forkServer('bare server', join(ROOT, 'bench/bare-server.ts'), { cwd: ROOT, execArgv });
  children.push(bare);
  const receiver = webhookCases.length > 0 ? forkServer('webhook receiver', join(ROOT, 'bench/webhook-receiver.ts'), { cwd: ROOT, execArgv }) : undefined;
  if (receiver !== undefined) children.push(receiver);

  const where = onPostgres ? `PostgreSQL (${new URL(pgUrl!).host})` : `SQLite (${databaseUrl})`;
  console.log(`Engram benchmark on ${where}; node ${process.version}; ${CONNECTIONS} connections, ` +
    `${WARMUP_S} s warm-up + ${DURATION_S} s per case and server; load from ${LOAD_GENERATOR}`);
  const webhookSecret = randomBytes(16).toString('hex');
  const webhookWorkspace = (endpoints: number) => `${shape.workspaceId}-hooks-${endpoints}`;
  const startRequest: StartRequest = {
    databaseUrl,
    shape,
    dropWorkspaceOnClose: onPostgres,
    webhookSecret,
    workerPollMs: WORKER_POLL_MS,
    extraWorkspaces: webhookCases.map((kase) => webhookWorkspace(kase.endpoints)),
  };
  const [engramInfo, bareInfo, receiverInfo] = await Promise.all([
    engram.call<{ port: number; load: LoadStats }>('start', startRequest),
    bare.call<{ port: number }>('listen'),
    receiver?.call<{ port: number }>('listen', { secret: webhookSecret }),
  ]);
  console.log(describeLoad(engramInfo.load));
  const engramBase = `http://127.0.0.1:${engramInfo.port}`;
  const bareBase = `http://127.0.0.1:${bareInfo.port}`;

  // the many-process columns: `engram serve --processes N` on the loaded database, and a
  // node:cluster of the bare server, both started once the dataset is in place
  let groups: { engram: ChildServer; engramBase: string; bare: ChildServer; bareBase: string } | undefined;
  if (cases.some((kase) => kase.group)) {
    const bareGroup = forkServer(`bare server x${PROCESSES}`, join(ROOT, 'bench/bare-cluster.ts'), {
      cwd: ROOT,
      execArgv,
      env: { BENCH_PROCESSES: String(PROCESSES) },
    });
    children.push(bareGroup);
    const port = await freePort();
    const engramGroup = await startEngramGroup({ cwd: ROOT, databaseUrl, port, processes: PROCESSES });
    children.push(engramGroup);
    const bareGroupInfo = await bareGroup.call<{ port: number }>('listen');
    groups = { engram: engramGroup, engramBase: `http://127.0.0.1:${port}`, bare: bareGroup, bareBase: `http://127.0.0.1:${bareGroupInfo.port}` };
    const policy = process.env.NODE_CLUSTER_SCHED_POLICY === 'none' ? 'the operating system (NODE_CLUSTER_SCHED_POLICY=none)' : 'round-robin (node:cluster default)';
    console.log(
      `many-process columns: engram serve --processes ${PROCESSES} (connections to the process with the fewest open) and a node:cluster of ${PROCESSES} bare servers (connections handed out by ${policy})`,
    );
  }
  // the request log's columns: apps in the Engram process logging as `engram serve` does, to files
  let loggedBases: { info: string; warn: string } | undefined;
  let loggedDir: string | undefined;
  if (cases.some((kase) => kase.logged)) {
    loggedDir = mkdtempSync(join(tmpdir(), 'engram-bench-log-'));
    const ports = await engram.call<{ info: number; warn: number }>('startLogged', { dir: loggedDir });
    loggedBases = { info: `http://127.0.0.1:${ports.info}`, warn: `http://127.0.0.1:${ports.warn}` };
  }
  let searchChecked = false;
  /** Cores free for PROCESSES busy processes, before the first and after the last group run. */
  let freeBefore: number | undefined;

  let messages: MessagesLoaded | undefined;
  const loadMessages = async () => {
    if (messages !== undefined) return;
    const messageShape: MessageShape = {
      workspaceId: shape.workspaceId,
      messages: MESSAGES,
      sessions: MESSAGE_SESSIONS,
      vocabulary: VOCABULARY,
      zipf: ZIPF,
      seed: 42,
    };
    process.stdout.write(`  loading ${int(MESSAGES)} messages...`);
    messages = await engram.call<MessagesLoaded>('loadMessages', messageShape);
    messageData.queries = messages.queries;
    console.log(' done');
    console.log(describeMessages(messages));
  };

  const rows: Row[] = [];
  let searchCheck: string | undefined;
  const wantBreakdown = process.env.BENCH_BREAKDOWN !== '0';
  const broken = ['peers/list v3', 'sessions of peer v3', 'message list v3'];
  const wantLayers = wantBreakdown && cases.some((kase) => broken.includes(kase.name));
  let breakdowns: Breakdown[] | undefined;
  let analysis: SearchAnalysis | { skipped: string } | undefined;
  const wantAnalysis = wantBreakdown && cases.some((kase) => kase.name.startsWith('search'));
  // in-process timings, taken once the read cases are done and before any case writes
  const takeTimings = async () => {
    if (wantLayers && breakdowns === undefined) {
      process.stdout.write('  per-layer timings (in-process)...');
      breakdowns = await engram.call<Breakdown[]>('breakdown', { iterations: BREAKDOWN_ITERATIONS });
      console.log(' done');
    }
    if (wantAnalysis && messages !== undefined && analysis === undefined) {
      process.stdout.write('  search analysis (in-process)...');
      analysis = await engram.call<SearchAnalysis | { skipped: string }>('searchAnalysis', { perClass: 6 });
      console.log(' done');
    }
  };
  for (const kase of cases) {
    if (kase.writes) await takeTimings();
    if (kase.needsMessages) await loadMessages();
    const counter = { k: 1 }; // k = 0 is the captured request
    const captured = await capture(engramBase, kase);
    if (captured.status < 200 || captured.status > 299) {
      console.log(`!! ${kase.name}: Engram answered ${captured.status}: ${captured.body.toString('utf8').slice(0, 300)}`);
    }
    process.stdout.write(`  ${kase.name}:`);
    const rounds: Round[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      if (ROUNDS > 1) process.stdout.write(`${round === 0 ? '' : ';'} round ${round + 1}`);
      // the bare server first in every other round, so a machine speeding up or slowing down
      // through the rounds favours neither
      const bareFirst = round % 2 === 1;
      const measured: Round = {} as Round;
      /** Measures one server into `measured[key]`; a bare one first answers what Engram answered. */
      const step = (key: keyof Round, server: ChildServer, base: string, label: string) => async () => {
        const isBare = key === 'bare' || key === 'bareGroup';
        if (isBare) {
          if (kase.noBare) return;
          await server.call('set', { status: captured.status, contentType: captured.contentType, body: captured.body.toString('base64') });
        }
        process.stdout.write(` ${label}...`);
        const result = await measure(server, base, kase, isBare ? { k: 1 } : counter);
        measured[key] = result;
        process.stdout.write(` ${int(result.rps)} req/s`);
      };
      const one = [step('engram', engram, engramBase, 'engram'), step('bare', bare, bareBase, 'bare')];
      if (kase.logged && loggedBases !== undefined) {
        one.splice(1, 0, step('engramInfo', engram, loggedBases.info, 'engram log=info'), step('engramWarn', engram, loggedBases.warn, 'engram log=warn'));
      }
      for (const run of bareFirst ? one.reverse() : one) await run();
      if (kase.group && groups !== undefined) {
        if (freeBefore === undefined) freeBefore = await freeCores(PROCESSES);
        if (kase.name.startsWith('search') && !searchChecked) {
          searchChecked = true;
          searchCheck = await compareSearches(engramBase, groups.engramBase, kase, messageData.queries.length);
        }
        const many = [
          step('engramGroup', groups.engram, groups.engramBase, `engram x${PROCESSES}`),
          step('bareGroup', groups.bare, groups.bareBase, `bare x${PROCESSES}`),
        ];
        for (const run of bareFirst ? many.reverse() : many) await run();
      }
      rounds.push(measured);
    }
    const row: Row = { kase, captured, rounds, ...medianRound(rounds) };
    if (kase.logged && loggedBases !== undefined) {
      process.stdout.write('; the request line alone...');
      row.lineCost = await requestLineCost(loggedDir!, kase.path);
    }
    rows.push(row);
    process.stdout.write(` (response ${captured.status}, ${captured.body.length} bytes)`);
    console.log('');
  }
  await takeTimings();

  const webhookResults: WebhookResult[] = [];
  if (webhookCases.length > 0) {
    const worker = await engram.call<{ concurrency: number; pollMs: number }>('startWorker');
    console.log(`  webhook worker started in the Engram process (WORKER_CONCURRENCY ${worker.concurrency}, WORKER_POLL_MS ${worker.pollMs})`);
    for (const kase of webhookCases) {
      process.stdout.write(`  ${kase.name}: ${int(kase.events ?? WEBHOOK_EVENTS)} events...`);
      const result = await measureWebhooks({
        kase,
        engram,
        receiver: receiver!,
        engramBase,
        receiverPort: receiverInfo!.port,
        workspaceId: webhookWorkspace(kase.endpoints),
        events: WEBHOOK_EVENTS,
        texts,
        timeoutMs: 180_000,
      });
      console.log(` ${int(result.tally.delivered / result.totalS)} deliveries/s`);
      webhookResults.push(result);
    }
    await engram.call('stopWorker');
  }

  const compared = rows.filter((row): row is Row & { bare: Measurement } => row.bare !== undefined);
  if (compared.length > 0) printCompared(compared);
  const searches = rows.filter((row) => row.bare === undefined);
  if (searches.length > 0) printSearches(searches);
  const logged = rows.filter((row) => row.engramInfo !== undefined && row.engramWarn !== undefined && row.bare !== undefined);
  if (logged.length > 0) printLogged(logged);
  const grouped = rows.filter((row): row is Row & { engramGroup: Measurement } => row.engramGroup !== undefined);
  if (grouped.length > 0) printGroups(grouped, searchCheck, onPostgres, [freeBefore ?? NaN, await freeCores(PROCESSES)]);
  if (webhookResults.length > 0) printWebhooks(webhookResults);

  const failures = rows.filter((r) => r.engram.non2xx > 0 || (r.bare?.non2xx ?? 0) > 0 || r.engram.errors > 0 || r.captured.status >= 300);
  console.log('');
  console.log(
    failures.length === 0
      ? 'non-2xx responses: 0 in every case'
      : `WARNING: non-2xx responses or errors in: ${failures.map((r) => r.kase.name).join(', ')} (numbers for those cases are not meaningful)`,
  );
  const peersList = compared.find((r) => r.kase.name === 'peers/list v3');
  const { median: ratio, each: ratios } = peersList === undefined ? { median: NaN, each: [] } : pairedRatio(peersList, 'engram', 'bare');
  if (peersList === undefined) {
    console.log('aim: peers/list was not run (BENCH_ONLY)');
  } else if (onPostgres) {
    console.log(`aim (ratio >= ${AIM_RATIO} on peers/list) is set for SQLite; on PostgreSQL the ratio is ${ratio.toFixed(2)} (informational)`);
  } else {
    console.log(`aim: peers/list ratio >= ${AIM_RATIO} on SQLite -> ${ratio.toFixed(2)}: ${ratio >= AIM_RATIO ? 'MET' : 'NOT MET'}${roundsNote(ratios)}`);
  }
  if (searches.length > 0) printSearchTarget(searches, onPostgres);

  if (analysis !== undefined) printSearchAnalysis(analysis, messages!);
  if (breakdowns !== undefined) printBreakdown(breakdowns, compared, onPostgres);
  if (runsSearchEval) await runSearchEval(onPostgres ? pgUrl : ':memory:');
  await runConclusions();
  await runChat();
  await runDeriver();
  await runFlat();
  await runIdle();
  console.log('');
  console.log(`total ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

/** One round of a case: each server measured once, one right after the other. */
interface Round {
  engram: Measurement;
  bare?: Measurement;
  /** The same case on BENCH_PROCESSES processes: `engram serve --processes N`, a cluster of bare servers. */
  engramGroup?: Measurement;
  bareGroup?: Measurement;
  /** Engram logging as `engram serve` does: at the default LOG_LEVEL (info, a line per request) and at warn. */
  engramInfo?: Measurement;
  engramWarn?: Measurement;
}

/** A case's figures: of each server, the round of its median requests/s (BENCH_ROUNDS; one round by default). */
interface Row extends Round {
  kase: Case;
  /** The request line's own CPU (requestLineCost), µs a line through a log at info and at warn, a pair per round. */
  lineCost?: { info: number; warn: number }[];
  captured: Captured;
  rounds: Round[];
}

/** The measurement of median requests/s (the lower middle one of an even count). */
function medianByRps(measurements: Measurement[]): Measurement {
  const sorted = [...measurements].sort((a, b) => a.rps - b.rps);
  return sorted[(sorted.length - 1) >> 1];
}

function medianRound(rounds: Round[]): Round {
  const column = (key: keyof Round) => {
    const taken = rounds.flatMap((round) => round[key] ?? []);
    return taken.length === 0 ? undefined : medianByRps(taken);
  };
  return {
    engram: column('engram')!,
    bare: column('bare'),
    engramGroup: column('engramGroup'),
    bareGroup: column('bareGroup'),
    engramInfo: column('engramInfo'),
    engramWarn: column('engramWarn'),
  };
}

/**
 * A ratio of two servers' requests/s taken within each round (the two measured one right after
 * the other, so the machine's speed that minute cancels out), and their median.
 */
function pairedRatio(row: Row, top: keyof Round, bottom: keyof Round): { median: number; each: number[] } {
  const each = row.rounds.flatMap((round) => {
    const a = round[top];
    const b = round[bottom];
    return a === undefined || b === undefined ? [] : [a.rps / b.rps];
  });
  return { median: median(each), each };
}

/**
 * The request log's cost: Engram with the process log at the default level (info: a JSON line
 * per request) and at warn (no line for a request that succeeds), beside the bare server and
 * Engram with no logger, one process; ratios paired within rounds, then their median.
 */
function printLogged(rows: Row[]): void {
  console.log('');
  console.log(`request log (one process; the log written to a file; ${ROUNDS > 1 ? `median of ${ROUNDS} rounds` : 'one round'}):`);
  console.log(
    table(
      ['case', 'bare req/s', 'no logger', 'LOG_LEVEL=info (default)', 'LOG_LEVEL=warn', 'info / bare', 'warn / bare', 'req/s info / warn', 'CPU µs/req info / warn'],
      rows.map((row) => {
        const { median: infoWarn, each } = pairedRatio(row, 'engramInfo', 'engramWarn');
        const cpu = pairedCpu(row, 'engramInfo', 'engramWarn');
        return [
          row.kase.name,
          int(row.bare!.rps),
          int(row.engram.rps),
          int(row.engramInfo!.rps),
          int(row.engramWarn!.rps),
          pairedRatio(row, 'engramInfo', 'bare').median.toFixed(2),
          pairedRatio(row, 'engramWarn', 'bare').median.toFixed(2),
          `${infoWarn.toFixed(3)}${roundsNote(each)}`,
          `${row.engramInfo!.cpuUsPerRequest.toFixed(1)} / ${row.engramWarn!.cpuUsPerRequest.toFixed(1)} = ${cpu.median.toFixed(3)}${roundsNote(cpu.each)}`,
        ];
      }),
    ),
  );
  for (const row of rows) {
    const cost = 1 - pairedRatio(row, 'engramInfo', 'engramWarn').median;
    const cpuCost = pairedCpu(row, 'engramInfo', 'engramWarn').median - 1;
    console.log(
      `aim: the default request log costs at most 5 % of ${row.kase.name} throughput -> ${(cost * 100).toFixed(1)} %: ${cost <= 0.05 ? 'MET' : 'NOT MET'} ` +
        `(server CPU a request ${(cpuCost * 100).toFixed(1)} % more than at warn)`,
    );
    if (row.lineCost !== undefined && row.lineCost.length > 0) {
      // over HTTP the rounds of this machine differ more than the line costs; its own CPU,
      // measured alone, set against a request's CPU at warn, is the steadier figure
      const each = row.lineCost.map((r) => r.info - r.warn);
      const line = median(each);
      const request = median(row.rounds.flatMap((round) => (round.engramWarn === undefined ? [] : [round.engramWarn.cpuUsPerRequest])));
      console.log(
        `the request line alone (bench/request-line.ts: a process with the server's flags, ${int(LOG_LINES)} lines a round written to a file, less the same calls at warn, median of ${each.length} rounds): ` +
          `${line.toFixed(2)} µs of CPU a line (rounds: ${each.map((x) => x.toFixed(2)).join(', ')}); a ${row.kase.name} request at warn: ${request.toFixed(1)} µs of CPU (median of the rounds above)`,
      );
      console.log(
        `aim, by the line's own CPU against a request's (the onResponse hook's step in Fastify not counted): the default log costs ${((line / request) * 100).toFixed(1)} % of a ${row.kase.name} request: ${line / request <= 0.05 ? 'MET' : 'NOT MET'}`,
      );
    }
  }
}

/** The request line's own CPU, µs a line at info and at warn, a pair per round: bench/request-line.ts in a process of its own. */
async function requestLineCost(dir: string, url: string): Promise<{ info: number; warn: number }[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...SERVER_V8_FLAGS, join(ROOT, 'bench', 'request-line.ts'), dir, String(LOG_LINES), String(LOG_ROUNDS), url], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`bench/request-line.ts exited with ${code}`);
  return JSON.parse(out) as { info: number; warn: number }[];
}

/** The ratio of two servers' CPU a request taken within each round, and their median. */
function pairedCpu(row: Row, top: keyof Round, bottom: keyof Round): { median: number; each: number[] } {
  const each = row.rounds.flatMap((round) => {
    const a = round[top];
    const b = round[bottom];
    return a === undefined || b === undefined ? [] : [a.cpuUsPerRequest / b.cpuUsPerRequest];
  });
  return { median: median(each), each };
}

/** ` (rounds: 0.55, 0.61, 0.63)` when there was more than one round. */
function roundsNote(each: number[]): string {
  return each.length > 1 ? ` (rounds: ${each.map((x) => x.toFixed(2)).join(', ')})` : '';
}

const SPIN = `const t0 = Date.now(); const c0 = process.cpuUsage(); let x = 0;
while (Date.now() - t0 < 1000) for (let i = 0; i < 1e5; i++) x += Math.sqrt(i);
const c = process.cpuUsage(c0); process.stdout.write(String((c.user + c.system) / 1e6 + x * 0));`;

/**
 * How many cores the machine gives `count` busy processes right now: each spins for one second
 * and reports its CPU time. On an idle machine with at least `count` cores the sum is about
 * `count`; other work running on the machine takes its share first, and the N-process figures
 * can be no better than this.
 */
async function freeCores(count: number): Promise<number> {
  const shares = await Promise.all(
    Array.from({ length: count }, () =>
      new Promise<number>((resolve, reject) => {
        const child = spawn(process.execPath, ['-e', SPIN], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk));
        child.on('error', reject);
        child.on('exit', () => resolve(Number(out)));
      }),
    ),
  );
  return shares.reduce((sum, share) => sum + share, 0);
}

/**
 * Asks the one-process and the many-process Engram the same searches and compares the answers
 * byte for byte: many processes must rank exactly as one does.
 */
async function compareSearches(oneBase: string, manyBase: string, kase: Case, queries: number): Promise<string> {
  const count = Math.min(50, queries);
  let same = 0;
  const differing: string[] = [];
  for (let k = 0; k < count; k++) {
    const { path, body } = kase.next!(k);
    const ask = (base: string) =>
      fetch(base + path, { method: 'POST', headers: kase.headers, body }).then(async (response) => `${response.status} ${await response.text()}`);
    const [one, many] = await Promise.all([ask(oneBase), ask(manyBase)]);
    if (one === many && one.startsWith('200 ')) same++;
    else differing.push(JSON.parse(body).query);
  }
  return differing.length === 0
    ? `identical answers (status and body) from 1 and ${PROCESSES} processes for all ${count} queries checked`
    : `DIFFERENT answers from 1 and ${PROCESSES} processes for ${differing.length} of ${count} queries (${same} identical): ${differing.slice(0, 5).join(', ')}`;
}

function printGroups(rows: (Row & { engramGroup: Measurement })[], searchCheck: string | undefined, onPostgres: boolean, free: number[]): void {
  const n = PROCESSES;
  const pair = (a: number, b: number | undefined, format: (x: number) => string) => `${format(a)} / ${b === undefined ? '-' : format(b)}`;
  console.log('');
  console.log(
    `many processes: each case with 1 and with ${n} server processes (engram serve --processes ${n}; the bare server as a node:cluster ` +
      `of ${n}); CPU is summed over the group's processes (from /proc, 10 ms ticks); driver = the load generator (${LOAD_GENERATOR}):`,
  );
  console.log(
    table(
      [
        'case',
        `engram req/s 1 / ${n}`,
        `x${n}/x1`,
        `bare req/s 1 / ${n}`,
        `engram p50/p99 ms 1 proc`,
        `engram p50/p99 ms ${n} procs`,
        `engram CPU µs/req 1 / ${n}`,
        `bare CPU µs/req 1 / ${n}`,
        `engram cores 1 / ${n}`,
        `driver cores (engram 1 / ${n})`,
        'non-2xx',
      ],
      rows.map((row) => [row, row.engram, row.engramGroup, row.bare, row.bareGroup] as const).map(([row, e, g, b, bg]) => [
        row.kase.name,
        pair(e.rps, g.rps, int),
        pairedRatio(row, 'engramGroup', 'engram').median.toFixed(2),
        b === undefined ? '-' : pair(b.rps, bg?.rps, int),
        `${ms(e.p50)} / ${ms(e.p99)}`,
        `${ms(g.p50)} / ${ms(g.p99)}`,
        pair(e.cpuUsPerRequest, g.cpuUsPerRequest, int),
        b === undefined ? '-' : pair(b.cpuUsPerRequest, bg?.cpuUsPerRequest, int),
        pair(e.cpuCores, g.cpuCores, (x) => x.toFixed(2)),
        pair(e.driverCores, g.driverCores, (x) => x.toFixed(2)),
        `${e.non2xx} / ${g.non2xx}`,
      ]),
    ),
  );
  if (searchCheck !== undefined) console.log(`  search ranking: ${searchCheck}`);
  console.log(
    `  machine: ${n} processes spinning for 1 s got ${free.map((x) => x.toFixed(2)).join(' cores before the first of these runs and ')} cores after the last` +
      (Math.min(...free) < 0.85 * n ? ` (other work is running: the ${n}-process figures measure what was left of the machine, not what Engram can do)` : ''),
  );
  console.log(`aim: ${n} processes serve at least ${AIM_SCALING} times one process's req/s${onPostgres ? ' (set for SQLite; informational here)' : ''}:`);
  for (const row of rows) {
    const { median: ratio, each } = pairedRatio(row, 'engramGroup', 'engram');
    // were a request to cost what it does on one process, the group could take the cores the
    // load generator leaves, against what the one process used
    const bound = (availableParallelism() - row.engramGroup.driverCores) / row.engram.cpuCores;
    console.log(
      `  ${row.kase.name}: x${ratio.toFixed(2)} -> ${ratio >= AIM_SCALING ? 'MET' : 'NOT MET'}${roundsNote(each)}; ` +
        `the machine allows x${bound.toFixed(2)} at most (${availableParallelism()} cores less the load generator's ${row.engramGroup.driverCores.toFixed(2)}, ` +
        `against the ${row.engram.cpuCores.toFixed(2)} one process used), CPU µs/req ${int(row.engram.cpuUsPerRequest)} on one process and ${int(row.engramGroup.cpuUsPerRequest)} on ${n}`,
    );
  }
  const search = rows.find((r) => r.kase.name === 'search workspace v3');
  if (search !== undefined) {
    const p99s = search.rounds.flatMap((round) => round.engramGroup?.p99 ?? []);
    const p99 = median(p99s);
    const verdict = p99 < SEARCH_TARGET_MS ? 'MET' : 'NOT MET';
    console.log(
      `  search workspace v3 with ${search.engramGroup.connections} in flight on ${n} processes: p99 ${ms(p99)} ms -> ${verdict} (target < ${SEARCH_TARGET_MS} ms; 1 process: ${ms(median(search.rounds.map((round) => round.engram.p99)))} ms)` +
        (p99s.length > 1 ? ` (median of the rounds' p99s: ${p99s.map(ms).join(', ')} ms)` : ''),
    );
  }
  const busyDriver = rows.filter((r) => r.engramGroup.driverCores >= 0.85);
  if (busyDriver.length > 0) {
    console.log(
      `note: the load generator used most of a core in ${busyDriver.map((r) => r.kase.name).join(', ')} while the ${n}-process group ran: ` +
        `on a ${availableParallelism()}-core machine it takes a core the group would otherwise use, so the ${n}-process figures there ` +
        'are bounded by the machine, not by Engram; compare CPU µs/req, which does not depend on that.',
    );
  }
}

function printCompared(rows: (Row & { bare: Measurement })[]): void {
  console.log('');
  console.log(
    table(
      ['case', 'engram req/s', 'bare req/s', 'ratio', 'engram p50/p99 ms', 'bare p50/p99 ms', 'non-2xx engram/bare'],
      rows.map((row) => [row, row.engram, row.bare] as const).map(([row, e, b]) => [
        row.kase.name,
        int(e.rps),
        int(b.rps),
        pairedRatio(row, 'engram', 'bare').median.toFixed(2),
        `${ms(e.p50)} / ${ms(e.p99)}`,
        `${ms(b.p50)} / ${ms(b.p99)}`,
        `${e.non2xx} / ${b.non2xx}`,
      ]),
    ),
  );
  for (const { kase, engram: e, bare: b } of rows) {
    if (kase.itemsPerRequest === undefined) continue;
    console.log(
      `${kase.name}: ${int(e.rps * kase.itemsPerRequest)} messages/s stored by Engram ` +
        `(bare server answering the same ${kase.itemsPerRequest}-message 201: ${int(b.rps * kase.itemsPerRequest)}/s)`,
    );
  }
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
}

function describeMessages(m: MessagesLoaded): string {
  const s = (x: number) => (x / 1000).toFixed(1);
  const mb = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : `${(bytes / 1e6).toFixed(0)} MB`);
  return [
    `loaded ${int(m.messages)} messages into ${int(m.sessions)} sessions (${LIST_SESSION}: ${int(m.listSessionMessages)}) ` +
      `in ${s(m.totalMs)} s (of which generating text and token counts ${s(m.generateMs)} s); ` +
      `${m.meanChars.toFixed(0)} characters, ${m.meanTokens.toFixed(1)} tokens per message`,
    `  token_count: o200k_base counts memoised per word (exact: ${int(m.tokenExact)} of ${int(m.tokenSample)} sampled messages ` +
      `equal tokenCount())`,
    (m.databaseBytes === undefined
      ? '  PostgreSQL: ANALYZE messages run after the load (as autovacuum would soon do)'
      : `  database file ${mb(m.databaseBytes)}` + (m.walBytes !== undefined ? ` (WAL ${mb(m.walBytes)} after a checkpoint)` : '')) +
      `; vocabulary ${int(m.vocabulary)} words, Zipf exponent ${m.zipf}`,
    `  words by the messages a search for them matches (by stem): ${m.bands.map((b) => `${b.label}: ${int(b.words)}`).join(', ')}`,
    `  search queries: ${int(m.queries.length)} (${[...new Set(m.queries.map((q) => q.queryClass))]
      .map((c) => `${c} e.g. "${m.queries.find((q) => q.queryClass === c)!.query}"`)
      .join(', ')})`,
  ].join('\n');
}

function printSearches(rows: Row[]): void {
  console.log('');
  console.log('search (no bare column: every request asks a different query, so no one response stands for them all):');
  console.log(
    table(
      ['case', 'connections', 'req/s', 'p50 / p99 ms', 'engram CPU µs/req (sys)', 'cores', 'non-2xx', 'errors/timeouts'],
      rows.map(({ kase, engram: e }) => [
        kase.name,
        String(e.connections),
        int(e.rps),
        `${ms(e.p50)} / ${ms(e.p99)}`,
        `${e.cpuUsPerRequest.toFixed(0)} (${e.sysUsPerRequest.toFixed(0)})`,
        e.cpuCores.toFixed(2),
        String(e.non2xx),
        `${e.errors}/${e.timeouts}`,
      ]),
    ),
  );
  const order = ['rare', 'medium', 'common', 'two words'];
  for (const { kase, engram: e } of rows) {
    if (e.byLabel === undefined) continue;
    console.log('');
    console.log(`${kase.name}, latency by query class (one connection, so each response is matched to its request):`);
    console.log(
      table(
        ['class', 'requests', 'p50 ms', 'p99 ms', 'max ms'],
        [...e.byLabel].sort(([a], [b]) => order.indexOf(a) - order.indexOf(b)).map(([label, sorted]) => [
          label,
          int(sorted.length),
          ms(percentile(sorted, 50)),
          ms(percentile(sorted, 99)),
          ms(sorted[sorted.length - 1]),
        ]),
      ),
    );
  }
}

function printSearchTarget(rows: Row[], onPostgres: boolean): void {
  const atSize = MESSAGES === SEARCH_TARGET_MESSAGES ? '' : ` (this run: ${int(MESSAGES)} messages, so informational)`;
  const where = onPostgres ? ' (set for SQLite; this run is on PostgreSQL, so informational)' : atSize;
  console.log(`search target: p99 < ${SEARCH_TARGET_MS} ms on SQLite at ${int(SEARCH_TARGET_MESSAGES)} messages${where}:`);
  for (const { kase, engram: e, rounds } of rows) {
    const p99s = rounds.map((round) => round.engram.p99);
    const p99 = median(p99s);
    const verdict = p99 < SEARCH_TARGET_MS ? 'MET' : 'NOT MET';
    const note =
      e.connections === 1
        ? 'one request at a time: the latency one client sees'
        : `${e.connections} requests in flight: includes waiting behind the others` +
          (onPostgres ? '' : ' (SQLite calls block the event loop)');
    console.log(`  ${kase.name}: p99 ${ms(p99)} ms -> ${verdict} (${note})${p99s.length > 1 ? ` (median of the rounds' p99s: ${p99s.map(ms).join(', ')} ms)` : ''}`);
  }
}

function printSearchAnalysis(analysis: SearchAnalysis | { skipped: string }, m: MessagesLoaded): void {
  console.log('');
  if ('skipped' in analysis) {
    console.log(`search analysis: ${analysis.skipped}`);
    return;
  }
  console.log(
    `where a search's time goes (${int(m.messages)} messages; in-process, one call at a time, no HTTP load; ` +
      "ms, each query's median of up to 3 runs, then the median over the class's queries):",
  );
  console.log(
    table(
      ['class', 'queries', 'matches', 'search p50 / max', 'session scope', 'peer scope', 'candidates (SQL)', 'rank (JS)', 'read 10', 'ranked'],
      analysis.classes.map((c) => [
        c.queryClass,
        String(c.queries),
        c.matches < 0 ? 'n/a' : int(c.matches),
        `${ms(c.searchP50)} / ${ms(c.searchMax)}`,
        ms(c.sessionP50),
        ms(c.peerP50),
        ms(c.candidates),
        ms(c.rank),
        ms(c.read),
        int(c.ranked),
      ]),
    ),
  );
  console.log('  columns: search = searchMessages() as the route calls it, workspace scope (session and peer scope beside it);');
  console.log(`    its steps: candidates = the newest ${int(analysis.candidateLimit)} messages holding every word (SQL), rank = their`);
  console.log('    BM25 ordering (rank.ts), read 10 = the best 10 messages read by id; ranked = candidates the query had.');
  console.log(`  examples: ${analysis.classes.map((c) => `${c.queryClass}: ${c.examples.map((e) => `"${e}"`).join(', ')}`).join('; ')}`);
  console.log(`  candidate statement: ${analysis.candidateSql}`);
  console.log(`    plan, workspace scope: ${analysis.workspacePlan.join(' | ')}`);
  console.log(`    plan, session scope: ${analysis.sessionPlan.join(' | ')}`);
}

function printWebhooks(results: WebhookResult[]): void {
  console.log('');
  console.log(
    'webhooks: message.created events (100 messages per request, one request after another) delivered to a local receiver ' +
      '(node:http, own process); end to end = first request to last delivery received:',
  );
  console.log(
    table(
      ['case', 'events', 'deliveries', 'enqueue s', 'end to end s', 'events/s', 'deliveries/s', 'engram CPU µs/delivery (cores)', 'receiver CPU µs/delivery', 'retries / dup / bad sig'],
      results.map((r) => [
        r.kase.name + (r.tally.complete ? '' : ' (INCOMPLETE)'),
        int(r.events),
        `${int(r.tally.delivered)} of ${int(r.deliveries)}`,
        r.enqueueS.toFixed(2),
        r.totalS.toFixed(2),
        int(r.tally.delivered / r.kase.endpoints / r.totalS),
        int(r.tally.delivered / r.totalS),
        `${r.engramCpuUs.toFixed(0)} (${r.engramCores.toFixed(2)})`,
        r.receiverCpuUs.toFixed(0),
        `${r.retried} / ${r.tally.duplicates} / ${r.tally.badSignatures}`,
      ]),
    ),
  );
  for (const r of results) {
    if (r.lastProblem !== '') console.log(`  ${r.kase.name}: worker reported: ${r.lastProblem}`);
  }
}

function printBreakdown(breakdowns: Breakdown[], rows: { kase: Case; engram: Measurement; bare: Measurement }[], onPostgres: boolean): void {
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
