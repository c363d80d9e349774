/**
 * One route under load, for the cases that measure a server of their own ("flat with size",
 * "after idle"): warm-up, then a timed run from wrk when it is installed (bench/wrk.ts), else
 * from autocannon in this process, with the server's CPU read before and after through its
 * `cpu` call. run.ts keeps its own driver: it also groups latencies by query class and reads
 * the driver's CPU.
 */
import autocannon from 'autocannon';
import type { ChildServer } from './ipc.js';
import { runWrk, wrkAvailable } from './wrk.js';

export interface LoadRoute {
  /** Requests are POSTs (every hot list route takes its filters in the body). */
  path: string;
  /** Per-request path and body, for routes that must not repeat one request (search). */
  next?: (k: number) => { path: string; body: string };
}

export interface LoadOptions {
  connections: number;
  warmupS: number;
  durationS: number;
}

export interface LoadRun {
  p50: number;
  p99: number;
  rps: number;
  cpuUsPerRequest: number;
  non2xx: number;
  errors: number;
}

/** The nearest-rank percentile `p` (0-100) of ascending `sorted`; NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Latencies in ms, CPU per request in µs of the server's user + system time. */
export async function measureLoad(server: ChildServer, base: string, route: LoadRoute, options: LoadOptions): Promise<LoadRun> {
  return wrkAvailable() ? withWrk(server, base, route, options) : withAutocannon(server, base, route, options);
}

function cpuPerRequest(before: NodeJS.CpuUsage, after: NodeJS.CpuUsage, completed: number): number {
  return completed > 0 ? (after.user - before.user + after.system - before.system) / completed : NaN;
}

async function withAutocannon(server: ChildServer, base: string, route: LoadRoute, options: LoadOptions): Promise<LoadRun> {
  let k = 0;
  const cannon = (duration: number): autocannon.Options => ({
    url: base + route.path,
    method: 'POST',
    connections: options.connections,
    duration,
    timeout: 10,
    ...(route.next === undefined
      ? {}
      : {
          headers: { 'content-type': 'application/json' },
          requests: [{ method: 'POST', setupRequest: (request) => ({ ...request, ...route.next!(k++) }) }],
        }),
  });
  await autocannon(cannon(options.warmupS));
  const latencies: number[] = [];
  const before = await server.call<NodeJS.CpuUsage>('cpu');
  const instance = autocannon(cannon(options.durationS)) as unknown as autocannon.Instance & Promise<autocannon.Result>;
  // autocannon's histogram rounds to whole milliseconds; keep every latency instead
  instance.on('response', (_client, _status, _bytes, responseMs) => latencies.push(responseMs));
  const result = await instance;
  const after = await server.call<NodeJS.CpuUsage>('cpu');
  const sorted = Float64Array.from(latencies).sort();
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    rps: result.requests.total / result.duration,
    cpuUsPerRequest: cpuPerRequest(before, after, result.requests.total),
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

async function withWrk(server: ChildServer, base: string, route: LoadRoute, options: LoadOptions): Promise<LoadRun> {
  const json = { 'content-type': 'application/json' };
  const requests =
    route.next === undefined
      ? [{ method: 'POST', path: route.path }]
      : Array.from({ length: 1_000 }, (_, k) => ({ method: 'POST', headers: json, ...route.next!(k) }));
  await runWrk({ base, requests, connections: options.connections, durationS: options.warmupS });
  const before = await server.call<NodeJS.CpuUsage>('cpu');
  const result = await runWrk({ base, requests, connections: options.connections, durationS: options.durationS });
  const after = await server.call<NodeJS.CpuUsage>('cpu');
  return {
    p50: result.p50Ms,
    p99: result.p99Ms,
    rps: result.requests / result.durationS,
    cpuUsPerRequest: cpuPerRequest(before, after, result.requests),
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}
