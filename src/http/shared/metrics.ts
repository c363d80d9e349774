import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, Gauge, collectDefaultMetrics } from 'prom-client';
import { eventLoopTurns } from '../../domain/turns.js';
import { queryVectorCounts } from '../../domain/search/embeddings.js';
import type { ChatReport } from '../../domain/chat-report.js';
import type { Store } from '../../storage/store.js';
import type { SqlDriver } from '../../storage/sql/driver.js';
import type { AttemptOutcome } from '../../jobs/attempts.js';
import type { FallbackEvent, ModelCallEvent, ModelCallObserver } from '../../llm/models.js';
import { GroupMetricsError, metricsSource } from './group-metrics.js';

/**
 * Model calls (docs/reasoning.md): tokens in and out, latency and failures per module and model.
 * Made before the app so the models built at start-up report into it; `/metrics` serves it.
 */
export class ModelCallMetrics implements ModelCallObserver {
  readonly registry = new Registry();
  private readonly calls = new Counter({ name: 'engram_model_calls_total', help: 'Model call attempts, by module, model and outcome (ok or the failure reason)', labelNames: ['module', 'model', 'outcome'], registers: [this.registry] });
  private readonly inputTokens = new Counter({ name: 'engram_model_input_tokens_total', help: 'Input tokens of successful model calls, as the provider counted them', labelNames: ['module', 'model'], registers: [this.registry] });
  private readonly outputTokens = new Counter({ name: 'engram_model_output_tokens_total', help: 'Output tokens of successful model calls, as the provider counted them', labelNames: ['module', 'model'], registers: [this.registry] });
  private readonly failures = new Counter({ name: 'engram_model_call_failures_total', help: 'Failed model call attempts, by module, model and reason (rate_limited, server_error, timeout, network, aborted, client_error, bad_response)', labelNames: ['module', 'model', 'reason'], registers: [this.registry] });
  private readonly fallbacks = new Counter({
    name: 'engram_model_fallbacks_total',
    help: 'Model calls passed to the FALLBACK__ model, by module, model, fallback and reason: why the model failed, or resting (sent straight to the fallback after a recent failure)',
    labelNames: ['module', 'model', 'fallback', 'reason'],
    registers: [this.registry],
  });
  private readonly durations = new Histogram({
    name: 'engram_model_call_duration_seconds',
    help: 'Time of successful model calls (a stream: until its last chunk), by module and model',
    labelNames: ['module', 'model'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160],
    registers: [this.registry],
  });

  private readonly chats = new Counter({ name: 'engram_chat_requests_total', help: 'Chats answered, by reasoning level, whether streamed, and outcome (ok, model_error, invalid_answer, aborted, error)', labelNames: ['level', 'stream', 'outcome'], registers: [this.registry] });
  private readonly chatToolCalls = new Counter({ name: 'engram_chat_tool_calls_total', help: 'Tool calls made by chats, by tool and whether they ran (ok) or came back as an error to the model', labelNames: ['tool', 'ok'], registers: [this.registry] });
  private readonly chatTokens = new Counter({ name: 'engram_chat_tokens_total', help: 'Tokens of all model calls of chats, by reasoning level and direction (input, output)', labelNames: ['level', 'direction'], registers: [this.registry] });

  /** What one chat used (docs/reasoning.md, Chat). */
  onChat(report: ChatReport): void {
    this.chats.inc({ level: report.level, stream: String(report.stream), outcome: report.outcome });
    for (const call of report.toolCalls) this.chatToolCalls.inc({ tool: call.name, ok: String(call.ok) });
    this.chatTokens.inc({ level: report.level, direction: 'input' }, report.usage.inputTokens);
    this.chatTokens.inc({ level: report.level, direction: 'output' }, report.usage.outputTokens);
  }

  onFallback(event: FallbackEvent): void {
    this.fallbacks.inc({ module: event.module, model: event.model, fallback: event.fallback, reason: event.reason });
  }

