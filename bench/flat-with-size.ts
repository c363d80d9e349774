/**
 * "Flat with size" (`npm run bench`, case "flat with size"; alone: `BENCH_ONLY=flat npm run bench`):
 * the hot read routes measured on a small store and on a large one, to show that a request's
 * latency depends on the page it returns, not on how much the store holds.
 *
 * For each size N (1,000 and BENCH_FLAT_ROWS, default 1,000,000) a fresh SQLite file gets N peers,
 * N sessions (bench-peer a member of 60 of them) and N messages (corpus.ts; the listed session,
 * chat-000000, gets 100 of 1,000 and 4,000 of 1,000,000), loaded by one Engram process that then
 * exits. The built server (`node <SERVER_V8_FLAGS> dist/cli/main.js serve --processes 1`, as `npm start` runs it;
 * the case runs `npm run build` first) then serves the file from a fresh process, so its memory
 * is what serving costs, not what loading or a TypeScript loader did. Each route runs with 16 connections (BENCH_CONNECTIONS), warm-up then
 * BENCH_DURATION seconds; the table gives p50/p99 per size and the ratio of the p99s (aim: at
 * most 1.5), and the serving process's resident memory at the large size (aim: under 200 MB).
 *
 * Search uses the queries the loader picks for each size (rare, medium, common and two-word
 * classes, bands scaled with N, so a rare word is as rare in both stores).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCH_PEER, LIST_SESSION, SAME_MATCHES, type DatasetShape, type MessageShape } from './dataset.js';
import type { MessagesLoaded, StartRequest } from './engram-server.js';
import { buildServer, childrenOf, processMemory, startEngramGroup, type ProcessMemory } from './engram-group.js';
import { freePort } from '../test/support/free-port.js';
import { forkServer, type ChildServer } from './ipc.js';
import { SERVER_V8_FLAGS } from '../src/server/server-flags.js';
import { measureLoad, type LoadRoute, type LoadRun } from './load.js';
import { wrkAvailable } from './wrk.js';

export const FLAT_CASE = 'flat with size';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WORKSPACE = 'bench';
/** The aims: p99 at the large size at most this many times the small size's, and RSS under 200 MB. */
const AIM_P99_RATIO = 1.5;
const AIM_RSS_BYTES = 200 * 1024 * 1024;

export interface FlatOptions {
  small: number;
  large: number;
  connections: number;
  warmupS: number;
  durationS: number;
}

interface SizeResult {
  rows: number;
  loadS: number;
  listSessionMessages: number;
  routes: Map<string, LoadRun>;
  memory: ProcessMemory;
  /** The same process once it has stored a message (which loads the tokenizer's tables). */
  memoryAfterWrite: ProcessMemory;
}

export interface FlatResult {
  options: FlatOptions;
  sizes: SizeResult[];
}

interface Route extends LoadRoute {
  name: string;
}

function routesFor(queries: string[], sameMatches: string[]): Route[] {
  const ws = encodeURIComponent(WORKSPACE);
  return [
    { name: 'peers/list v3', path: `/v3/workspaces/${ws}/peers/list?page=1&size=50` },
    { name: 'sessions of peer v3', path: `/v3/workspaces/${ws}/peers/${BENCH_PEER}/sessions?size=50` },
    { name: 'message list v3', path: `/v3/workspaces/${ws}/sessions/${LIST_SESSION}/messages/list?size=50` },
    {
      name: 'search workspace v3',
      path: `/v3/workspaces/${ws}/search`,
      next: (k) => ({ path: `/v3/workspaces/${ws}/search`, body: JSON.stringify({ query: queries[k % queries.length], limit: 10 }) }),
    },
    {
      name: `search, ${SAME_MATCHES.low}-${SAME_MATCHES.high} matches`,
      path: `/v3/workspaces/${ws}/search`,
      next: (k) => ({ path: `/v3/workspaces/${ws}/search`, body: JSON.stringify({ query: sameMatches[k % sameMatches.length], limit: 10 }) }),
    },
  ];
}

