/**
 * "After idle" (`npm run bench`, case "after idle"; alone: `BENCH_ONLY=idle npm run bench`):
 * peers/list served by the built server in one process, with node's default V8 flags and with
 * the flags `npm start` passes (src/server-flags.ts): each measured right after start-up
 * ("fresh"), and again in a new process that waited BENCH_IDLE_SECONDS (default 30) for its
 * first request, as a server does that starts before its traffic. A process idle for a few
 * seconds after start-up gets V8's memory reducer's memory-reducing full collections; the case
 * counts them (from `--trace-gc`, on in every server it starts) and shows what they leave behind.
 *
 * All servers share one SQLite file with BENCH_IDLE_PEERS peers (default 1,000), written by a
 * server of its own first, and answer the same page; each run is warm-up then BENCH_DURATION
 * seconds at BENCH_CONNECTIONS.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVER_V8_FLAGS } from '../src/server/server-flags.js';
import { buildServer, processMemory, startEngramGroup, storePeers } from './engram-group.js';
import { freePort } from '../test/support/free-port.js';
import type { ChildServer } from './ipc.js';
import { measureLoad, type LoadOptions, type LoadRun } from './load.js';
import { wrkAvailable } from './wrk.js';

export const IDLE_CASE = 'after idle';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WORKSPACE = 'idle';
/** How `--trace-gc` names a memory-reducing full collection. */
const MEMORY_REDUCING_GC = 'Mark-Compact (reduce)';

export interface IdleOptions extends LoadOptions {
  peers: number;
  idleS: number;
}

interface IdleRun {
  label: string;
  nodeOptions: readonly string[];
  fresh: LoadRun;
  afterIdle: LoadRun;
  /** Memory-reducing full collections the server logged before the after-idle run. */
  reducingGcs: number;
  /** Resident memory of the after-idle process once its run is over. */
  rssAfter: number;
}

export interface IdleResult {
  options: IdleOptions;
  runs: IdleRun[];
}

/** `children` collects the processes so the caller can stop them on failure. */
export async function runIdleBench(options: IdleOptions, children: ChildServer[]): Promise<IdleResult> {
  buildServer();
  const dir = mkdtempSync(join(tmpdir(), 'engram-idle-'));
  try {
    const databaseUrl = join(dir, 'bench.db');
    const variants = [
      { label: 'node defaults', nodeOptions: [] as readonly string[] },
      { label: SERVER_V8_FLAGS.join(' '), nodeOptions: SERVER_V8_FLAGS },
    ];
    const start = async (variant: (typeof variants)[number]) => {
      const port = await freePort();
      // the output is read line by line: a line may arrive in two chunks
      const seen = { reducingGcs: 0, partial: '' };
      const server = await startEngramGroup({
        cwd: ROOT,
        databaseUrl,
        port,
        processes: 1,
        compiled: true,
        nodeOptions: ['--trace-gc', ...variant.nodeOptions],
        onOutput: (text) => {
          const lines = (seen.partial + text).split('\n');
          seen.partial = lines.pop()!;
          seen.reducingGcs += lines.filter((line) => line.includes(MEMORY_REDUCING_GC)).length;
        },
      });
      children.push(server);
      return { server, base: `http://127.0.0.1:${port}`, seen };
    };
    const route = { path: `/v3/workspaces/${WORKSPACE}/peers/list?page=1&size=50` };

    // the store, written by a server of its own, so both measured ones start alike
    const seeder = await start(variants[0]);
    await storePeers(seeder.base, WORKSPACE, options.peers);
    await seeder.server.stop();

    // fresh: each variant started and measured at once
    const fresh: LoadRun[] = [];
    for (const variant of variants) {
      const s = await start(variant);
      fresh.push(await measureLoad(s.server, s.base, route, options));
      await s.server.stop();
    }
    // after idle: both started together, left without requests, then measured one after the other
    const idle = [];
    for (const variant of variants) idle.push(await start(variant));
    process.stdout.write(` idle ${options.idleS} s...`);
    await new Promise((resolve) => setTimeout(resolve, options.idleS * 1000));
    const runs: IdleRun[] = [];
    for (const [i, s] of idle.entries()) {
      const reducingGcs = s.seen.reducingGcs;
      const afterIdle = await measureLoad(s.server, s.base, route, options);
      // `--processes 1` serves in the started process itself
      runs.push({ ...variants[i], fresh: fresh[i], afterIdle, reducingGcs, rssAfter: processMemory(s.server.process!.pid!).rss });
    }
    for (const s of idle) await s.server.stop();
    return { options, runs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');

export function printIdle({ options, runs }: IdleResult): void {
  console.log(
    `\nAfter idle: peers/list v3 (page of 50 of ${int(options.peers)} peers), the built server in one process, ` +
      `${options.connections} connections, ${options.warmupS} s warm-up + ${options.durationS} s per run; fresh: measured right after start-up; ` +
      `after idle: started, then ${options.idleS} s without requests; ` +
      `load from ${wrkAvailable() ? 'wrk' : 'autocannon'}`,
  );
  const header = ['node options', 'fresh: req/s, p50/p99 ms, CPU µs/req', 'after idle: req/s, p50/p99 ms, CPU µs/req', 'after/fresh req/s', 'memory-reducing GCs while idle', 'RSS after', 'non-2xx/errors'];
  const cell = (r: LoadRun) => `${int(r.rps)}, ${ms(r.p50)}/${ms(r.p99)}, ${r.cpuUsPerRequest.toFixed(1)}`;
  const rows = runs.map((r) => [
    r.label,
    cell(r.fresh),
    cell(r.afterIdle),
    (r.afterIdle.rps / r.fresh.rps).toFixed(2),
    String(r.reducingGcs),
    `${(r.rssAfter / 1024 / 1024).toFixed(0)} MB`,
    `${r.fresh.non2xx + r.afterIdle.non2xx}/${r.fresh.errors + r.afterIdle.errors}`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  console.log([line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n'));
  const [plain, flagged] = runs;
  console.log(`  after idle, ${flagged.label} against node defaults: ${(flagged.afterIdle.rps / plain.afterIdle.rps).toFixed(2)}x the requests/s`);
}
