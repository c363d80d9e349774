/**
 * `npm run soak`: a bounded long run of a mixed workload against a real `engram serve` process,
 * reporting over time what a slow leak or a stuck queue would show.
 *
 *   npm run soak -- [--minutes 10] [--clients 8] [--rate 100] [--sample-seconds 15] [--processes 1] [--workers-apart] [--endpoints 2]
 *
 * --rate is the requests per second all clients aim at together: a soak is a long run at a load
 * the server sustains (webhook deliveries included), not a measurement of its limit.
 *
 * Clients write messages (which queue webhook deliveries to a receiver in its own process, and
 * the deriver's, summarizer's and embedder's work for the fake model server in another), list,
 * search, add peers, store and query conclusions and read session context. Every sample
 * prints the server's resident memory (anonymous and file-backed, from /proc), V8 heap, open
 * file descriptors, active handles, event-loop lag, queued jobs, and the clients' throughput,
 * latency and errors; every minute a throughput line. At the end it compares the middle of the
 * run with its end (memory by the lowest sample of the second quarter and of the last) and exits
 * non-zero on any error, any lost webhook event, or memory that kept growing. On SQLite (default, a new file) or on DATABASE_URL when that is PostgreSQL.
 *
 * --processes 2 (PostgreSQL only) starts that many `engram serve` processes on the one database,
 * each with its workers, the clients taking turns among them; the end reports whether any job ran
 * more than once. --workers-apart starts the servers without workers (RUN_WORKERS=false) and one
 * `engram worker` process beside them, so requests do not share an event loop with the
 * background work; its CPU and memory count with the servers'. Every sample also prints the CPU
 * of the servers and of the database's processes (a share of one core), and the end the CPU
 * seconds of each part of the run; on PostgreSQL also its statements running at an average
 * moment by what they waited on (bench/database-waits.ts); with pg_stat_statements preloaded
 * (WITH_POSTGRES_OPTIONS='-c shared_preload_libraries=pg_stat_statements'), the statements by the
 * database time they took, and the first fifth of the run beside the last (bench/statement-windows.ts).
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { serverExecArgv } from '../src/server/server-flags.js';
import { startServerProcess, startWorkerProcess } from '../test/support/server-process.js';
import { forkServer } from './ipc.js';
import { DatabaseCpu } from './database-cpu.js';
import { cpuSeconds } from './process-stat.js';
import { formatWaits, sampleDatabaseWaits, type WaitSampler } from './database-waits.js';
import type { ReceiverTally } from './webhook-receiver.js';
import { compareWindows, readStatementCounters, type StatementCounters } from './statement-windows.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    clients: { type: 'string', default: '8' },
    'sample-seconds': { type: 'string', default: '15' },
    rate: { type: 'string', default: '100' },
    processes: { type: 'string', default: '1' },
    'workers-apart': { type: 'boolean', default: false },
    endpoints: { type: 'string', default: '2' },
  },
});
const minutes = Number(values.minutes);
const clients = Number(values.clients);
const sampleMs = Number(values['sample-seconds']) * 1000;
const rate = Number(values.rate);
const processes = Number(values.processes);
const workersApart = values['workers-apart'] === true;
/** Webhook endpoints of the workspace, each sent every message.created (0: what the deliveries cost, by difference). */
const ENDPOINTS = Number(values.endpoints);
if (!(minutes > 0 && minutes <= 240 && clients > 0 && clients <= 256 && sampleMs >= 1000 && rate > 0 && Number.isInteger(processes) && processes >= 1 && processes <= 8 && Number.isInteger(ENDPOINTS) && ENDPOINTS >= 0 && ENDPOINTS <= 10)) {
  console.error('soak: --minutes 0..240, --clients 1..256, --sample-seconds >= 1, --rate > 0, --processes 1..8, --endpoints 0..10');
  process.exit(2);
}

/** Growth of anonymous memory (and of heap) from the middle of the run to its end that fails it. */
const MEMORY_SLACK_BYTES = 32 * 1024 * 1024;
const MEMORY_SLACK_RATIO = 0.2;

const WORDS = 'lisbon swimming weather garden violin chess coffee marathon painting hiking novel recipe tennis harbor museum concert river bakery puzzle kayak'.split(' ');
const WEBHOOK_SECRET = 'soak-secret-of-reasonable-length';

