import type { Config } from '../config/config.js';
import { createDomainContext, type DomainContext, type DomainLimits, type ReasoningRuntime } from '../domain/context.js';
import { buildJobCatalog } from '../jobs/catalog.js';
import { Worker, type WorkerLogger, type WorkerOptions } from '../jobs/worker.js';
import { ModelUsageRecorder } from './model-usage.js';
import { buildModels, logFailedModelCalls, observeModelCalls } from '../llm/models.js';
import type { Models } from '../llm/provider.js';
import type { Database } from './database.js';

/*
 * The composition root: what every front end of a process (the HTTP app, a worker, the CLI's
 * commands, the MCP server over stdio) builds from its configuration, built here once: the
 * domain's limits, the models, the reasoning runtime, the domain context, the job catalog and
 * the worker.
 */

/** The domain's limits and delivery order as `config` sets them. */
export function domainLimits(config: Config): DomainLimits {
  return {
    sessionObservers: config.sessionObserversLimit,
    webhookEndpoints: config.webhookMaxWorkspaceLimit,
    jobMaxAttempts: config.jobMaxAttempts,
    webhooksInOrder: config.webhookOrdered,
  };
}

/** The reasoning layer's runtime when some module has a model; undefined keeps reasoning off. */
export function reasoningRuntime(config: Config, models: Models, onChat?: ReasoningRuntime['onChat']): ReasoningRuntime | undefined {
  const modules = ['deriver', 'summary', 'dialectic', 'dream_deduction', 'dream_induction'] as const;
  const hasModel = modules.some((module) => models.chat(module) !== undefined) || models.embedder !== undefined;
  return hasModel ? { settings: config.reasoning, models, onChat } : undefined;
}

/** One process's parts over an open database. */
export interface Runtime {
  config: Config;
  database: Database;
  models: Models;
  /** The domain context, with the reasoning runtime when a model is configured. */
  ctx: DomainContext;
  /** Where the models built here count each workspace's calls (none when the models were given). */
  usage?: ModelUsageRecorder;
}

export interface RuntimeOptions {
  /** The models to reason with; default: built from `config.models`, failed calls told to `logger`, each workspace's calls counted in the store. */
  models?: Models;
  logger?: WorkerLogger;
  now?: () => Date;
  /** Told of every chat (the HTTP app's metrics and log). */
  onChat?: ReasoningRuntime['onChat'];
}

/** The models, the reasoning runtime and the domain context of `config` over `database`. */
export function composeRuntime(config: Config, database: Database, options: RuntimeOptions = {}): Runtime {
  const usage = options.models === undefined ? modelUsageRecorder(database, options.logger) : undefined;
  const models = options.models ?? buildModels(config.models, observeModelCalls([options.logger === undefined ? undefined : logFailedModelCalls(options.logger), usage]));
  const reasoning = reasoningRuntime(config, models, options.onChat);
  // model output the deriver and dreams did not take (untrusted input), with the reasons
  const logger = options.logger;
  if (reasoning !== undefined && logger !== undefined) reasoning.onIgnoredOutput = (report) => logger.warn(report, 'model output ignored');
  const ctx = createDomainContext(database.store, domainLimits(config), options.now, reasoning);
  return { config, database, models, ctx, usage };
}

/** What counts each workspace's model calls and tokens in `database` (a failed write logged as a warning). */
export function modelUsageRecorder(database: Database, logger?: Pick<WorkerLogger, 'warn'>): ModelUsageRecorder {
  return new ModelUsageRecorder(database.store, { onError: (error) => logger?.warn({ error: String(error) }, 'model usage not written yet') });
}

/**
 * The background worker of a runtime: webhook deliveries, purges and scope work, plus the
 * reasoning jobs when a model is configured (`onAttempt`: the app's job metrics).
 */
export function workerOf({ config, database, ctx }: Runtime, logger: WorkerLogger, onAttempt?: WorkerOptions['onAttempt']): Worker {
  // With model work beside them, deliveries take at most half of the process's runs, as each
  // reasoning kind does: a backlog of deliveries to slow receivers (side by side with
  // WEBHOOK_ORDERED=false, or to many endpoints) would otherwise take every free run as it came
  // (their lane is claimed first) and hold the deriver back for as long as the backlog lasted.
  const share = { concurrency: Math.max(1, Math.ceil(config.workerConcurrency / 2)) };
  const webhooks = { secret: config.webhookSecret, timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivateUrls, inOrder: config.webhookOrdered };
  return new Worker(database.store, buildJobCatalog(ctx, webhooks, share), {
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
 * A worker for `config` over `database` (`models`: those of an app in the same process, so their
 * limits on concurrent calls are shared).
 */
export function createWorker(config: Config, database: Database, logger: WorkerLogger, models?: Models, onAttempt?: WorkerOptions['onAttempt']): Worker {
  return workerOf(composeRuntime(config, database, { models, logger }), logger, onAttempt);
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
