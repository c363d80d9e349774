import cluster from 'node:cluster';
import { ConfigError, loadConfig, type Config } from '../config/config.js';
import { buildApp } from '../http/app.js';
import { describeReasoning } from '../llm/models.js';
import { serveHandedConnections } from '../server/connection-hand-off.js';
import { databaseOptions, openDatabase } from './database.js';
import { checkVectorDimensions, createWorker } from './runtime.js';

/** Starts the server: read config, open and migrate the store, listen, stop cleanly on signals. */
export async function serve(config: Config): Promise<void> {
  const database = await openDatabase(config.databaseUrl, databaseOptions(config));
  await checkVectorDimensions(config, database);
  // the workers are made below (they log through the app); /ready asks them only once listening
  const { app, models, jobMetrics, flushLog, closeLog, flushUsage } = await buildApp({ config, database, workers: () => worker?.status() });
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
      // the model calls of the jobs the worker finished after the app closed
      await flushUsage();
      await database.driver.close();
      app.log.info('stopped');
      await closeLog();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'error during shutdown');
      await closeLog();
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
