import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OUTPUT_KEPT = 4 * 1024 * 1024;

/**
 * How node runs the `engram` command: the server built for this test run (test/support/build-server.ts),
 * or, outside Vitest (`npm run fuzz`), the sources through tsx.
 */
export const ENGRAM = process.env.ENGRAM_TEST_SERVER ? [process.env.ENGRAM_TEST_SERVER] : ['--import', 'tsx', 'src/cli/main.ts'];

export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  /** Everything the process printed so far. */
  output(): string;
  exited: Promise<number | null>;
}

/**
 * Starts `engram serve` from the sources in a child process on an ephemeral port: one server
 * process unless `env` sets WEB_CONCURRENCY or `args` passes `--processes`; `nodeOptions` go
 * to node before the script.
 */
export async function startServerProcess(env: Record<string, string>, args: string[] = [], nodeOptions: string[] = []): Promise<ServerProcess> {
  const port = env.PORT ?? String(await freePort());
  const { child, output, exited } = spawnEngram([...nodeOptions, ...ENGRAM, 'serve', ...args], {
    WEB_CONCURRENCY: '1',
    ...env,
    PORT: port,
  });
  const baseUrl = await new Promise<string>((resolve, reject) => {
    // a server that did not start in time is stopped, so that it does not outlive the test (a
    // process group left serving after such a failure was found running once the suite ended)
    const timer = setTimeout(() => {
      clearInterval(poll);
      child.kill('SIGKILL');
      reject(new Error(`server did not start:\n${output()}`));
    }, 30_000);
    // the listening line when the log level shows it; otherwise /health answering
    const url = `http://127.0.0.1:${port}`;
    let checking = false;
    const done = () => {
      clearInterval(poll);
      clearTimeout(timer);
      resolve(url);
    };
    const poll = setInterval(() => {
      if (/Server listening at http:\/\/127\.0\.0\.1:\d+/.test(output())) return done();
      if (checking) return;
      checking = true;
      fetch(`${url}/health`)
        .then((response) => (response.ok ? done() : undefined))
        .catch(() => undefined)
        .finally(() => (checking = false));
    }, 20);
    void exited.then(() => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`server exited during start-up:\n${output()}`));
    });
  });
  return { child, baseUrl, output, exited };
}

/** Runs the `engram` command from the sources with `env` as its whole environment; resolves when it exits. */
export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...ENGRAM, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts `engram worker` from the sources in a child process (`nodeOptions`: node flags before the command); resolves once it logs that it started. */
export async function startWorkerProcess(
  env: Record<string, string>,
  nodeOptions: string[] = [],
): Promise<{ child: ChildProcess; output(): string; exited: Promise<number | null> }> {
  const started = spawnEngram([...nodeOptions, ...ENGRAM, 'worker'], env);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker did not start:\n${started.output()}`)), 30_000);
    const poll = setInterval(() => {
      if (!started.output().includes('"msg":"worker started"')) return;
      clearInterval(poll);
      clearTimeout(timer);
      resolve();
    }, 20);
    void started.exited.then(() => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`worker exited during start-up:\n${started.output()}`));
    });
  });
  return started;
}

/** Runs node with `argv` in the project with `env` over this environment (log level info), keeping its latest output. */
function spawnEngram(argv: string[], env: Record<string, string>): { child: ChildProcess; output(): string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, argv, { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  // the most recent output only, so a long run's request log does not fill the memory
  const keep = (chunk: Buffer) => {
    text += chunk;
    if (text.length > OUTPUT_KEPT) text = text.slice(-OUTPUT_KEPT / 2);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => text, exited };
}

/**
 * Whether process `pid` runs (EPERM: it does, another user's). A process that has exited but not
 * been reaped yet (a zombie: its parent died first and init reaps orphans when it gets to them,
 * once a second on some machines) has stopped running, so it counts as gone.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

/** Whether `pid` is a zombie, from /proc (false where there is no /proc). */
function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // "pid (command) state ...": the command may hold spaces and parentheses, so read after the last ')'
  return stat[stat.lastIndexOf(')') + 2] === 'Z';
}
