/**
 * The many-process baseline: a bare `node:cluster` of `bare-server.ts` (BENCH_PROCESSES server
 * processes sharing one listening socket, as `engram serve --processes N` does). The primary
 * answers the driver's calls like bare-server.ts and passes them on to every server process:
 * `listen` (they share the one port), `set` (the response to repeat), `cpu` (the primary's and
 * the server processes' CPU time added up) and `close`.
 */
import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { answerCalls } from './ipc.js';

const count = Number(process.env.BENCH_PROCESSES);
if (!Number.isInteger(count) || count < 1) throw new Error(`BENCH_PROCESSES must be a positive integer, got "${process.env.BENCH_PROCESSES}"`);

cluster.setupPrimary({ exec: fileURLToPath(new URL('./bare-server.ts', import.meta.url)), execArgv: process.execArgv });
const workers: Worker[] = Array.from({ length: count }, () => cluster.fork());

let nextId = 1;
function callWorker<T>(worker: Worker, type: string, payload?: unknown): Promise<T> {
  const id = nextId++;
  return new Promise<T>((resolve, reject) => {
    const onMessage = (message: { id: number; ok: boolean; result?: unknown; error?: string }) => {
      if (message.id !== id) return;
      worker.off('message', onMessage);
      if (message.ok) resolve(message.result as T);
      else reject(new Error(`bare server process ${worker.process.pid}: ${message.error}`));
    };
    worker.on('message', onMessage);
    worker.send({ id, type, payload });
  });
}
const everyWorker = <T>(type: string, payload?: unknown) => Promise.all(workers.map((worker) => callWorker<T>(worker, type, payload)));

answerCalls({
  async listen() {
    // port 0 in every server process of a cluster: the primary picks one port, and all share it
    const ports = await everyWorker<{ port: number }>('listen');
    return { port: ports[0].port, processes: count };
  },
  async set(response: unknown) {
    await everyWorker('set', response);
    return null;
  },
  async cpu() {
    const own = process.cpuUsage();
    const theirs = await everyWorker<NodeJS.CpuUsage>('cpu');
    return theirs.reduce((sum, usage) => ({ user: sum.user + usage.user, system: sum.system + usage.system }), own);
  },
  async close() {
    // bare-server.ts exits once it has answered `close`
    await everyWorker('close').catch(() => undefined);
    return null;
  },
});
