/**
 * `npm run fuzz`: a longer fuzz run than CI's, with a random seed unless one is given.
 *
 *   npm run fuzz -- [--seed N] [--runs N] [--only 'POST /v3/workspaces/{workspace_id}/search'] [--auth]
 *   npm run fuzz -- --concurrent 16 [--processes 2] [--seed N] [--runs N]
 *   npm run fuzz -- --mcp [--auth] [--seed N] [--runs N]
 *
 * Starts `engram serve` on a new SQLite file (or on DATABASE_URL when that is PostgreSQL), sends
 * --runs requests (default 200) to every operation of its /openapi.json, and prints each failing
 * operation with the seed that replays it. --auth runs the server with auth on and mixes an
 * admin's token with another workspace's (whose successes must not touch the fixtures) and broken ones.
 * --concurrent N sends as many requests (runs x operations) in a random mix, N at a time, on
 * shared workspaces (runConcurrentFuzz), to a server of --processes processes (default 1) whose
 * reasoning work runs on a fake model; afterwards no job may be dead-lettered, no error logged.
 * --mcp fuzzes /mcp instead (runMcpFuzz): --runs calls of every tool, four times as many JSON-RPC bodies.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startServerProcess } from '../support/server-process.js';
import { createFixture, runConcurrentFuzz, runFuzz } from './fuzz-engine.js';
import { runMcpFuzz } from './mcp-fuzz.js';
import { serverProblems, startFuzzModel } from './fuzz-model.js';
import { fuzzTokens } from './tokens.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    runs: { type: 'string', default: '200' },
    only: { type: 'string' },
    'timeout-ms': { type: 'string', default: '10000' },
    auth: { type: 'boolean', default: false },
    concurrent: { type: 'string' },
    processes: { type: 'string', default: '1' },
    mcp: { type: 'boolean', default: false },
  },
});
const seed = values.seed !== undefined ? Number(values.seed) : (Math.random() * 2 ** 31) | 0;
const runs = Number(values.runs);
const dir = mkdtempSync(join(tmpdir(), 'engram-fuzz-'));
const databaseUrl = process.env.DATABASE_URL?.startsWith('postgres') ? process.env.DATABASE_URL : join(dir, 'fuzz.db');

const concurrent = values.concurrent === undefined ? undefined : Number(values.concurrent);
if (concurrent !== undefined && values.auth) throw new Error('--concurrent runs without auth');
console.log(
  `fuzz: seed ${seed}, ${runs} requests per operation, ${databaseUrl.startsWith('postgres') ? 'PostgreSQL' : 'SQLite'}${values.auth ? ', auth on' : ''}` +
    (concurrent === undefined ? '' : `, ${concurrent} in flight on shared workspaces, ${values.processes} server process(es)`),
);
const SECRET = 'fuzz-secret-of-reasonable-length';
// the concurrent run races the reasoning work too, on a fake model
const model = concurrent === undefined ? undefined : await startFuzzModel();
const server = await startServerProcess({
  DATABASE_URL: databaseUrl,
  LOG_LEVEL: 'warn',
  WEB_CONCURRENCY: values.processes,
  ...(values.auth ? { AUTH_USE_AUTH: 'true', AUTH_JWT_SECRET: SECRET } : {}),
  ...model?.env,
});
let exited = false;
void server.exited.then(() => (exited = true));
const started = performance.now();
try {
  const timeoutMs = Number(values['timeout-ms']);
  if (values.mcp) {
    const tokens = values.auth ? fuzzTokens(SECRET) : undefined;
    const { current } = await createFixture(server.baseUrl, `mcp-${seed}`, tokens?.admin);
    const authorizations = tokens === undefined ? undefined : [tokens.admin, tokens.foreign, undefined, ...tokens.others];
    const mcp = await runMcpFuzz({ baseUrl: server.baseUrl, seed, runsPerTool: runs, ids: current, timeoutMs, authorizations, isAlive: () => !exited });
    console.log(`fuzz: ${mcp.requests} requests to /mcp (${mcp.tools} tools; ${mcp.toolResults} tool results, ${mcp.toolErrors} of them errors); statuses ${JSON.stringify(mcp.statuses)}`);
    for (const failure of mcp.failures) console.log(`\n${failure}`);
    console.log(mcp.failures.length === 0 ? 'fuzz: no failures' : `\nfuzz: ${mcp.failures.length} failure(s) with seed ${seed}`);
    if (mcp.failures.length > 0) process.exitCode = 1;
  }
  if (!values.mcp) {
    const result =
      concurrent === undefined
        ? await runFuzz({
            baseUrl: server.baseUrl,
            seed,
            runsPerOperation: runs,
            only: values.only,
            timeoutMs,
            isAlive: () => !exited,
            auth: values.auth ? fuzzTokens(SECRET) : undefined,
            log: (line) => console.log(line),
          })
        : await runConcurrentFuzz({ baseUrl: server.baseUrl, seed, requests: runs * (await operationCount(server.baseUrl)), inFlight: concurrent, timeoutMs, isAlive: () => !exited });
    const seconds = (performance.now() - started) / 1000;
    console.log(`\nfuzz: ${result.requests} requests to ${result.operations} operations in ${seconds.toFixed(1)} s; slowest answer ${result.slowestMs.toFixed(0)} ms`);
    console.log(`fuzz: statuses ${JSON.stringify(result.statuses)}`);
    if (process.env.FUZZ_VERBOSE) for (const [op, seen] of Object.entries(result.statusesByOperation)) console.log(`  ${op}: ${JSON.stringify(seen)}`);
    const problems = model === undefined || exited ? [] : await serverProblems(server.baseUrl, server.output());
    for (const problem of problems) console.log(`\nfuzz: the server afterwards: ${problem}`);
    if (problems.length > 0) process.exitCode = 1;
    if (result.failures.length > 0) {
      console.log(`\nfuzz: ${result.failures.length} operation(s) failed with seed ${seed}:`);
      for (const failure of result.failures) console.log(`\n${failure.report}`);
      if (concurrent === undefined) console.log(`\nreplay: npm run fuzz -- --seed ${seed} --runs ${runs} --only '<operation>'`);
      if (server.output().includes('"level":50') || exited) console.log(`\nserver output (tail):\n${server.output().slice(-4000)}`);
      process.exitCode = 1;
    } else if (problems.length === 0) {
      console.log('fuzz: no failures');
    }
  }
} finally {
  server.child.kill('SIGTERM');
  await server.exited;
  await model?.fake.close();
  rmSync(dir, { recursive: true, force: true });
}

async function operationCount(baseUrl: string): Promise<number> {
  const document = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as { paths: Record<string, object> };
  return Object.values(document.paths).reduce((n, methods) => n + Object.keys(methods).length, 0);
}