const dir = mkdtempSync(join(tmpdir(), 'engram-soak-'));
const databaseUrl = process.env.DATABASE_URL?.startsWith('postgres') ? process.env.DATABASE_URL : join(dir, 'soak.db');
if (processes > 1 && !databaseUrl.startsWith('postgres')) {
  console.error('soak: --processes above 1 needs DATABASE_URL=postgres://... (processes share a database through PostgreSQL)');
  process.exit(2);
}
const workspace = `soak-${Date.now().toString(36)}`;

const receiver = forkServer('webhook receiver', join(ROOT, 'bench/webhook-receiver.ts'), { cwd: ROOT, execArgv: ['--import', 'tsx'] });
const { port: receiverPort } = await receiver.call<{ port: number }>('listen', { secret: WEBHOOK_SECRET });
// the reasoning jobs' model: the fake model server in its own process, answering every chat with
// facts (the deriver stores them; summaries store the text) and every embedding at once
const model = forkServer('fake model server', join(ROOT, 'bench/fake-model-child.ts'), { cwd: ROOT, execArgv: ['--import', 'tsx'] });
const { env: modelEnv } = await model.call<{ env: Record<string, string> }>('listen', {
  dimensions: 64,
  chatJson: { explicit: [{ content: 'the peer is taking part in a long conversation' }, { content: 'the peer talks about many topics' }] },
});
const serverEnv = {
  DATABASE_URL: databaseUrl,
  LOG_LEVEL: 'warn',
  METRICS_ENABLED: 'true',
  WEBHOOK_SECRET,
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  ...modelEnv,
  EMBEDDING_VECTOR_DIMENSIONS: '64',
  // units are taken at 512 tokens or after 30 s, so reasoning keeps pace within a run
  DERIVER_REPRESENTATION_BATCH_MAX_AGE_SECONDS: '30',
  // `WEBHOOK_ORDERED=false npm run soak`: deliveries to an endpoint side by side
  ...(process.env.WEBHOOK_ORDERED === undefined ? {} : { WEBHOOK_ORDERED: process.env.WEBHOOK_ORDERED }),
};
// the server runs with the V8 flags `npm start` gives it (decision 0025), those of
// SOAK_NODE_OPTIONS first (a flag there, e.g. another --max-semi-space-size, wins)
const nodeOptions = serverExecArgv([
  ...(process.env.SOAK_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.SOAK_CPU_PROF}`] : []),
  // e.g. --perf-basic-prof-only-functions, for `perf record -p <server pid>`
  ...(process.env.SOAK_NODE_OPTIONS ?? '').split(' ').filter((option) => option !== ''),
]);
// one after the other: the first applies the migrations
const serveEnv = workersApart ? { ...serverEnv, RUN_WORKERS: 'false' } : serverEnv;
const servers = [await startServerProcess(serveEnv, [], nodeOptions)];
while (servers.length < processes) servers.push(await startServerProcess(serveEnv, [], nodeOptions));
const server = servers[0];
// the worker logs at info only the line that says it started
const worker = workersApart ? await startWorkerProcess({ ...serverEnv, LOG_LEVEL: 'info' }, nodeOptions) : undefined;
const pids = [...servers.map((s) => s.child.pid!), ...(worker === undefined ? [] : [worker.child.pid!])];

/** CPU seconds (user and system) of a process so far; 0 once it is gone. */
const cpuSecondsOf = (pid: number | undefined): number => cpuSeconds(pid) ?? 0;

/** The database server's processes' CPU: PostgreSQL's (the ended ones too), none on SQLite. */
const databaseCpu = databaseUrl.startsWith('postgres') ? new DatabaseCpu() : undefined;

/** CPU seconds so far of the parts of the run: the servers, the database, the clients (this process), the model and the webhook receiver. */
function cpuParts(): Record<'servers' | 'database' | 'clients' | 'model' | 'receiver', number> {
  const usage = process.cpuUsage();
  return {
    servers: pids.reduce((sum, p) => sum + cpuSecondsOf(p), 0),
    database: databaseCpu?.total() ?? 0,
    clients: (usage.user + usage.system) / 1e6,
    model: cpuSecondsOf(model.process.pid),
    receiver: cpuSecondsOf(receiver.process.pid),
  };
}

interface Window {
  requests: number;
  errors: number;
  latencies: number[];
}
let window: Window = { requests: 0, errors: 0, latencies: [] };
/**
 * Latencies by kind of request, for the run's first and last fifth: what grew with the data shows
 * in the table printed at the end.
 */
const byRoute = new Map<string, { early: number[]; late: number[] }>();
/** When the clients' load starts and ends (Date.now()); set once the set-up is done. */
const runWindow = { start: Infinity, end: Infinity };
let minuteRequests = 0;
let totalRequests = 0;
let totalErrors = 0;
const errorSamples: string[] = [];
let messagesCreated = 0;
let modelCalls = 0;
let requestTurn = 0;

/**
 * The clients' connections: kept alive, one a client and server at most. node:http rather than
 * `fetch`, whose streams and objects cost the load about 1.5 ms of CPU a request (0.15 to 0.16
 * of a core at 100 a second) on the cores the server and database share.
 */
const agent = new Agent({ keepAlive: true, maxSockets: clients });

/** One request: its status and body as text. */
function send(url: string, method: string, body: string | undefined): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
    const req = request(url, { method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function call(method: string, path: string, body?: unknown, expected: number[] = [200, 201, 204]): Promise<any> {
  const started = performance.now();
  let status = 0;
  let text = '';
  try {
    // the clients take turns among the servers
    ({ status, text } = await send(servers[requestTurn++ % servers.length].baseUrl + path, method, body === undefined ? undefined : JSON.stringify(body)));
  } catch (error) {
    text = (error as Error).message;
  }
  window.requests++;
  minuteRequests++;
  totalRequests++;
  const latency = performance.now() - started;
  window.latencies.push(latency);
  const at = Date.now();
  const fifth = (runWindow.end - runWindow.start) / 5;
  const part = at < runWindow.start ? undefined : at < runWindow.start + fifth ? 'early' : at >= runWindow.end - fifth && at <= runWindow.end ? 'late' : undefined;
  if (part !== undefined) {
    // the route without its names: /sessions/c3-s7/messages -> /sessions/{id}/messages
    const route = `${method} ${path.replace(/\?.*$/, '').replace(`/${workspace}`, '/{w}').replace(/\/c\d+-[a-z]\d*/g, '/{id}')}`;
    const entry = byRoute.get(route) ?? { early: [], late: [] };
    byRoute.set(route, entry);
    entry[part].push(latency);
  }
  if (!expected.includes(status)) {
    window.errors++;
    totalErrors++;
    if (errorSamples.length < 10) errorSamples.push(`${method} ${path} -> ${status}: ${text.slice(0, 200)}`);
    return undefined;
  }
  return text === '' ? undefined : JSON.parse(text);
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)];
const sentence = () => Array.from({ length: 4 + Math.floor(Math.random() * 12) }, () => pick(WORDS)).join(' ');

async function client(index: number, until: number): Promise<void> {
  const peers = [`c${index}-a`, `c${index}-b`, `c${index}-c`];
  let session = 0;
  const sessionId = () => `c${index}-s${session}`;
  await call('POST', `/v3/workspaces/${workspace}/sessions`, { id: sessionId(), peers: { [peers[0]]: {}, [peers[1]]: { observe_others: true } } }, [200, 201]);
  const intervalMs = (1000 * clients) / rate;
  let next = Date.now();
  while (Date.now() < until) {
    next += intervalMs;
    const wait = next - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    else if (wait < -1000) next = Date.now();
    const roll = Math.random();
    const w = `/v3/workspaces/${workspace}`;
    if (roll < 0.25) {
      const count = 1 + Math.floor(Math.random() * 8);
      const created = await call('POST', `${w}/sessions/${sessionId()}/messages`, {
        messages: Array.from({ length: count }, () => ({ peer_id: pick(peers.slice(0, 2)), content: sentence(), metadata: { n: Math.random() } })),
      });
      if (created !== undefined) messagesCreated += count;
    } else if (roll < 0.35) {
      await call('POST', `${w}/sessions/${sessionId()}/messages/list?size=50&reverse=true`, {});
    } else if (roll < 0.43) {
      await call('POST', `${w}/peers/list?size=50`, {});
    } else if (roll < 0.5) {
      await call('POST', `${w}/peers/${peers[0]}/sessions?size=50`, {});
    } else if (roll < 0.6) {
      await call('POST', `${w}/search`, { query: `${pick(WORDS)} ${pick(WORDS)}`, limit: 10 });
    } else if (roll < 0.67) {
      await call('POST', `${w}/sessions/${sessionId()}/search`, { query: pick(WORDS), limit: 10 });
    } else if (roll < 0.72) {
      // a new session now and then, so the store keeps growing in every dimension
      session++;
      await call('POST', `${w}/sessions/${sessionId()}/peers`, { [peers[0]]: {}, [peers[1]]: {}, [peers[2]]: { observe_me: false } });
    } else if (roll < 0.8) {
      await call('POST', `${w}/conclusions`, { conclusions: [{ content: sentence(), observer_id: peers[1], observed_id: peers[0], session_id: sessionId() }] });
    } else if (roll < 0.86) {
      await call('POST', `${w}/conclusions/query`, { query: pick(WORDS), top_k: 5, filters: { observer_id: peers[1], observed_id: peers[0] } });
    } else if (roll < 0.93) {
      await call('GET', `${w}/sessions/${sessionId()}/context?tokens=2000`);
    } else {
      await call('GET', `${w}/queue/status`);
    }
  }
}

interface Sample {
  at: number;
  /** The first server's garbage collection so far by kind (major, minor, incremental, weakcb): seconds paused and collections. */
  gc: Map<string, { seconds: number; count: number }>;
  rssAnon: number;
  rssFile: number;
  heapUsed: number;
  /** V8 heap the process holds (used or not) and memory outside it (Buffers, ArrayBuffers, native objects V8 knows of): what anon holds besides the heap in use. */
  heapTotal: number;
  external: number;
  fds: number;
  handles: number;
  lagP99Ms: number;
  queued: number;
  dead: number;
  /** Pending jobs by kind, most first. */
  pendingByKind: [string, number][];
  /** Transactions PostgreSQL ended in a deadlock or serialization failure, run again or failed. */
  conflicts: number;
}

/** Resident memory, summed over the servers. */
function procStatus(): { rssAnon: number; rssFile: number } {
  let rssAnon = 0;
  let rssFile = 0;
  for (const p of pids) {
    const text = readFileSync(`/proc/${p}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
    rssAnon += kb('RssAnon');
    rssFile += kb('RssFile') + kb('RssShmem');
  }
  return { rssAnon, rssFile };
}

