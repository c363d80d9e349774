/**
 * A tool call at /mcp next to the HTTP route it stands for (`npx tsx bench/mcp.ts`): `engram
 * serve` in a child process on a fresh SQLite file (or BENCH_DATABASE_URL), one workspace with a
 * session of 50 messages and a peer card. Each pair is sent one request at a time over a kept-alive
 * connection, in BENCH_MCP_ROUNDS rounds (default 7) of BENCH_MCP_CALLS requests (default 300) per
 * side, the sides alternating within each round; printed per pair: the server's CPU per request
 * (from /proc) and the p50/p99 latency, each the median of the rounds, and the MCP/HTTP ratios.
 *
 * What a tool call does beyond its route: the MCP envelope (JSON-RPC parsed and checked, a server
 * and a stateless transport made for the request, the arguments and the structured result checked
 * against the tool's schemas), and the get-or-create of the workspace (and of the session or peer)
 * the reference's tools also run before the route's call (docs/mcp.md).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServerProcess } from '../test/support/server-process.js';
import { percentile } from './load.js';
import { median } from './stats.js';
import { cpuSeconds } from './process-stat.js';

const ROUNDS = Number(process.env.BENCH_MCP_ROUNDS ?? 7);
const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 300);
const W = 'bench-mcp';

interface Side {
  method: string;
  path: string;
  body?: string;
  headers: Record<string, string>;
}

function processCpuUs(pid: number): number {
  const seconds = cpuSeconds(pid);
  if (seconds === undefined) throw new Error(`mcp: no /proc/${pid}/stat (the server ended, or this is not Linux)`);
  return seconds * 1e6;
}


function toolCall(name: string, args: Record<string, unknown>): Side {
  return {
    method: 'POST',
    path: '/mcp',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { workspace_id: W, ...args } } }),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  };
}

const json = { 'content-type': 'application/json' };
const PAIRS: { name: string; mcp: Side; http: Side }[] = [
  {
    name: 'session messages (first page of 50)',
    mcp: toolCall('get_session_messages', { session_id: 's1' }),
    http: { method: 'POST', path: `/v3/workspaces/${W}/sessions/s1/messages/list`, body: '{}', headers: json },
  },
  {
    name: 'peer card',
    mcp: toolCall('get_peer_card', { peer_id: 'bot', target_peer_id: 'alice' }),
    http: { method: 'GET', path: `/v3/workspaces/${W}/peers/bot/card?target=alice`, headers: {} },
  },
  {
    name: 'session context',
    mcp: toolCall('get_session_context', { session_id: 's1', tokens: 2000 }),
    http: { method: 'GET', path: `/v3/workspaces/${W}/sessions/s1/context?tokens=2000`, headers: {} },
  },
];

async function send(base: string, side: Side): Promise<void> {
  const response = await fetch(base + side.path, { method: side.method, headers: side.headers, body: side.body });
  const text = await response.text();
  if (!response.ok || text.includes('"isError":true')) throw new Error(`${side.method} ${side.path}: ${response.status} ${text.slice(0, 300)}`);
}

async function run(base: string, pid: number, side: Side): Promise<{ cpuUs: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  const before = processCpuUs(pid);
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    await send(base, side);
    latencies.push(performance.now() - started);
  }
  const cpuUs = (processCpuUs(pid) - before) / CALLS;
  latencies.sort((a, b) => a - b);
  return { cpuUs, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-bench-mcp-'));
  const server = await startServerProcess({ DATABASE_URL: process.env.BENCH_DATABASE_URL ?? join(dir, 'bench.db'), LOG_LEVEL: 'warn', RUN_WORKERS: 'false' });
  const base = server.baseUrl;
  const pid = server.child.pid!;
  try {
    const post = (path: string, body: unknown, method = 'POST') => fetch(base + path, { method, headers: json, body: JSON.stringify(body) });
    await post('/v3/workspaces', { id: W });
    await post(`/v3/workspaces/${W}/sessions`, { id: 's1', peers: { alice: {}, bot: { observe_others: true } } });
    const messages = Array.from({ length: 50 }, (_, i) => ({ peer_id: i % 2 === 0 ? 'alice' : 'bot', content: `message ${i}: a sentence about hiking, tea and the weather in Bern` }));
    await post(`/v3/workspaces/${W}/sessions/s1/messages`, { messages });
    await post(`/v3/workspaces/${W}/peers/bot/card?target=alice`, { peer_card: ['Hiker', 'Drinks tea'] }, 'PUT');
    // warm-up: both sides of every pair
    for (const pair of PAIRS) for (let i = 0; i < 100; i++) await Promise.all([send(base, pair.mcp), send(base, pair.http)]);

    console.log(`${ROUNDS} rounds of ${CALLS} sequential requests per side; medians of the rounds; server CPU from /proc`);
    console.log('pair | MCP CPU µs/call | HTTP CPU µs/call | CPU ratio | MCP p50/p99 ms | HTTP p50/p99 ms | p99 ratio');
    for (const pair of PAIRS) {
      const mcp: { cpuUs: number; p50: number; p99: number }[] = [];
      const http: typeof mcp = [];
      for (let round = 0; round < ROUNDS; round++) {
        // alternate which side goes first, so drift in the machine's load falls on both
        if (round % 2 === 0) {
          mcp.push(await run(base, pid, pair.mcp));
          http.push(await run(base, pid, pair.http));
        } else {
          http.push(await run(base, pid, pair.http));
          mcp.push(await run(base, pid, pair.mcp));
        }
      }
      const m = { cpu: median(mcp.map((r) => r.cpuUs)), p50: median(mcp.map((r) => r.p50)), p99: median(mcp.map((r) => r.p99)) };
      const h = { cpu: median(http.map((r) => r.cpuUs)), p50: median(http.map((r) => r.p50)), p99: median(http.map((r) => r.p99)) };
      console.log(
        `${pair.name} | ${m.cpu.toFixed(0)} | ${h.cpu.toFixed(0)} | ${(m.cpu / h.cpu).toFixed(2)} | ${m.p50.toFixed(2)}/${m.p99.toFixed(2)} | ${h.p50.toFixed(2)}/${h.p99.toFixed(2)} | ${(m.p99 / h.p99).toFixed(2)}`,
      );
    }
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
