import cluster from 'node:cluster';
import { buildApp, databaseOptions, domainLimits, openDatabase, reasoningRuntime, type Database } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { serveHandedConnections } from './connection-hand-off.js';
import { buildCatalog } from './jobs/catalog.js';
import { Worker, type WorkerLogger, type WorkerOptions } from './jobs/worker.js';
import { createDomainContext } from './domain/context.js';
import { reasoningHandlers } from './jobs/reasoning-jobs.js';
import { scopeHandlers } from './jobs/scope-jobs.js';
import { buildModels, describeReasoning, logFailedModelCalls } from './llm/models.js';
import type { Models } from './llm/provider.js';

/**
 * The background worker for this configuration: webhook deliveries and purges, plus the
 * deriver's and summarizer's jobs when a model is configured (`models`: those of the app in the
 * same process, so their limits on concurrent calls are shared; `onAttempt`: the app's job metrics).
 */
export function createWorker(config: Config, database: Database, logger: WorkerLogger, models?: Models, onAttempt?: WorkerOptions['onAttempt']): Worker {
  const reasoning = reasoningRuntime(config, models ?? buildModels(config.models, logFailedModelCalls(logger)));
  // model output the deriver and dreams did not take (untrusted input), with the reasons
  if (reasoning !== undefined) reasoning.onIgnoredOutput = (report) => logger.warn(report, 'model output ignored');
  // With model work beside them, deliveries take at most half of the process's runs, as each
  // reasoning kind does: a backlog of deliveries to slow receivers (side by side with
  // WEBHOOK_ORDERED=false, or to many endpoints) would otherwise take every free run as it came
  // (their lane is claimed first) and hold the deriver back for as long as the backlog lasted.
  const share = { concurrency: Math.max(1, Math.ceil(config.workerConcurrency / 2)) };
  const catalog = buildCatalog(
    { secret: config.webhookSecret, timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivateUrls, inOrder: config.webhookOrdered },
    reasoning === undefined ? undefined : share,
  );
  const ctx = createDomainContext(database.store, domainLimits(config), undefined, reasoning);
  Object.assign(catalog, scopeHandlers(ctx));
  if (reasoning !== undefined) Object.assign(catalog, reasoningHandlers(ctx, share));
  return new Worker(database.store, catalog, {
    concurrency: config.workerConcurrency,
    pollMs: config.workerPollMs,
    retryBaseMs: config.jobRetryBaseMs,
    retryMaxMs: config.jobRetryMaxMs,
    keepDeadMs: config.jobDeadRetentionDays * 86_400_000,
    logger,
    onAttempt,
  });
}

/**
 * Refuses to start when EMBEDDING_VECTOR_DIMENSIONS differs from the size the stored vectors
 * were fixed at (VectorSizeError names the setting and `engram reembed`); closes the database
 * before throwing. Without the setting the size is learnt from the model's first answer, and a
 * vector of another size is refused when it is stored.
 */
export async function checkVectorDimensions(config: Config, database: Database): Promise<void> {
  const configured = config.models.embedding.configured ? config.models.embedding.dimensions : undefined;
  if (configured === undefined) return;
  try {
    await database.store.vectors.checkDimensions(configured);
  } catch (error) {
    await database.driver.close().catch(() => undefined);
    throw error;
  }
}

/** Starts the server: read config, open and migrate the store, listen, stop cleanly on signals. */
export async function serve(config: Config): Promise<void> {
  const database = await openDatabase(config.databaseUrl, databaseOptions(config));
  await checkVectorDimensions(config, database);
  // the workers are made below (they log through the app); /ready asks them only once listening
  const { app, models, jobMetrics, flushLog } = await buildApp({ config, database, workers: () => worker?.status() });
  for (const step of database.migrations.filter((s) => s.applied)) app.log.info({ migration: step.name }, 'migration applied');
  app.log.info(describeReasoning(config.models));
  for (const notice of config.settingNotices) app.log.warn(notice);
  const worker = config.runWorkers ? createWorker(config, database, app.log, models, jobMetrics.onAttempt) : undefined;

  let stopping = false;
  /** A process group's server process: the connections the primary handed it. */
  let handed: { drained(): Promise<void> } | undefined;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const timer = setTimeout(() => {
      app.log.error('shutdown timed out; exiting');
      flushLog();
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    // Connections busy when the stop began stay open in keep-alive after their last response;
    // close each as soon as it turns idle so the stop does not wait for the keep-alive timeout.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
    try {
      // in a process group the connections were handed over by the primary: the server's close() does not wait for them
      await Promise.all([app.close().then(() => handed?.drained()), worker?.stop(config.shutdownTimeoutMs / 2)]);
      clearInterval(sweep);
      await database.driver.close();
      app.log.info('stopped');
      flushLog();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'error during shutdown');
      flushLog();
      process.exit(1);
    }
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  if (cluster.isWorker) {
    // one of a process group: the primary listens on the port and hands the connections over
    await app.ready();
    handed = await serveHandedConnections(app.server);
    app.log.info({ port: config.port }, 'server process ready for connections from the primary');
  } else {
    await app.listen({ port: config.port, host: config.host });
  }
  worker?.start();
}

export function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`engram: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
}

// Run directly (`node dist/main.js`): serve.
if (import.meta.url === `file://${process.argv[1]}`) {
  serve(configOrExit()).catch((error: unknown) => {
    console.error('engram: failed to start:', error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