async function sample(started: number): Promise<Sample> {
  const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const metric = (name: string, labels = '') => Number(new RegExp(`^${name}${labels.replace(/[{}]/g, '\\$&')} ([0-9.e+-]+)$`, 'm').exec(metrics)?.[1] ?? NaN);
  return {
    at: (Date.now() - started) / 1000,
    ...procStatus(),
    heapUsed: metric('engram_nodejs_heap_size_used_bytes'),
    heapTotal: metric('engram_nodejs_heap_size_total_bytes'),
    external: metric('engram_nodejs_external_memory_bytes'),
    fds: metric('engram_process_open_fds'),
    handles: metric('engram_nodejs_active_handles_total'),
    lagP99Ms: metric('engram_nodejs_eventloop_lag_p99_seconds') * 1000,
    queued: metric('engram_queue_jobs', '{status="pending"}') || 0,
    dead: metric('engram_queue_jobs', '{status="dead"}') || 0,
    pendingByKind: [...metrics.matchAll(/^engram_queue_open_jobs\{kind="([^"]+)",status="pending"\} ([0-9.e+-]+)$/gm)]
      .map((m): [string, number] => [m[1], Number(m[2])])
      .sort((a, b) => b[1] - a[1]),
    conflicts: (metric('engram_store_conflicts_total', '{outcome="retried"}') || 0) + (metric('engram_store_conflicts_total', '{outcome="failed"}') || 0),
    gc: new Map(
      [...metrics.matchAll(/^engram_nodejs_gc_duration_seconds_sum\{kind="([^"]+)"\} ([0-9.e+-]+)$/gm)].map((m) => [
        m[1],
        { seconds: Number(m[2]), count: metric('engram_nodejs_gc_duration_seconds_count', `{kind="${m[1]}"}`) },
      ]),
    ),
  };
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]);

