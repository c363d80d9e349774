/**
 * Request/reply over the `child_process.fork` IPC channel, so the benchmark's servers run in
 * their own processes (their own event loop and core) while the parent drives autocannon.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';

/** `--cpu-prof` for a server process when BENCH_CPU_PROF names a directory (as for the main cases). */
export function profileArgs(): string[] {
  const dir = process.env.BENCH_CPU_PROF;
  if (!dir) return [];
  mkdirSync(resolve(dir), { recursive: true });
  return ['--cpu-prof', `--cpu-prof-dir=${resolve(dir)}`];
}

interface CallMessage {
  id: number;
  type: string;
  payload: unknown;
}

interface ReplyMessage {
  id: number;
  ok: boolean;
  result?: unknown;
  error?: string;
}

export interface ChildServer {
  readonly name: string;
  readonly process: ChildProcess;
  /** Sends `type` to the child and resolves with its handler's result. */
  call<T>(type: string, payload?: unknown, timeoutMs?: number): Promise<T>;
  /** Asks the child to close (handler `close`), then kills it if it lingers. Never throws. */
  stop(): Promise<void>;
}

export function forkServer(
  name: string,
  script: string,
  options: { cwd: string; execArgv: string[]; env?: Record<string, string> },
): ChildServer {
  const child = fork(script, [], {
    cwd: options.cwd,
    execArgv: options.execArgv,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let nextId = 1;
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      for (const { reject } of pending.values()) reject(new Error(`${name} exited (code ${code}, signal ${signal})`));
      pending.clear();
      resolve();
    });
  });
  child.on('error', (error) => {
    for (const { reject } of pending.values()) reject(error);
    pending.clear();
  });
  child.on('message', (raw) => {
    const message = raw as ReplyMessage;
    const waiter = pending.get(message.id);
    if (waiter === undefined) return;
    pending.delete(message.id);
    if (message.ok) waiter.resolve(message.result);
    else waiter.reject(new Error(`${name}: ${message.error}`));
  });
  const isRunning = () => child.exitCode === null && child.signalCode === null;

  const call = <T>(type: string, payload?: unknown, timeoutMs = 600_000): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (!isRunning() || !child.connected) return reject(new Error(`${name} is not running`));
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${name}: no answer to "${type}" within ${timeoutMs} ms`));
      }, timeoutMs);
      pending.set(id, {
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value as T);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      child.send({ id, type, payload } satisfies CallMessage);
    });

  const waitExit = (ms: number) =>
    Promise.race([exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())]);

  return {
    name,
    process: child,
    call,
    async stop() {
      if (!isRunning()) return;
      try {
        await call('close', undefined, 60_000);
      } catch {
        // fall through to the kill below
      }
      if (await waitExit(5_000)) return;
      child.kill('SIGTERM');
      if (await waitExit(2_000)) return;
      child.kill('SIGKILL');
      await waitExit(2_000);
    },
  };
}

/**
 * Child side: answers the parent's calls with `handlers[type]`. The `close` handler should
 * release resources; the process exits once its reply is delivered. Losing the parent
 * (IPC disconnect) exits too, so no server outlives a crashed benchmark.
 */
export function answerCalls(handlers: Record<string, (payload: any) => unknown>): void {
  if (process.send === undefined) throw new Error('this script is meant to be started by bench/run.ts (fork with IPC)');
  const send = (message: ReplyMessage, then?: () => void) => process.send!(message, undefined, {}, () => then?.());
  process.on('disconnect', () => process.exit(1));
  process.on('message', async (raw) => {
    const message = raw as CallMessage;
    const handler = handlers[message.type];
    const exitAfter = message.type === 'close';
    try {
      if (handler === undefined) throw new Error(`unknown call "${message.type}"`);
      const result = await handler(message.payload);
      send({ id: message.id, ok: true, result }, exitAfter ? () => process.exit(0) : undefined);
    } catch (error) {
      const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
      send({ id: message.id, ok: false, error: text }, exitAfter ? () => process.exit(1) : undefined);
    }
  });
}
