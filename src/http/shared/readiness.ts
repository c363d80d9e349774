import type { FastifyInstance, FastifyReply } from 'fastify';
import { StoreUnavailableError, type Store } from '../../storage/store.js';
import { UNAVAILABLE_HEADERS } from './route.js';

/** What the background workers of this process are doing, for the readiness report. */
export interface WorkerStatus {
  /** running: claiming jobs; paused: waiting for the store to come back; stopped: shut down. */
  state: 'running' | 'paused' | 'stopped';
  /** Since when the workers are paused (ISO time), when they are. */
  since?: string;
}

interface Check {
  ok: boolean;
  [detail: string]: unknown;
}

/** Longest the database check may take before it counts as down. */
const CHECK_TIMEOUT_MS = 2000;

async function checkDatabase(store: Store): Promise<Check> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new StoreUnavailableError(`The database did not answer within ${CHECK_TIMEOUT_MS} ms`, 'timeout')), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([store.checkAvailable(), timeout]);
    return { ok: true, dialect: store.dialect, ms: Number((performance.now() - started).toFixed(2)) };
  } catch (error) {
    // anything else (a bug, an unknown driver error) also means this instance cannot serve
    const message = error instanceof StoreUnavailableError ? error.message : 'The database check failed';
    const reason = error instanceof StoreUnavailableError ? error.reason : undefined;
    return { ok: false, dialect: store.dialect, error: message, ...(reason !== undefined ? { reason } : {}) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `GET /ready` (and `/readyz`): whether this instance can serve requests now, for load
 * balancers and orchestrators. It checks that the store answers and commits a write, and that
 * the workers run when this process has them; 200 `{"status":"ready"}` or 503 naming the part
 * that is down. `GET /health` stays a liveness answer that never touches the store.
 */
export function mountReadiness(app: FastifyInstance, store: Store, workers: () => WorkerStatus | undefined): void {
  const handler = async (_request: unknown, reply: FastifyReply) => {
    const checks: Record<string, Check> = { database: await checkDatabase(store) };
    const status = workers();
    if (status !== undefined) checks.workers = { ok: status.state === 'running', ...status };
    const isReady = Object.values(checks).every((check) => check.ok);
    if (!isReady) reply.headers(UNAVAILABLE_HEADERS);
    return reply
      .code(isReady ? 200 : 503)
      .header('cache-control', 'no-store')
      .header('content-type', 'application/json')
      .send(JSON.stringify({ status: isReady ? 'ready' : 'unavailable', checks }));
  };
  app.get('/ready', { schema: { hide: true } }, handler);
  app.get('/readyz', { schema: { hide: true } }, handler);
}