await call('POST', '/v3/workspaces', { id: workspace }, [200, 201]);
for (let i = 0; i < ENDPOINTS; i++) await call('POST', `/v3/workspaces/${workspace}/webhooks`, { url: `http://localhost:${receiverPort}/hook/${i}` }, [200, 201]);

console.log(
  `soak: ${minutes} min, ${clients} clients aiming at ${rate} requests/s, ${databaseUrl.startsWith('postgres') ? 'PostgreSQL' : 'SQLite'}, ` +
    `${processes === 1 ? `server pid ${pids[0]}` : `${processes} server processes (pids ${pids.slice(0, processes).join(', ')})`}` +
    (worker === undefined ? '' : `, workers apart (pid ${worker.child.pid})`),
);
console.log(
  '   t(s)  req/s  err  p50ms  p99ms | anon MB  file MB  heap MB  fds  handles  lag p99 ms  queued  model chat/embed calls | cpu srv/db' +
    (databaseUrl.startsWith('postgres') ? ' | db statements running, by wait' : ''),
);
// on PostgreSQL, what its statements wait on (bench/database-waits.ts): a stall shows which lock
let waits: WaitSampler | undefined;
/** A connection that reads pg_stat_statements during the run, when the server preloads it. */
let statementsClient: { query<R>(sql: string): Promise<{ rows: R[] }>; end(): Promise<void> } | undefined;
/** Connections the database had opened when the load started (pg_stat_database.sessions). */
let sessionsAtStart = 0;
const sessionsOpened = async (client: { query<R>(sql: string): Promise<{ rows: R[] }> }) =>
  Number((await client.query<{ n: string }>('SELECT sessions AS n FROM pg_stat_database WHERE datname = current_database()')).rows[0]?.n ?? 0);