  onModelCall(event: ModelCallEvent): void {
    const labels = { module: event.module, model: event.model };
    if (event.error) {
      this.calls.inc({ ...labels, outcome: event.error.reason });
      this.failures.inc({ ...labels, reason: event.error.reason });
      return;
    }
    this.calls.inc({ ...labels, outcome: 'ok' });
    this.durations.observe(labels, event.durationMs / 1000);
    if (event.usage) {
      this.inputTokens.inc(labels, event.usage.inputTokens);
      this.outputTokens.inc(labels, event.usage.outputTokens);
    }
  }
}

/** Background job attempts of this process's worker, by kind and how each ended. */
export class JobMetrics {
  readonly registry = new Registry();
  private readonly attempts = new Counter({
    name: 'engram_job_attempts_total',
    help: 'Background job attempts, by job kind and outcome (done, skipped, retried, dead, interrupted)',
    labelNames: ['kind', 'outcome'],
    registers: [this.registry],
  });
  private readonly durations = new Histogram({
    name: 'engram_job_duration_seconds',
    help: 'Time of background job attempts that ran, by job kind',
    labelNames: ['kind'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });

  readonly onAttempt = (event: { kind: string; outcome: AttemptOutcome; durationMs: number }): void => {
    this.attempts.inc({ kind: event.kind, outcome: event.outcome });
    if (event.durationMs > 0) this.durations.observe({ kind: event.kind }, event.durationMs / 1000);
  };
}

/**
 * Prometheus metrics at `GET /metrics` (contract §7.8): request counts and latencies per route
 * pattern and status, process metrics, the work queue's depth by job status, job attempts
 * (`jobs`), the writes the database ended to resolve conflicts and SQLite's checkpoints and reads in
 * their threads (the driver's counts). A process of a group answers with the whole group's (group-metrics.ts).
 */
export function mountMetrics(
  app: FastifyInstance,
  store: Store,
  driver: Pick<SqlDriver, 'conflicts' | 'checkpoints' | 'threadReads' | 'preparedStatements'>,
  enabled: boolean,
  modelCalls?: ModelCallMetrics,
  jobs?: JobMetrics,
): void {
  if (!enabled) {
    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
      reply.code(404).header('content-type', 'text/plain; charset=utf-8').send('Metrics are disabled'),
    );
    return;
  }
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'engram_' });
  const requests = new Counter({
    name: 'engram_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const durations = new Histogram({
    name: 'engram_http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by method and route pattern',
    labelNames: ['method', 'route'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  // read from the database every process shares: once per scrape, not added up over a group
  const shared = new Registry();
  new Gauge({
    name: 'engram_queue_jobs',
    help: 'Background jobs in the queue (pending, running) and dead-lettered, by status',
    labelNames: ['status'],
    registers: [shared],
    async collect() {
      this.reset();
      for (const [status, count] of Object.entries(await store.jobs.countByStatus())) this.set({ status }, count);
    },
  });
  new Gauge({
    name: 'engram_queue_open_jobs',
    help: 'Background jobs waiting or running, by job kind and status (pending, running)',
    labelNames: ['kind', 'status'],
    registers: [shared],
    async collect() {
      this.reset();
      for (const { kind, status, count } of await store.jobs.countOpenByKind()) this.set({ kind, status }, count);
    },
  });
  // the message vectors' parts (PostgreSQL, decision 0043); no samples where there are none.
  // Both gauges come from one reading: a scrape collects them side by side and shares it
  let layoutRead: ReturnType<typeof readLayout> | undefined;
  const readLayout = async () => store.vectors.layout?.();
  const layoutOfScrape = () =>
    (layoutRead ??= readLayout().finally(() => {
      layoutRead = undefined;
    }));
  new Gauge({
    name: 'engram_message_vector_parts',
    help: 'Sealed parts of the message vectors, each with an index of its own, by level (PostgreSQL; a search visits every part)',
    labelNames: ['level'],
    registers: [shared],
    async collect() {
      this.reset();
      for (const { level, parts } of (await layoutOfScrape())?.levels ?? []) this.set({ level: String(level) }, parts);
    },
  });
  new Gauge({
    name: 'engram_message_vectors',
    help: 'Message vectors by part: sealed (indexed; as counted when sealed or merged) or open (searched exactly until the next seal; it grows while the upkeep falls behind) (PostgreSQL)',
    labelNames: ['part'],
    registers: [shared],
    async collect() {
      this.reset();
      const layout = await layoutOfScrape();
      if (layout === undefined) return;
      this.set({ part: 'sealed' }, layout.levels.reduce((sum, level) => sum + level.rows, 0));
      this.set({ part: 'open' }, layout.openRows);
    },
  });

  // the driver's counts by outcome: absent where the driver keeps none (undefined)
  const outcomeCounter = (name: string, help: string, counts: () => Readonly<Record<string, number>> | undefined) =>
    new Counter({
      name,
      help,
      labelNames: ['outcome'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [outcome, count] of Object.entries(counts() ?? {})) this.inc({ outcome }, count);
      },
    });
  outcomeCounter(
    'engram_store_conflicts_total',
    'Writes PostgreSQL ended to resolve a deadlock or serialization failure, by outcome: retried (run again) or failed (the request got a 503)',
    () => driver.conflicts,
  );
  outcomeCounter(
    'engram_query_vectors_total',
    "Query vectors the process's searches took, by outcome: kept (the workspace asked the same query before, no model call) or embedded (a model call)",
    () => queryVectorCounts,
  );
  outcomeCounter(
    'engram_postgres_prepared_statements_total',
    'PostgreSQL statements the process prepared by name (named), and those that went stale and run unprepared since (dropped): DATABASE_PREPARED_STATEMENTS',
    () => driver.preparedStatements,
  );

  // searches in turns at the event loop (SQLite, src/domain/turns.ts): how many, and how long
  // they waited behind the others of the process
  new Counter({
    name: 'engram_search_turns_total',
    help: 'Searches that took their turn at the event loop (SQLite; on PostgreSQL searches take none)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(eventLoopTurns.waits.turns);
    },
  });
  new Counter({
    name: 'engram_search_turn_wait_seconds_total',
    help: 'Time searches waited for their turn behind the searches of the process before them (SQLite); over engram_search_turns_total, the mean wait',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(eventLoopTurns.waits.waitedMs / 1000);
    },
  });

  outcomeCounter(
    'engram_sqlite_checkpoints_total',
    "SQLite checkpoints (the WAL copied into the database file) run by the process's checkpoint thread, and the thread's failure (the commits then checkpoint again): SQLITE_CHECKPOINTS",
    () => driver.checkpoints,
  );
  outcomeCounter(
    'engram_sqlite_thread_reads_total',
    "SQLite statements (vector scans) run by the process's read thread, and the thread's failure (the scans then run on the server connection again): SQLITE_VECTOR_SCANS",
    () => driver.threadReads,
  );

  app.addHook('onResponse', (request, reply, done) => {
    // the route pattern, not the URL: ids must not become label values
    const route = request.routeOptions.url ?? 'unmatched';
    requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    durations.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    done();
  });
  const perProcess = [registry, modelCalls?.registry, jobs?.registry].filter((r): r is Registry => r !== undefined);
  const served = metricsSource(perProcess.length === 1 ? registry : Registry.merge(perProcess), shared);
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    try {
      return await reply.header('content-type', served.contentType).send(await served.text());
    } catch (error) {
      if (!(error instanceof GroupMetricsError)) throw error;
      request.log.warn({ error: error.message }, 'metrics of the process group not gathered');
      return reply.code(503).header('content-type', 'text/plain; charset=utf-8').send(`Metrics of the server processes could not be gathered: ${error.message}`);
    }
  });
}

/**
 * The metrics of a standalone `engram worker` (METRICS_ENABLED): its process, its model calls and
 * its job attempts at `GET /metrics` on its own port (HOST, PORT), and `GET /health`. The queue's
 * depth is left to the servers' `/metrics` (read from the database they share: one reading per
 * scrape, not one per process). Resolves once it listens.
 */
export async function serveWorkerMetrics(host: string, port: number, modelCalls: ModelCallMetrics, jobs: JobMetrics): Promise<Server> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'engram_' });
  const merged = Registry.merge([registry, modelCalls.registry, jobs.registry]);
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method === 'GET' && path === '/metrics') {
      merged.metrics().then(
        (text) => response.writeHead(200, { 'content-type': merged.contentType }).end(text),
        (error: Error) => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`Metrics could not be read: ${error.message}`),
      );
      return;
    }
    if (request.method === 'GET' && path === '/health') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    response.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
