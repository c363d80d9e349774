import { databaseOptions, openDatabase } from '../runtime/database.js';
import { deriveStoredMessages } from '../domain/scheduling/queue-reasoning.js';
import { mintToken } from '../http/shared/auth.js';
import { checkVectorDimensions, composeRuntime, createWorker, modelUsageRecorder } from '../runtime/runtime.js';
import { configOrExit, serve } from '../runtime/serve.js';
import { isPostgresUrl, type Config } from '../config/config.js';
import { buildModels, describeReasoning, logFailedModelCalls, observeModelCalls } from '../llm/models.js';
import { JobMetrics, ModelCallMetrics, serveWorkerMetrics } from '../http/shared/metrics.js';
import { BackupRefused, backupSqlite } from './commands/backup.js';
import { reembed } from './commands/reembed.js';
import { runMcp } from './commands/mcp.js';
import { runExport, runImport } from './commands/portability.js';
import { evalOptions } from './commands/eval-options.js';
import cluster from 'node:cluster';
import pino from 'pino';
import { ProcessCountError, processCount, serveProcessGroup } from '../server/process-group.js';
import { serverExecArgv } from '../server/server-flags.js';

/** `engram worker`: the queue's workers alone, stopped cleanly on SIGTERM/SIGINT. */
async function runWorker(config: Config): Promise<void> {
  const logger = pino({ level: config.logLevel });
  const database = await openDatabase(config.databaseUrl, databaseOptions(config));
  await checkVectorDimensions(config, database);
  // with METRICS_ENABLED, its model calls and job attempts are served on its own port
  const metrics = config.metricsEnabled ? { modelCalls: new ModelCallMetrics(), jobs: new JobMetrics() } : undefined;
  const usage = modelUsageRecorder(database, logger);
  const models = buildModels(config.models, observeModelCalls([metrics?.modelCalls, logFailedModelCalls(logger), usage]));
  const worker = createWorker(config, database, logger, models, metrics?.jobs.onAttempt);
  const server = metrics === undefined ? undefined : await serveWorkerMetrics(config.host, config.port, metrics.modelCalls, metrics.jobs);
  const stop = async (signal: string) => {
    logger.info({ signal }, 'worker stopping: finishing or releasing claimed jobs');
    server?.close();
    await worker.stop(config.shutdownTimeoutMs);
    await usage.flush();
    await database.driver.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
  worker.start();
  logger.info(server === undefined ? {} : { metrics: `http://${config.host}:${config.port}/metrics` }, 'worker started');
  logger.info(describeReasoning(config.models));
  for (const notice of config.settingNotices) logger.warn(notice);
}

/**
 * `engram derive`: queues representation work for stored messages that have none (written while
 * no model was configured); a running server or worker then processes it. Exit 2 without a model.
 */
async function runDerive(config: Config, scope: { workspaceId?: string; sessionId?: string }): Promise<number> {
  if (buildModels(config.models).chat('deriver') === undefined) {
    console.error(`engram: derive needs a deriver model; ${describeReasoning(config.models)}`);
    return 2;
  }
  const database = await openDatabase(config.databaseUrl, databaseOptions(config));
  try {
    const { ctx } = composeRuntime(config, database);
    const queued = await deriveStoredMessages(ctx, scope);
    const where = scope.sessionId !== undefined ? ` in session ${scope.sessionId}` : scope.workspaceId !== undefined ? ` in workspace ${scope.workspaceId}` : '';
    console.log(`queued ${queued} representation item${queued === 1 ? '' : 's'}${where} (the server's or a worker's jobs process them)`);
  } finally {
    await database.driver.close();
  }
  return 0;
}

/**
 * Runs one parsed command of `engram` (src/cli/main.ts reads the command line first, so this
 * module and the server behind it load only when a command runs). Resolves to the exit code, or
 * -1 for a command that keeps running (a server, a worker).
 */
export async function runCommand(line: { command: string; options: Record<string, string>; positionals: string[]; lists?: Record<string, string[]> }): Promise<number> {
  const { command, options, positionals } = line;
  const list = (name: string): string[] | undefined => line.lists?.[name];
  const option = (name: string): string | undefined => options[name];
  switch (command) {
    case 'serve': {
      const config = configOrExit();
      // a process of the group (forked by the primary below) serves alone
      if (cluster.isWorker) {
        await serve(config);
        return -1;
      }
      const flag = option('--processes');
      if (flag !== undefined && !(/^\d+$/.test(flag) && Number(flag) >= 1 && Number(flag) <= 1024)) {
        console.error(`engram: --processes must be an integer from 1 to 1024, got "${flag}"`);
        return 2;
      }
      let plan: { count: number; note?: string };
      try {
        plan = processCount(config, flag === undefined ? undefined : Number(flag));
      } catch (error) {
        if (!(error instanceof ProcessCountError)) throw error;
        console.error(`engram: ${error.message}`);
        return 2;
      }
      if (plan.count === 1) {
        const logger = pino({ level: config.logLevel });
        if (plan.note !== undefined) logger.info(plan.note);
        // a group's primary adds them to its processes; one process has only node's command line
        const missing = serverExecArgv(process.execArgv).slice(process.execArgv.length);
        if (missing.length > 0) {
          logger.info(
            { missing },
            `node runs without the server's V8 flags (${missing.join(' ')}): a process that waits idle for its first requests serves them slower, and one under steady load holds more heap than it uses; npm start passes them (README, "More cores")`,
          );
        }
        await serve(config);
      } else {
        await serveProcessGroup(config, plan.count);
      }
      return -1;
    }
    case 'worker': {
      const config = configOrExit();
      await runWorker(config);
      return -1;
    }
    case 'migrate': {
      const config = configOrExit();
      const database = await openDatabase(config.databaseUrl, databaseOptions(config));
      for (const step of database.migrations) console.log(`${step.applied ? 'applied' : 'already applied'}  ${step.name}`);
      await database.driver.close();
      return 0;
    }
    case 'derive': {
      const config = configOrExit();
      const workspaceId = option('--workspace');
      const sessionId = option('--session');
      if (sessionId !== undefined && workspaceId === undefined) {
        console.error('engram: --workspace is required with --session');
        return 2;
      }
      return runDerive(config, { workspaceId, sessionId });
    }
    case 'reembed': {
      const config = configOrExit();
      const database = await openDatabase(config.databaseUrl, databaseOptions(config));
      try {
        for (const line of await reembed(config, database)) console.log(line);
      } finally {
        await database.driver.close();
      }
      return 0;
    }
    case 'backup': {
      const config = configOrExit();
      const [target] = positionals;
      if (isPostgresUrl(config.databaseUrl)) {
        console.error('engram: backup copies the SQLite store; on PostgreSQL use pg_dump (README, "Backups")');
        return 2;
      }
      try {
        const copy = backupSqlite(config.databaseUrl, target);
        const size = copy.bytes >= 1024 * 1024 ? `${(copy.bytes / 1024 / 1024).toFixed(1)} MB` : `${Math.ceil(copy.bytes / 1024)} KB`;
        console.log(`backed up ${config.databaseUrl} to ${copy.target}: ${size} in ${Math.round(copy.ms)} ms, schema ${copy.migration ?? '(none)'}, check ${copy.check}`);
        return copy.check === 'ok' ? 0 : 1;
      } catch (error) {
        if (!(error instanceof BackupRefused)) throw error;
        console.error(`engram: ${error.message}`);
        return 2;
      }
    }
    case 'export': {
      const config = configOrExit();
      return runExport(config, { workspaceIds: list('--workspace'), output: option('--output'), withVectors: option('--with-vectors') === 'true' });
    }
    case 'import': {
      const config = configOrExit();
      const batch = option('--batch');
      if (batch !== undefined && !(/^\d+$/.test(batch) && Number(batch) >= 1 && Number(batch) <= 100000)) {
        console.error(`engram: --batch must be an integer from 1 to 100000, got "${batch}"`);
        return 2;
      }
      const url = option('--from-honcho');
      const [file] = positionals;
      if ((url === undefined) === (file === undefined)) {
        console.error('engram: import takes a file (or - for stdin), or --from-honcho <url>, one of the two');
        return 2;
      }
      if (url === undefined && (option('--api-key') !== undefined || list('--workspace') !== undefined)) {
        console.error('engram: --api-key and --workspace go with --from-honcho (a file is imported whole)');
        return 2;
      }
      if (url !== undefined && !/^https?:\/\/[^/]/.test(url)) {
        console.error(`engram: --from-honcho needs an http(s) URL, got "${url}"`);
        return 2;
      }
      const batchLines = batch === undefined ? undefined : Number(batch);
      return runImport(config, url === undefined ? { file, batchLines } : { batchLines, fromHoncho: { url, apiKey: option('--api-key'), workspaceIds: list('--workspace') } });
    }
    case 'mcp':
      return runMcp(Object.entries(options).flat());
    case 'eval': {
      const parsed = evalOptions(options, positionals[0], () => configOrExit());
      if (typeof parsed === 'string') {
        console.error(`engram: ${parsed}`);
        return 2;
      }
      const { runEval } = await import('./commands/eval.js');
      return runEval(parsed);
    }
    case 'token': {
      const config = configOrExit();
      if (config.jwtSecret === '') {
        console.error('engram: AUTH_JWT_SECRET must be set to sign tokens');
        return 2;
      }
      const workspaceId = option('--workspace');
      const peerId = option('--peer');
      const sessionId = option('--session');
      const expires = option('--expires');
      const expiresAt = expires === undefined ? undefined : new Date(expires);
      if (expiresAt !== undefined && Number.isNaN(expiresAt.getTime())) {
        console.error(`engram: --expires must be an ISO 8601 date, got "${expires}"`);
        return 2;
      }
      if ((peerId !== undefined || sessionId !== undefined) && workspaceId === undefined) {
        console.error('engram: --workspace is required with --peer or --session');
        return 2;
      }
      const scoped = workspaceId !== undefined;
      console.log(mintToken(config.jwtSecret, scoped ? { workspaceId, peerId, sessionId, expiresAt } : { isAdmin: true, expiresAt }));
      return 0;
    }
    default:
      // parseCommandLine knows every command this switch runs
      throw new Error(`no handler for the command "${command}"`);
  }
}
