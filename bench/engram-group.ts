/**
 * Engram as `engram serve --processes N` (the CLI from the sources: a node:cluster primary and N
 * server processes on one port), for the many-process columns. It answers the driver's `cpu`
 * call like the other benchmark children, from /proc: the user and system time of the primary
 * and of every process below it, added up (Linux; 10 ms ticks, so only long runs are precise).
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ChildServer } from './ipc.js';
import { readProcessStat } from './process-stat.js';

const ROOT_DIR = fileURLToPath(new URL('..', import.meta.url));

export function childrenOf(pid: number): number[] {
  const children: number[] = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (text !== '') children.push(...text.split(/\s+/).map(Number));
    }
  } catch {
    // the process is gone
  }
  return children;
}

/** CPU time of `pid` and all its descendants (µs), from /proc. */
export function treeCpu(pid: number): NodeJS.CpuUsage & { processes: number } {
  const usage = { user: 0, system: 0, processes: 0 };
  const visit = (p: number) => {
    const stat = readProcessStat(p);
    if (stat === undefined) return;
    usage.user += stat.user * 1e6;
    usage.system += stat.system * 1e6;
    usage.processes++;
    for (const child of childrenOf(p)) visit(child);
  };
  visit(pid);
  return usage;
}

/**
 * Starts `engram serve --processes <processes>` on `port` over `databaseUrl` (request logs and
 * background workers off, as in the one-process Engram of the other columns) and resolves once
 * it answers /health and its server processes have had a moment to start.
 */
export async function startEngramGroup(options: {
  cwd: string;
  databaseUrl: string;
  port: number;
  processes: number;
  env?: Record<string, string>;
  /** Run the built server (`dist/`, as `npm start` does) instead of the sources through tsx. */
  compiled?: boolean;
  /** Node options of the started process (e.g. the V8 flags `npm start` passes). */
  nodeOptions?: readonly string[];
  /** Receives the process's output; without it the output goes to this process's. */
  onOutput?: (text: string) => void;
}): Promise<ChildServer> {
  const entry = options.compiled === true ? ['dist/cli/main.js'] : ['--import', 'tsx', 'src/cli/main.ts'];
  const child = spawn(process.execPath, [...(options.nodeOptions ?? []), ...entry, 'serve', '--processes', String(options.processes)], {
    cwd: options.cwd,
    env: {
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      PORT: String(options.port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RUN_WORKERS: 'false',
      ...options.env,
    },
    stdio: ['ignore', options.onOutput === undefined ? 'inherit' : 'pipe', options.onOutput === undefined ? 'inherit' : 'pipe'],
  });
  if (options.onOutput !== undefined) {
    child.stdout!.setEncoding('utf8').on('data', options.onOutput);
    child.stderr!.setEncoding('utf8').on('data', options.onOutput);
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const isRunning = () => child.exitCode === null && child.signalCode === null;
  const base = `http://127.0.0.1:${options.port}`;
  const until = Date.now() + 60_000;
  for (;;) {
    if (!isRunning()) throw new Error(`engram serve --processes ${options.processes} exited during start-up`);
    const ok = await fetch(`${base}/health`).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > until) throw new Error(`engram serve --processes ${options.processes} did not answer /health within 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // the first process answers; give its siblings (started at the same time) a moment more
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const waitExit = (ms: number) =>
    Promise.race([exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())]);
  return {
    name: `engram serve --processes ${options.processes}`,
    process: child,
    async call<T>(type: string): Promise<T> {
      if (type !== 'cpu') throw new Error(`engram group: unknown call "${type}"`);
      return treeCpu(child.pid!) as T;
    },
    async stop() {
      if (!isRunning()) return;
      child.kill('SIGTERM');
      if (await waitExit(15_000)) return;
      child.kill('SIGKILL');
      await waitExit(2_000);
    },
  };
}

/**
 * A workspace of `peers` peers (`peer-000000` ...), written through a server's HTTP API: the store
 * the cases that start servers of their own measure peers/list on.
 */
export async function storePeers(base: string, workspace: string, peers: number): Promise<void> {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (response.status !== 200 && response.status !== 201) throw new Error(`POST ${path} answered ${response.status}: ${await response.text()}`);
  };
  await post('/v3/workspaces', { id: workspace });
  for (let i = 0; i < peers; i++) await post(`/v3/workspaces/${workspace}/peers`, { id: `peer-${String(i).padStart(6, '0')}` });
}

/** Resident memory of one process, from /proc (bytes). */
export interface ProcessMemory {
  rss: number;
  /** Anonymous pages: the heap, SQLite's page cache, everything private to the process. */
  rssAnon: number;
  /** Pages of mapped files: node's own binary and libraries, and the memory-mapped database file. */
  rssFile: number;
  /**
   * Of rssFile, the pages of the database file (`databaseFile`'s mappings in /proc/<pid>/smaps):
   * the kernel's page cache, shared with every process on the file; NaN when not asked for.
   */
  rssDatabase: number;
  /** Peak RSS of the process's life. */
  maxRss: number;
}

export function processMemory(pid: number, databaseFile?: string): ProcessMemory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), rssAnon: kb('RssAnon'), rssFile: kb('RssFile'), rssDatabase: mappedBytes(pid, databaseFile), maxRss: kb('VmHWM') };
}

/** Resident bytes of the mappings of `file` in the process (NaN without a file). */
function mappedBytes(pid: number, file: string | undefined): number {
  if (file === undefined) return NaN;
  let bytes = 0;
  let inFile = false;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    // a mapping's header: address range, permissions, offset, device, inode, path
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (header !== null) inFile = header[1] === file;
    else if (inFile && line.startsWith('Rss:')) bytes += Number(/(\d+) kB/.exec(line)?.[1] ?? 0) * 1024;
  }
  return bytes;
}

/** Builds the server, as `npm start` does before it starts (for the cases that run `dist/`). */
export function buildServer(): void {
  const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT_DIR, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed: ${build.stderr || build.stdout}`);
}

