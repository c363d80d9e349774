import cluster, { type Worker as ClusterWorker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import pino, { type Logger } from 'pino';
import { databaseOptions, openDatabase } from '../runtime/database.js';
import { isPostgresUrl, type Config } from '../config/config.js';
import { ConnectionBalancer, isReady } from './connection-hand-off.js';
import { answerGroupMetrics } from '../http/shared/group-metrics.js';
import { checkVectorDimensions } from '../runtime/runtime.js';
import { serverExecArgv } from './server-flags.js';

/** Thrown when the requested number of processes cannot run on this database. */
export class ProcessCountError extends Error {}

/** Whether a SQLite location is private to one connection (so to one process). */
export function isInMemorySqlite(databaseUrl: string): boolean {
  if (isPostgresUrl(databaseUrl)) return false;
  return databaseUrl === ':memory:' || databaseUrl === '' || (databaseUrl.startsWith('file:') && /(^file::memory:|[?&]mode=memory\b)/.test(databaseUrl));
}

/**
 * How many server processes `engram serve` runs: `--processes`, else WEB_CONCURRENCY, else one
 * per core. An in-memory SQLite database lives in one process only: asked for more than one
 * explicitly, start-up stops (ProcessCountError); by default it runs one, and `note` says so.
 */
export function processCount(config: Config, flag: number | undefined): { count: number; note?: string } {
  const explicit = flag ?? config.processes;
  if (isInMemorySqlite(config.databaseUrl)) {
    if (explicit !== undefined && explicit > 1) {
      throw new ProcessCountError(
        `an in-memory SQLite database (DATABASE_URL=${config.databaseUrl}) cannot be shared by ${explicit} processes; ` +
          'use a SQLite file or PostgreSQL, or run one process (--processes 1 / WEB_CONCURRENCY=1)',
      );
    }
    return { count: 1, note: explicit === undefined ? 'in-memory SQLite database: one server process (it cannot be shared between processes)' : undefined };
  }
  return { count: explicit ?? availableParallelism() };
}

/** Restarts of one slot closer together than this count as a crash loop and are slowed down. */
const QUICK_CRASH_MS = 10_000;
const MAX_RESTART_DELAY_MS = 5_000;
/** Also lets a stop signal that reached the whole group (Ctrl-C) arrive before a restart. */
const MIN_RESTART_DELAY_MS = 50;

/**
 * The primary of `engram serve --processes N`: migrates the database once, listens on the port
 * (a port in use stops the start there), then forks N server processes (node:cluster, node's
 * options plus the server's V8 flags), each with its own database connection and background
 * workers, and hands each connection to the ready process with the fewest open
 * (connection-hand-off.ts; connections that come before any is ready wait for the first). A
 * process that exits after it was ready is replaced (its claimed jobs are taken over by any
 * process once their leases run out); one that fails before stops the group, since its siblings
 * would fail alike. SIGTERM or SIGINT stops every process gracefully; the primary exits once all
 * have, non-zero if any failed.
 */
export async function serveProcessGroup(config: Config, count: number, logger: Logger = pino({ level: config.logLevel })): Promise<void> {
  // migrations and the vector size check run here, once, before any server process opens the file
  const database = await openDatabase(config.databaseUrl, databaseOptions(config));
  await checkVectorDimensions(config, database);
  for (const step of database.migrations.filter((s) => s.applied)) logger.info({ migration: step.name }, 'migration applied');
  await database.driver.close();

  // the port is taken before any process starts: a port in use stops the start at once
  const balancer = new ConnectionBalancer((error) => logger.warn({ err: error.message }, 'a connection could not be accepted'));
  let port: number;
  try {
    ({ port } = await balancer.listen(config.port, config.host));
  } catch (error) {
    logger.error({ port: config.port, host: config.host, err: (error as Error).message }, 'cannot listen on the port');
    throw error;
  }

  const restarts = new Map<number, { at: number; delayMs: number }>();
  let stopping = false;
  let failed = false;
  let announced = false;

  const fork = (slot: number) => {
    const worker = cluster.fork();
    logger.info({ slot, workerPid: worker.process.pid }, 'server process started');
    // a message to a process that died before its exit was seen fails (EPIPE): not the primary's end
    worker.on('error', (error: Error) => logger.warn({ slot, workerPid: worker.process.pid, err: error.message }, 'a message to a server process was not delivered'));
    worker.on('message', (message: unknown) => {
      if (!isReady(message) || stopping || balancer.has(worker)) return;
      balancer.add(worker);
      if (!announced && balancer.ready.length === count) {
        announced = true;
        logger.info({ processes: count, port, connections: 'to the process with the fewest open' }, 'all server processes listening');
      }
    });
    worker.on('exit', (code, signal) => {
      const wasListening = balancer.has(worker);
      balancer.remove(worker);
      if (stopping) {
        // a process still starting when the stop came dies of the SIGTERM sent to it: a stop, not a failure
        if (code !== 0 && signal !== 'SIGTERM') failed = true;
        if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0);
        return;
      }
      if (!wasListening) {
        logger.error({ slot, workerPid: worker.process.pid, code, signal }, 'server process failed to start; stopping the group');
        failed = true;
        void stop('start-up failure');
        return;
      }
      // a crash loop is slowed down: each restart within QUICK_CRASH_MS of the last doubles the wait
      const now = Date.now();
      const last = restarts.get(slot);
      const delayMs = last !== undefined && now - last.at < QUICK_CRASH_MS ? Math.min(MAX_RESTART_DELAY_MS, last.delayMs * 2) : MIN_RESTART_DELAY_MS;
      restarts.set(slot, { at: now + delayMs, delayMs });
      logger.warn({ slot, workerPid: worker.process.pid, code, signal, restartInMs: delayMs }, 'server process exited; starting another');
      setTimeout(() => {
        if (!stopping) fork(slot);
      }, delayMs);
    });
  };

  const stop = async (reason: string) => {
    if (stopping) return;
    stopping = true;
    balancer.close();
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is ClusterWorker => w !== undefined);
    logger.info({ reason, processes: workers.length }, 'stopping every server process');
    if (workers.length === 0) process.exit(failed ? 1 : 0);
    // each process finishes its requests in flight within SHUTDOWN_TIMEOUT_MS, then exits itself
    for (const worker of workers) worker.process.kill('SIGTERM');
    setTimeout(() => {
      logger.error('server processes did not stop in time; killing them');
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
      process.exit(1);
    }, config.shutdownTimeoutMs + 5_000).unref();
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  answerGroupMetrics(() => balancer.ready);
  cluster.setupPrimary({ execArgv: serverExecArgv(process.execArgv) });
  for (let slot = 0; slot < count; slot++) fork(slot);
}
