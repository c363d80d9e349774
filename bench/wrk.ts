/**
 * Load from wrk (Debian's `wrk` package), when it is installed: a C load generator that costs
 * a few µs of CPU per request where autocannon, in this Node.js process, costs 15 to 20. On a
 * 2-core machine the load generator shares the cores with the servers it measures, so a lighter
 * one leaves more of them to the servers (bench/README.md, "Load generator").
 *
 * Requests that differ per request (search queries) are written into the Lua script as a table
 * that each wrk thread cycles through. Latency percentiles come from wrk's own histogram (µs
 * resolution); the driver's CPU is wrk's, read from its shell's /proc entry after wrk exits.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseProcessStat } from './process-stat.js';

export interface WrkRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface WrkResult {
  requests: number;
  durationS: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses with a status other than 2xx or 3xx. */
  non2xx: number;
  /** Connect, read and write errors. */
  errors: number;
  timeouts: number;
  /** wrk's CPU (user + system), µs. */
  cpuUs: number;
}

/** Whether `wrk` is on the PATH (BENCH_LOAD=autocannon turns it off). */
export function wrkAvailable(): boolean {
  if (process.env.BENCH_LOAD === 'autocannon') return false;
  const found = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  return found.error === undefined && `${found.stdout}${found.stderr}`.includes('wrk');
}

/**
 * A Lua string literal holding `text`'s UTF-8 bytes: printable ASCII as is (quote and backslash
 * escaped), every other byte as a decimal escape `\ddd`, the one form LuaJIT (Lua 5.1) reads
 * for any byte; three digits always, so a digit that follows is not read as part of it.
 */
function lua(text: string): string {
  let literal = '"';
  for (const byte of Buffer.from(text, 'utf8')) {
    if (byte === 0x22 || byte === 0x5c) literal += `\\${String.fromCharCode(byte)}`;
    else if (byte >= 0x20 && byte < 0x7f) literal += String.fromCharCode(byte);
    else literal += `\\${String(byte).padStart(3, '0')}`;
  }
  return `${literal}"`;
}

function script(requests: readonly WrkRequest[]): string {
  const entries = requests.map((r) => {
    const headers = Object.entries(r.headers ?? {})
      .map(([name, value]) => `[${lua(name)}] = ${lua(value)}`)
      .join(', ');
    return `  { ${lua(r.method)}, ${lua(r.path)}, { ${headers} }, ${r.body === undefined ? 'nil' : lua(r.body)} },`;
  });
  return [
    'local specs = {',
    ...entries,
    '}',
    'local requests = {}',
    'local k = 0',
    // each thread starts at another place in the table, so threads do not repeat each other
    'function setup(thread) thread:set("offset", math.random(0, #specs - 1)) end',
    // formatted in init, once wrk has set the Host header from the URL
    'function init(args)',
    '  k = tonumber(offset or 0)',
    '  for i, s in ipairs(specs) do requests[i] = wrk.format(s[1], s[2], s[3], s[4]) end',
    'end',
    'function request() k = k + 1; return requests[(k % #requests) + 1] end',
    'function done(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format("WRK_RESULT {\\"requests\\":%d,\\"duration_us\\":%d,\\"p50_us\\":%d,\\"p99_us\\":%d,\\"status\\":%d,\\"errors\\":%d,\\"timeouts\\":%d}\\n",',
    '    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.status, e.connect + e.read + e.write, e.timeout))',
    'end',
    '',
  ].join('\n');
}

/**
 * Runs wrk against `base` for `durationS` with `connections`, cycling over `requests` (one or
 * many), and returns its counts, percentiles and CPU.
 */
export async function runWrk(options: {
  base: string;
  requests: readonly WrkRequest[];
  connections: number;
  durationS: number;
  threads?: number;
  timeoutS?: number;
}): Promise<WrkResult> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-wrk-'));
  try {
    const file = join(dir, 'requests.lua');
    writeFileSync(file, script(options.requests));
    const threads = Math.max(1, Math.min(options.threads ?? 1, options.connections));
    const args = [
      `-t${threads}`,
      `-c${options.connections}`,
      `-d${Math.max(1, Math.round(options.durationS))}s`,
      `--timeout`,
      `${options.timeoutS ?? 10}s`,
      '-s',
      file,
      options.base,
    ];
    // the shell waits for wrk, then prints its own /proc entry, whose cutime and cstime are wrk's
    const shell = spawn('sh', ['-c', 'wrk "$@"; code=$?; cat /proc/$$/stat; exit $code', 'sh', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    shell.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    shell.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => shell.on('close', resolve));
    const line = out.split('\n').find((l) => l.startsWith('WRK_RESULT '));
    if (code !== 0 || line === undefined) throw new Error(`wrk failed (exit ${code}): ${err || out}`);
    const r = JSON.parse(line.slice('WRK_RESULT '.length)) as Record<string, number>;
    const statLine = out.trim().split('\n').at(-1) ?? '';
    // the shell's waited-for children: wrk
    const { childrenUser, childrenSystem } = parseProcessStat(statLine);
    const seconds = childrenUser + childrenSystem;
    return {
      requests: r.requests,
      durationS: r.duration_us / 1e6,
      p50Ms: r.p50_us / 1000,
      p99Ms: r.p99_us / 1000,
      non2xx: r.status,
      errors: r.errors,
      timeouts: r.timeouts,
      cpuUs: Number.isFinite(seconds) ? seconds * 1e6 : NaN,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
