/**
 * Two sets of V8 flags for a server process, side by side (docs/decisions/0025-v8-flags.md):
 * peers/list served by the built server in one process started with each set, both started
 * together on one SQLite file of BENCH_FLAGS_PEERS peers (default 1,000) and measured in turns,
 * BENCH_FLAGS_ROUNDS rounds (default 6) of warm-up + BENCH_DURATION seconds (default 8) at
 * BENCH_CONNECTIONS (default 16), the order alternating from round to round. Prints each round,
 * the medians, and B's requests a second over A's in each round with their median.
 *
 *   npx tsx bench/v8-flags.ts
 *   BENCH_FLAGS_A="..." BENCH_FLAGS_B="..." npx tsx bench/v8-flags.ts
 *
 * A defaults to the server's flags (src/server/server-flags.ts), B to them without the two that
 * bound the old generation (`--heap-growing-percent`, `--initial-old-space-size`): V8's own
 * growing factor (decision 0025, "`--heap-growing-percent=100` with `--initial-old-space-size=128`").
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVER_V8_FLAGS } from '../src/server/server-flags.js';
import { freePort } from '../test/support/free-port.js';
import { buildServer, startEngramGroup, storePeers } from './engram-group.js';
import { measureLoad, type LoadRun } from './load.js';
import { median } from './stats.js';
import { wrkAvailable } from './wrk.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const env = process.env;
const flagsOf = (text: string | undefined, fallback: readonly string[]) => (text === undefined ? [...fallback] : text.split(' ').filter((flag) => flag !== ''));
const A = flagsOf(env.BENCH_FLAGS_A, SERVER_V8_FLAGS);
const HEAP_BOUNDS = ['--heap-growing-percent', '--initial-old-space-size'];
const B = flagsOf(
  env.BENCH_FLAGS_B,
  SERVER_V8_FLAGS.filter((flag) => !HEAP_BOUNDS.includes(flag.split('=')[0])),
);
const PEERS = Number(env.BENCH_FLAGS_PEERS ?? 1000);
const ROUNDS = Number(env.BENCH_FLAGS_ROUNDS ?? 6);
const options = { connections: Number(env.BENCH_CONNECTIONS ?? 16), warmupS: Number(env.BENCH_WARMUP ?? 2), durationS: Number(env.BENCH_DURATION ?? 8) };
const WORKSPACE = 'flags';

if (!(PEERS >= 50 && ROUNDS >= 1 && options.connections >= 1 && options.durationS > 0)) {
  console.error('v8-flags: BENCH_FLAGS_PEERS >= 50, BENCH_FLAGS_ROUNDS >= 1, BENCH_CONNECTIONS >= 1, BENCH_DURATION > 0');
  process.exit(2);
}

buildServer();
const dir = mkdtempSync(join(tmpdir(), 'engram-v8-flags-'));
const databaseUrl = join(dir, 'bench.db');
const start = async (nodeOptions: readonly string[]) => {
  const port = await freePort();
  const server = await startEngramGroup({ cwd: ROOT, databaseUrl, port, processes: 1, compiled: true, nodeOptions });
  return { server, base: `http://127.0.0.1:${port}` };
};
const started: Awaited<ReturnType<typeof start>>[] = [];
try {
  // the store, written by a server of its own, so both measured ones start alike
  const seeder = await start(A);
  started.push(seeder);
  await storePeers(seeder.base, WORKSPACE, PEERS);
  await seeder.server.stop();

  console.log(
    `v8-flags: peers/list v3 (page of 50 of ${PEERS} peers), the built server in one process with each set, ${options.connections} connections, ` +
      `${options.warmupS} s warm-up + ${options.durationS} s a run, ${ROUNDS} rounds in turns; load from ${wrkAvailable() ? 'wrk' : 'autocannon'}`,
  );
  console.log(`  A: ${A.join(' ') || '(none)'}\n  B: ${B.join(' ') || '(none)'}`);
  const servers = { A: await start(A), B: await start(B) };
  started.push(servers.A, servers.B);
  const route = { path: `/v3/workspaces/${WORKSPACE}/peers/list?page=1&size=50` };
  const runs: Record<'A' | 'B', LoadRun[]> = { A: [], B: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const which of round % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const)) {
      const run = await measureLoad(servers[which].server, servers[which].base, route, options);
      if (run.non2xx > 0 || run.errors > 0) throw new Error(`${which} answered ${run.non2xx} non-2xx and ${run.errors} errors in round ${round + 1}`);
      runs[which].push(run);
      console.log(`  round ${round + 1} ${which}: ${Math.round(run.rps).toLocaleString('en-US')} req/s, p50 ${run.p50.toFixed(2)} ms, ${run.cpuUsPerRequest.toFixed(1)} µs of CPU a request`);
    }
  }
  const ratios = runs.A.map((a, i) => runs.B[i].rps / a.rps);
  for (const which of ['A', 'B'] as const) {
    console.log(`${which}: median ${Math.round(median(runs[which].map((r) => r.rps))).toLocaleString('en-US')} req/s, ${median(runs[which].map((r) => r.cpuUsPerRequest)).toFixed(1)} µs of CPU a request`);
  }
  console.log(`B / A req/s by round: ${ratios.map((r) => r.toFixed(3)).join(', ')}; median ${median(ratios).toFixed(3)}`);
} finally {
  for (const s of started) await s.server.stop();
  rmSync(dir, { recursive: true, force: true });
}
