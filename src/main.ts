import { buildApp, openDatabase, type Database } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { buildCatalog } from './jobs/catalog.js';
import { Worker, type WorkerLogger } from './jobs/worker.js';

/** The background worker for this configuration. */
export function createWorker(config: Config, database: Database, logger: WorkerLogger): Worker {
  const catalog = buildCatalog({
    secret: config.webhookSecret,
    timeoutMs: config.webhookTimeoutMs,
    allowPrivate: config.webhookAllowPrivateUrls,
  });
  return new Worker(database.store, catalog, {
    concurrency: config.workerConcurrency,
    pollMs: config.workerPollMs,
    retryBaseMs: config.jobRetryBaseMs,
    retryMaxMs: config.jobRetryMaxMs,
    logger,
  });
}

/** Starts the server: read config, open and migrate the store, listen, stop cleanly on signals. */
export async function serve(config: Config): Promise<void> {
  const database = await openDatabase(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous, connectTimeoutMs: config.databaseConnectTimeoutMs });
  // the workers are made below (they log through the app); /ready asks them only once listening
  const { app } = await buildApp({ config, database, workers: () => worker?.status() });
  for (const step of database.migrations.filter((s) => s.applied)) app.log.info({ migration: step.name }, 'migration applied');
  const worker = config.runWorkers ? createWorker(config, database, app.log) : undefined;

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const timer = setTimeout(() => {
      app.log.error('shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    // Connections busy when the stop began stay open in keep-alive after their last response;
    // close each as soon as it turns idle so the stop does not wait for the keep-alive timeout.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
    try {
      await Promise.all([app.close(), worker?.stop(config.shutdownTimeoutMs / 2)]);
      clearInterval(sweep);
      await database.driver.close();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  await app.listen({ port: config.port, host: config.host });
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