if (databaseUrl.startsWith('postgres')) {
  waits = await sampleDatabaseWaits(databaseUrl);
  // counted from here when the server preloads pg_stat_statements (see the end); else nothing
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows } = await client.query<{ shared_preload_libraries: string }>('SHOW shared_preload_libraries');
  if (rows[0].shared_preload_libraries.split(',').some((name) => name.trim() === 'pg_stat_statements')) {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await client.query('SELECT pg_stat_statements_reset()');
    statementsClient = client;
  }
  sessionsAtStart = await sessionsOpened(client);
  if (statementsClient === undefined) await client.end();
}
const started = Date.now();
const until = started + minutes * 60_000;
runWindow.start = started;
runWindow.end = until;
// the statements' counters at the start, at the end of the first fifth and at the start and end
// of the last (the end's once the clients are done): what grew with the data, printed at the end
const statementReadings: Promise<StatementCounters | undefined>[] = [];
const readStatements = () => {
  const client = statementsClient;
  statementReadings.push(client === undefined ? Promise.resolve(undefined) : readStatementCounters(client).catch(() => undefined));
};
readStatements();
const fifthTimers = [setTimeout(readStatements, (until - started) / 5), setTimeout(readStatements, ((until - started) * 4) / 5)];
const samples: Sample[] = [];
const cpuAtStart = cpuParts();
const databaseKindsAtStart = databaseCpu?.byKind();
let cpuBefore = cpuAtStart;
let cpuBeforeAt = performance.now();
const sampler = setInterval(() => {
  void sample(started)
    .then(async (s) => {
      const cpuNow = cpuParts();
      const seconds = (performance.now() - cpuBeforeAt) / 1000;
      const share = (part: 'servers' | 'database') => (cpuNow[part] - cpuBefore[part]) / seconds;
      const cpuColumn = `${share('servers').toFixed(2)}/${share('database').toFixed(2)}`;
      cpuBefore = cpuNow;
      cpuBeforeAt = performance.now();
      samples.push(s);
      // model calls since the last sample (this also clears the fake server's record)
      const { chat: chats, embeddings: embeds } = await model.call<{ chat: number; embeddings: number }>('calls');
      modelCalls += chats + embeds;
      const sorted = window.latencies.sort((a, b) => a - b);
      const rate = window.requests / (sampleMs / 1000);
      console.log(
        `${s.at.toFixed(0).padStart(7)} ${rate.toFixed(0).padStart(6)} ${String(window.errors).padStart(4)} ${percentile(sorted, 0.5).toFixed(1).padStart(6)} ${percentile(sorted, 0.99).toFixed(1).padStart(6)} | ` +
          `${mb(s.rssAnon).padStart(7)} ${mb(s.rssFile).padStart(8)} ${mb(s.heapUsed).padStart(8)} ${String(s.fds).padStart(4)} ${String(s.handles).padStart(8)} ${s.lagP99Ms.toFixed(1).padStart(11)} ${String(s.queued).padStart(7)} ${String(chats).padStart(6)}/${String(embeds).padEnd(15)} | ${cpuColumn}` +
          (waits === undefined ? '' : ` | ${formatWaits(waits.takeWindow(), 3)}`),
      );
      window = { requests: 0, errors: 0, latencies: [] };
    })
    .catch((error: unknown) => console.log(`soak: sample failed: ${(error as Error).message}`));
}, sampleMs);
let minute = 0;
const perMinute = setInterval(() => {
  minute++;
  console.log(`-- minute ${minute}: ${minuteRequests} requests (${(minuteRequests / 60).toFixed(0)}/s), ${messagesCreated} messages so far`);
  minuteRequests = 0;
}, 60_000);