async function runSize(rows: number, options: FlatOptions, children: ChildServer[]): Promise<SizeResult> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-flat-'));
  try {
    const databaseUrl = join(dir, 'bench.db');
    const request = (shape: DatasetShape): StartRequest => ({ databaseUrl, shape, dropWorkspaceOnClose: false, webhookSecret: 'unused', workerPollMs: 1000 });
    const execArgv = ['--import', 'tsx'];

    // 1. load in one process, which then exits
    const started = performance.now();
    const loader = forkServer('engram loader', join(ROOT, 'bench/engram-server.ts'), { cwd: ROOT, execArgv });
    children.push(loader);
    await loader.call('start', request({ workspaceId: WORKSPACE, peers: rows, sessions: rows, benchPeerSessions: 60, extraMemberships: 0 }));
    const messageShape: MessageShape = { workspaceId: WORKSPACE, messages: rows, sessions: Math.min(1_000, rows), vocabulary: 20_000, zipf: 1.1, seed: 42 };
    const loaded = await loader.call<MessagesLoaded>('loadMessages', messageShape, 1_800_000);
    await loader.stop();
    const loadS = (performance.now() - started) / 1000;

    // 2. serve the file from a fresh process, the built server as `npm start` runs it
    const port = await freePort();
    const server = await startEngramGroup({ cwd: ROOT, databaseUrl, port, processes: 1, compiled: true, nodeOptions: SERVER_V8_FLAGS });
    children.push(server);
    const base = `http://127.0.0.1:${port}`;
    const routes = new Map<string, LoadRun>();
    for (const route of routesFor(
      loaded.queries.map((q) => q.query),
      loaded.sameMatches.map((q) => q.query),
    )) {
      process.stdout.write(` ${route.name}...`);
      routes.set(route.name, await measureLoad(server, base, route, options));
    }
    // one process serves alone (`--processes 1` forks none); were it a group, its one child
    const pid = server.process!.pid!;
    const serving = childrenOf(pid)[0] ?? pid;
    const memory = processMemory(serving, databaseUrl);
    // a process that also writes: storing a message counts its tokens, loading the tokenizer
    const stored = await fetch(`${base}/v3/workspaces/${WORKSPACE}/sessions/${LIST_SESSION}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ peer_id: BENCH_PEER, content: 'one message stored after the runs' }] }),
    });
    if (stored.status !== 201) throw new Error(`storing a message answered ${stored.status}`);
    const memoryAfterWrite = processMemory(serving, databaseUrl);
    await server.stop();
    return { rows, loadS, listSessionMessages: loaded.listSessionMessages, routes, memory, memoryAfterWrite };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs both sizes; `children` collects the processes so the caller can stop them on failure. */
export async function runFlatBench(options: FlatOptions, children: ChildServer[]): Promise<FlatResult> {
  process.stdout.write('\n    building the server (npm run build)...');
  buildServer();
  const sizes: SizeResult[] = [];
  for (const rows of [options.small, options.large]) {
    process.stdout.write(`\n    ${rows.toLocaleString('en-US')} rows:`);
    sizes.push(await runSize(rows, options, children));
  }
  return { options, sizes };
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');
const mb = (bytes: number) => (Number.isFinite(bytes) ? `${(bytes / 1024 / 1024).toFixed(0)} MB` : 'n/a');

export function printFlat({ options, sizes }: FlatResult): void {
  const [small, large] = sizes;
  const n = (rows: number) => rows.toLocaleString('en-US');
  console.log(
    `\nFlat with size on SQLite: ${n(small.rows)} vs ${n(large.rows)} peers, sessions and messages ` +
      `(${options.connections} connections, ${options.warmupS} s warm-up + ${options.durationS} s per route; ` +
      `loaded in ${small.loadS.toFixed(1)} s and ${large.loadS.toFixed(1)} s; the listed session holds ${n(small.listSessionMessages)} and ${n(large.listSessionMessages)} messages)`,
  );
  const header = ['route', `p50/p99 ms at ${n(small.rows)}`, `p50/p99 ms at ${n(large.rows)}`, 'p99 ratio', `CPU µs/req at ${n(small.rows)} / ${n(large.rows)}`, 'req/s', 'non-2xx/errors'];
  const rows = [...small.routes.keys()].map((name) => {
    const a = small.routes.get(name)!;
    const b = large.routes.get(name)!;
    const ratio = b.p99 / a.p99;
    return [
      name,
      `${ms(a.p50)} / ${ms(a.p99)}`,
      `${ms(b.p50)} / ${ms(b.p99)}`,
      `${ratio.toFixed(2)} ${ratio <= AIM_P99_RATIO ? 'MET' : 'NOT MET'}`,
      `${int(a.cpuUsPerRequest)} / ${int(b.cpuUsPerRequest)}`,
      `${int(a.rps)} / ${int(b.rps)}`,
      `${a.non2xx + b.non2xx}/${a.errors + b.errors}`,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  console.log([line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n'));
  const m = large.memory;
  const w = large.memoryAfterWrite;
  // the pages of the mapped database file are the kernel's page cache, shared by every process
  // on the file: RSS counts them in each; "own" leaves them out
  const own = (x: ProcessMemory) => x.rss - x.rssDatabase;
  const verdict = (bytes: number) => (bytes < AIM_RSS_BYTES ? 'MET' : 'NOT MET');
  const split = (x: ProcessMemory) =>
    `RSS ${mb(x.rss)} (anonymous ${mb(x.rssAnon)}, mapped files ${mb(x.rssFile)}: of them the database file ${mb(x.rssDatabase)}) -> ${verdict(x.rss)}; ` +
    `without the shared map of the database file ${mb(own(x))} -> ${verdict(own(x))}`;
  console.log(
    `  serving process memory after the runs at ${n(large.rows)} rows: ${split(m)}; peak RSS ${mb(m.maxRss)} (aim: under ${mb(AIM_RSS_BYTES)}); ` +
      `at ${n(small.rows)} rows: RSS ${mb(small.memory.rss)} (anonymous ${mb(small.memory.rssAnon)}); load from ${wrkAvailable() ? 'wrk' : 'autocannon'}, ` +
      `server built (node ${SERVER_V8_FLAGS.join(' ')} dist/cli/main.js serve --processes 1)`,
  );
  console.log(`  the same process once it has stored a message (its tokens counted: the tokenizer's tables loaded): ${split(w)}`);
}
