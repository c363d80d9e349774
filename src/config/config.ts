import { existsSync, readFileSync } from 'node:fs';
import { parse as parseDotenv } from 'dotenv';
import { parseReasoningConfig } from './reasoning.js';
import { settingReader, type SettingValue } from './read-settings.js';
import { SETTINGS } from './settings.js';
import type { ReasoningSettings } from '../domain/reasoning-settings.js';
import type { ModelSettings } from '../llm/settings.js';

/**
 * Every setting Engram reads, parsed once at start-up. Each field's name, type, default and help
 * are declared once, in config/settings.ts (docs/configuration.md is generated from it).
 */
export interface Config {
  port: SettingValue<'PORT'>;
  host: SettingValue<'HOST'>;
  /** `postgres://...` selects PostgreSQL; anything else is a SQLite file path (`:memory:` allowed). */
  databaseUrl: SettingValue<'DATABASE_URL'>;
  databasePoolSize: SettingValue<'DATABASE_POOL_SIZE'>;
  databaseConnectTimeoutMs: SettingValue<'DATABASE_CONNECT_TIMEOUT_MS'>;
  databasePreparedStatements: SettingValue<'DATABASE_PREPARED_STATEMENTS'>;
  vectorBuildMemoryMb: SettingValue<'VECTOR_BUILD_MEMORY_MB'>;
  /** storage/filter-time-limit.ts */
  filterTimeLimitMs: SettingValue<'FILTER_TIME_LIMIT_MS'>;
  /** Empty (`none`): no cross-origin calls; `*`: any. */
  corsOrigins: string[];
  /** Whether bearer JWTs are required (contract §2.1). */
  useAuth: SettingValue<'AUTH_USE_AUTH'>;
  /** Empty when unset; required when auth is on. */
  jwtSecret: string;
  logLevel: SettingValue<'LOG_LEVEL'>;
  /** Contract §3.1. */
  sessionObserversLimit: SettingValue<'SESSION_OBSERVERS_LIMIT'>;
  /** Contract §7.6. */
  webhookMaxWorkspaceLimit: SettingValue<'WEBHOOK_MAX_WORKSPACE_LIMIT'>;
  shutdownTimeoutMs: SettingValue<'SHUTDOWN_TIMEOUT_MS'>;
  /** Empty when unset: webhooks are only delivered when it is set. */
  webhookSecret: string;
  webhookAllowPrivateUrls: SettingValue<'WEBHOOK_ALLOW_PRIVATE_URLS'>;
  webhookTimeoutMs: SettingValue<'WEBHOOK_TIMEOUT_MS'>;
  webhookOrdered: SettingValue<'WEBHOOK_ORDERED'>;
  jobDeadRetentionDays: SettingValue<'JOB_DEAD_RETENTION_DAYS'>;
  jobMaxAttempts: SettingValue<'JOB_MAX_ATTEMPTS'>;
  jobRetryBaseMs: SettingValue<'JOB_RETRY_BASE_MS'>;
  jobRetryMaxMs: SettingValue<'JOB_RETRY_MAX_MS'>;
  runWorkers: SettingValue<'RUN_WORKERS'>;
  workerConcurrency: SettingValue<'WORKER_CONCURRENCY'>;
  workerPollMs: SettingValue<'WORKER_POLL_MS'>;
  /** WEB_CONCURRENCY (`--processes` wins); undefined: one per core. */
  processes: SettingValue<'WEB_CONCURRENCY'>;
  metricsEnabled: SettingValue<'METRICS_ENABLED'>;
  sqliteSynchronous: SettingValue<'SQLITE_SYNCHRONOUS'>;
  sqliteCacheMb: SettingValue<'SQLITE_CACHE_MB'>;
  sqliteMmapMb: SettingValue<'SQLITE_MMAP_MB'>;
  sqliteCheckpoints: SettingValue<'SQLITE_CHECKPOINTS'>;
  sqliteVectorScans: SettingValue<'SQLITE_VECTOR_SCANS'>;
  headersTimeoutMs: SettingValue<'HEADERS_TIMEOUT_MS'>;
  requestTimeoutMs: SettingValue<'REQUEST_TIMEOUT_MS'>;
  keepAliveTimeoutMs: SettingValue<'KEEP_ALIVE_TIMEOUT_MS'>;
  maxHeaderBytes: SettingValue<'MAX_HEADER_BYTES'>;
  maxConnections: SettingValue<'MAX_CONNECTIONS'>;
  /** The reasoning layer's settings (config/reasoning.ts; docs/reasoning.md). */
  reasoning: ReasoningSettings;
  /** Models per module, credentials, and how model calls are made (config/reasoning.ts). */
  models: ModelSettings;
  /** Reference settings that are set but not read by Engram, each with what to use instead: logged at start-up. */
  settingNotices: string[];
}

export const DEFAULT_SQLITE_PATH = SETTINGS.DATABASE_URL.default;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