await Promise.all(Array.from({ length: clients }, (_, i) => client(i, until)));
// the clients' kept-alive connections are not left to hold the process at its end
agent.destroy();
readStatements();
for (const timer of fifthTimers) clearTimeout(timer);
clearInterval(sampler);
clearInterval(perMinute);
const cpuUnderLoad = cpuParts();
const databaseKindsUnderLoad = databaseCpu?.byKind();
databaseCpu?.stop();
await waits?.stop();

// Every message.created event must reach both endpoints once the queue drains.
const expected = messagesCreated * ENDPOINTS;
const tally = await receiver.call<ReceiverTally>('expect', { total: expected, type: 'message.created', timeoutMs: 120_000 }, 180_000);
const createdDelivered = tally.perType['message.created'] ?? 0;
const otherEvents = Object.entries(tally.perType).filter(([type]) => type !== 'message.created');
// judged on the last sample under load; the drained state is reported beside it
const last = samples.at(-1) ?? (await sample(started));
const drained = await sample(started);
// Caches fill during the first part of a run (SQLite's page cache alone may take 64 MiB): growth
// is judged from the middle of the run to its end.
const middle = samples.find((s) => s.at >= (minutes * 60) / 2) ?? samples[0];
// Memory saws up and down with garbage collection (the heap between about 50 and 180 MB under
// the default load), so two single samples differ by chance; a leak raises the floor. Memory is
// judged by the lowest sample of the second quarter of the run against the lowest of the last.
const floor = (key: 'rssAnon' | 'heapUsed' | 'heapTotal' | 'external', from: number, to: number) => {
  const run = minutes * 60;
  const within = samples.filter((s) => s.at > run * from && s.at <= run * to).map((s) => s[key]);
  return within.length === 0 ? (key === 'rssAnon' ? middle : last)[key] : Math.min(...within);
};

const grew = (from: number, to: number) => to - from > Math.max(MEMORY_SLACK_BYTES, from * MEMORY_SLACK_RATIO);
const problems: string[] = [];
// a soak runs at a load the server sustains: falling well behind the target is a finding too
const achieved = totalRequests / (minutes * 60);
if (achieved < rate * 0.9) problems.push(`the clients achieved ${achieved.toFixed(0)} requests/s of the ${rate} aimed at`);
if (totalErrors > 0) problems.push(`${totalErrors} requests failed, e.g.\n  ${errorSamples.join('\n  ')}`);
if (createdDelivered < expected) problems.push(`webhooks: ${createdDelivered} of ${expected} message.created deliveries arrived`);
if (tally.badSignatures > 0) problems.push(`webhooks: ${tally.badSignatures} bad signatures`);
const anonFloors = [floor('rssAnon', 0.25, 0.5), floor('rssAnon', 0.75, 1)] as const;
const heapFloors = [floor('heapUsed', 0.25, 0.5), floor('heapUsed', 0.75, 1)] as const;
if (grew(...anonFloors)) problems.push(`anonymous memory's lowest sample grew from ${mb(anonFloors[0])} MB (second quarter) to ${mb(anonFloors[1])} MB (last quarter)`);
if (grew(...heapFloors)) problems.push(`heap's lowest sample grew from ${mb(heapFloors[0])} MB (second quarter) to ${mb(heapFloors[1])} MB (last quarter)`);
if (last.handles > middle.handles + 20) problems.push(`active handles grew from ${middle.handles} to ${last.handles}`);
if (last.fds > middle.fds + 20) problems.push(`open file descriptors grew from ${middle.fds} to ${last.fds}`);
if (drained.dead > 0) problems.push(`${drained.dead} background jobs were dead-lettered`);

console.log(`\nsoak: ${totalRequests} requests, ${totalErrors} errors, ${messagesCreated} messages, ${createdDelivered}/${expected} message.created webhook deliveries${otherEvents.map(([type, n]) => `, ${n} ${type}`).join('')} (${tally.duplicates} repeated), ${modelCalls} model calls (the background work, and the query embeddings a search did not find held)`);
console.log(
  `soak: at ${middle.at.toFixed(0)} s anon ${mb(middle.rssAnon)} MB, heap ${mb(middle.heapUsed)} MB, fds ${middle.fds}, handles ${middle.handles}; ` +
    `at ${last.at.toFixed(0)} s anon ${mb(last.rssAnon)} MB, heap ${mb(last.heapUsed)} MB, fds ${last.fds}, handles ${last.handles}; file-backed ${mb(last.rssFile)} MB (the database's pages)`,
);
console.log(
  `soak: lowest samples, second and last quarter: anon ${mb(anonFloors[0])} and ${mb(anonFloors[1])} MB, heap ${mb(heapFloors[0])} and ${mb(heapFloors[1])} MB` +
    ` (not judged: the heap held ${mb(floor('heapTotal', 0.25, 0.5))} and ${mb(floor('heapTotal', 0.75, 1))} MB, external memory ${mb(floor('external', 0.25, 0.5))} and ${mb(floor('external', 0.75, 1))} MB)`,
);
const byKind = (s: Sample) => (s.pendingByKind.length === 0 ? 'none' : s.pendingByKind.map(([kind, n]) => `${kind} ${n}`).join(', '));
console.log(`soak: pending jobs at the last sample under load: ${byKind(last)}; store conflicts (deadlocks, serialization failures) ${drained.conflicts}`);
console.log(`soak: drained: anon ${mb(drained.rssAnon)} MB, heap ${mb(drained.heapUsed)} MB, fds ${drained.fds}, handles ${drained.handles}, queued jobs ${drained.queued}`);
const loadSeconds = minutes * 60;
const cpuLine = (Object.keys(cpuUnderLoad) as (keyof typeof cpuUnderLoad)[])
  .map((part) => `${part} ${(cpuUnderLoad[part] - cpuAtStart[part]).toFixed(1)} s (${((cpuUnderLoad[part] - cpuAtStart[part]) / loadSeconds).toFixed(2)} of a core)`)
  .join(', ');
console.log(`soak: CPU under load: ${cpuLine}`);
const firstSample = samples[0] ?? last;
const gcLine = [...last.gc]
  .map(([kind, at]): [string, number, number] => [kind, at.seconds - (firstSample.gc.get(kind)?.seconds ?? 0), at.count - (firstSample.gc.get(kind)?.count ?? 0)])
  .filter(([, seconds]) => seconds >= 0.05)
  .map(([kind, seconds, count]) => `${kind} ${seconds.toFixed(1)} s (${count}, ${((seconds / Math.max(1, count)) * 1000).toFixed(2)} ms each)`)
  .join(', ');