/**
 * Reads settings from `env`, falling back to a `.env` file in the working directory for keys
 * the environment does not set. Collects every bad setting before failing, so one start-up
 * names them all.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, dotenvPath = '.env'): Config {
  const fileValues = existsSync(dotenvPath) ? parseDotenv(readFileSync(dotenvPath)) : {};
  const read = (key: string): string | undefined => {
    const value = env[key] ?? fileValues[key];
    return value === undefined || value === '' ? undefined : value;
  };
  const problems: string[] = [];
  const { get } = settingReader(read, problems);

  const databaseUrl = get('DATABASE_URL');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(databaseUrl) && !/^postgres(ql)?:\/\//i.test(databaseUrl)) {
    problems.push(`DATABASE_URL must be a postgres:// URL or a SQLite file path, got "${databaseUrl}"`);
  }
  // an empty setting is an unset one (the default), so `none` turns CORS off
  const corsSetting = get('CORS_ORIGINS');
  const corsOrigins = corsSetting.length === 1 && corsSetting[0].toLowerCase() === 'none' ? [] : corsSetting;
  for (const origin of corsOrigins) {
    // what a browser sends in Origin: scheme://host[:port], without a path or a trailing slash
    if (origin !== '*' && origin !== 'null' && !/^[a-z][a-z0-9+.-]*:\/\/[^/\s]+$/i.test(origin)) {
      problems.push(`CORS_ORIGINS must be a comma-separated list of origins (scheme://host[:port], no path) or *, got "${origin}"`);
    }
  }
  const useAuth = get('AUTH_USE_AUTH');
  const jwtSecret = get('AUTH_JWT_SECRET') ?? '';
  if (useAuth && jwtSecret === '') {
    problems.push('AUTH_JWT_SECRET must be set when AUTH_USE_AUTH is true');
  }

  const config: Config = {
    port: get('PORT'),
    host: get('HOST'),
    databaseUrl,
    databasePoolSize: get('DATABASE_POOL_SIZE'),
    databaseConnectTimeoutMs: get('DATABASE_CONNECT_TIMEOUT_MS'),
    databasePreparedStatements: get('DATABASE_PREPARED_STATEMENTS'),
    vectorBuildMemoryMb: get('VECTOR_BUILD_MEMORY_MB'),
    filterTimeLimitMs: get('FILTER_TIME_LIMIT_MS'),
    corsOrigins,
    useAuth,
    jwtSecret,
    logLevel: get('LOG_LEVEL'),
    sessionObserversLimit: get('SESSION_OBSERVERS_LIMIT'),
    webhookMaxWorkspaceLimit: get('WEBHOOK_MAX_WORKSPACE_LIMIT'),
    shutdownTimeoutMs: get('SHUTDOWN_TIMEOUT_MS'),
    webhookSecret: get('WEBHOOK_SECRET') ?? '',
    webhookAllowPrivateUrls: get('WEBHOOK_ALLOW_PRIVATE_URLS'),
    webhookTimeoutMs: get('WEBHOOK_TIMEOUT_MS'),
    webhookOrdered: get('WEBHOOK_ORDERED'),
    jobMaxAttempts: get('JOB_MAX_ATTEMPTS'),
    jobDeadRetentionDays: get('JOB_DEAD_RETENTION_DAYS'),
    jobRetryBaseMs: get('JOB_RETRY_BASE_MS'),
    jobRetryMaxMs: get('JOB_RETRY_MAX_MS'),
    runWorkers: get('RUN_WORKERS'),
    workerConcurrency: get('WORKER_CONCURRENCY'),
    workerPollMs: get('WORKER_POLL_MS'),
    processes: get('WEB_CONCURRENCY'),
    metricsEnabled: get('METRICS_ENABLED'),
    sqliteSynchronous: get('SQLITE_SYNCHRONOUS'),
    sqliteCacheMb: get('SQLITE_CACHE_MB'),
    sqliteMmapMb: get('SQLITE_MMAP_MB'),
    sqliteCheckpoints: get('SQLITE_CHECKPOINTS'),
    sqliteVectorScans: get('SQLITE_VECTOR_SCANS'),
    headersTimeoutMs: get('HEADERS_TIMEOUT_MS'),
    requestTimeoutMs: get('REQUEST_TIMEOUT_MS'),
    keepAliveTimeoutMs: get('KEEP_ALIVE_TIMEOUT_MS'),
    maxHeaderBytes: get('MAX_HEADER_BYTES'),
    maxConnections: get('MAX_CONNECTIONS'),
    ...parseReasoningConfig(read, problems),
  };
  // node:http refuses a headers timeout longer than the whole-request timeout
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    problems.push(`HEADERS_TIMEOUT_MS (${config.headersTimeoutMs}) must not be greater than REQUEST_TIMEOUT_MS (${config.requestTimeoutMs})`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}