console.log(`soak: the ${processes === 1 ? "server's" : "first server's"} garbage collection from the first sample to the last: ${gcLine || 'none'}`);
if (databaseKindsAtStart !== undefined && databaseKindsUnderLoad !== undefined) {
  const kinds = Object.entries(databaseKindsUnderLoad)
    .map(([kind, seconds]): [string, number] => [kind, seconds - (databaseKindsAtStart[kind] ?? 0)])
    .filter(([, seconds]) => seconds >= 0.05)
    .sort((a, b) => b[1] - a[1]);
  console.log(`soak: the database's CPU under load by process: ${kinds.map(([kind, seconds]) => `${kind} ${seconds.toFixed(1)} s`).join(', ')}`);
}
if (waits !== undefined) console.log(`soak: the database's running statements at an average moment under load, by what they waited on: ${formatWaits(waits.total(), 8)}`);
if (databaseUrl.startsWith('postgres')) {
  // every job once: a job claimed by two processes (or run again after a lost lease) counts an attempt more
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows } = await client.query<{ kind: string; jobs: string; again: string }>(
    `SELECT kind, COUNT(*) AS jobs, COUNT(*) FILTER (WHERE attempts > 1) AS again FROM jobs WHERE status = 'done' GROUP BY kind ORDER BY kind`,
  );
  // with the server started so (WITH_POSTGRES_OPTIONS='-c shared_preload_libraries=pg_stat_statements'
  // node scripts/with-postgres.mjs npm run soak): the statements the run spent the database's time on
  const statements = await client
    .query<{ calls: string; total: number; mean: number; query: string }>(
      `SELECT calls, total_exec_time AS total, mean_exec_time AS mean, query FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15`,
    )
    .catch(() => undefined);
  if (statements !== undefined) {
    console.log('soak: statements by the database time they took (total s, calls, mean ms):');
    for (const row of statements.rows) {
      console.log(`  ${(row.total / 1000).toFixed(1).padStart(7)} ${row.calls.padStart(8)} ${row.mean.toFixed(2).padStart(7)}  ${row.query.replace(/\s+/g, ' ').slice(0, 150)}`);
    }
    const readings = await Promise.all(statementReadings);
    if (readings.length === 4 && readings.every((reading) => reading !== undefined)) {
      console.log('soak: statements by their time in the last fifth of the run, beside the first (total, calls, mean):');
      for (const line of compareWindows([readings[0]!, readings[1]!], [readings[2]!, readings[3]!])) console.log(`  ${line}`);
    }
    // how many round trips the run made: each costs both sides CPU and, on a busy machine, a wait
    // for a core, whatever the statement does
    const counted = await client.query<{ calls: string; query: string; total: string }>(
      `SELECT calls, query, SUM(calls) OVER () AS total FROM pg_stat_statements ORDER BY calls DESC LIMIT 15`,
    );
    const total = Number(counted.rows[0]?.total ?? 0);
    const seconds = (runWindow.end - runWindow.start) / 1000;
    console.log(`soak: statements by calls (${total} in all with the drain: ${Math.round(total / seconds)} a second of load, ${(total / totalRequests).toFixed(1)} a request):`);
    for (const row of counted.rows) console.log(`  ${row.calls.padStart(8)}  ${row.query.replace(/\s+/g, ' ').slice(0, 150)}`);
    // with pg_stat_statements.track_planning on as well: the statements planned again at their runs
    // (a prepared statement on a custom plan is planned at every execution)
    const planned = await client.query<{ plans: string; calls: string; total: number; query: string }>(
      `SELECT plans, calls, total_plan_time AS total, query FROM pg_stat_statements WHERE plans > 0 ORDER BY total_plan_time DESC LIMIT 15`,
    );
    if (planned.rows.length > 0) {
      console.log('soak: statements by the time their planning took (total s, plans, calls):');
      for (const row of planned.rows) {
        console.log(`  ${(row.total / 1000).toFixed(1).padStart(7)} ${row.plans.padStart(8)} ${row.calls.padStart(8)}  ${row.query.replace(/\s+/g, ' ').slice(0, 150)}`);
      }
    }
  }
  // a connection opened costs the database a process, its caches and every named statement's parse
  console.log(`soak: connections the database opened under load and drain: ${(await sessionsOpened(client)) - sessionsAtStart}`);
  const again = rows.reduce((n, row) => n + Number(row.again), 0);
  console.log(`soak: jobs done: ${rows.map((row) => `${row.kind} ${row.jobs}`).join(', ')}; run more than once: ${again}`);
  if (again > 0) {
    problems.push(`${again} jobs ran more than once (${rows.filter((row) => Number(row.again) > 0).map((row) => `${row.kind} ${row.again}`).join(', ')})`);
    // a retry keeps the failed attempt's error; a job taken over after its lease ran out has none
    const { rows: errors } = await client.query<{ kind: string; attempts: number; last_error: string | null; n: string }>(
      `SELECT kind, attempts, last_error, COUNT(*) AS n FROM jobs WHERE status = 'done' AND attempts > 1 GROUP BY kind, attempts, last_error ORDER BY COUNT(*) DESC LIMIT 10`,
    );
    for (const row of errors) console.log(`soak:   ${row.n} ${row.kind} done at attempt ${row.attempts}, last error: ${row.last_error?.slice(0, 200) ?? 'none (its lease ran out)'}`);
  }
  await client.end();
  await statementsClient?.end();
}
const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 0.5);
console.log(`soak: p50 ms by request, first and last fifth of the run (requests in each):`);
for (const [route, { early, late }] of [...byRoute].sort((a, b) => median(b[1].late) - median(a[1].late))) {
  const shown = (values: number[]) => (values.length === 0 ? '-' : median(values).toFixed(1)).padStart(7);
  console.log(`  ${route.padEnd(58)} ${shown(early)} (${early.length}) -> ${shown(late)} (${late.length})`);
}
console.log(problems.length === 0 ? 'soak: flat and clean' : `soak: PROBLEMS\n- ${problems.join('\n- ')}`);

const children = [...servers, ...(worker === undefined ? [] : [worker])];
for (const s of children) s.child.kill('SIGTERM');
await Promise.all(children.map((s) => s.exited));
await receiver.stop();
await model.stop();
// SOAK_KEEP=1 keeps the SQLite file for a look afterwards
if (process.env.SOAK_KEEP === undefined) rmSync(dir, { recursive: true, force: true });
else console.log(`soak: kept ${dir}`);
process.exitCode = problems.length === 0 ? 0 : 1;
