import { existsSync, readFileSync } from 'node:fs';
import { parse as parseDotenv } from 'dotenv';
import { parseReasoningConfig } from './config-reasoning.js';
import { settingReaders } from './setting-readers.js';
import type { ReasoningSettings } from './domain/reasoning/settings.js';
import type { ModelSettings } from './llm/settings.js';
import { DEFAULT_CORS_ORIGINS } from './http/shared/cors.js';
import { DEFAULT_FILTER_TIME_LIMIT_MS } from './storage/filter-time-limit.js';
import { SQLITE_DEFAULTS } from './storage/sqlite/sqlite-settings.js';

/** Every setting Engram reads, parsed once at start-up. */
export interface Config {
  /** TCP port of the HTTP server. */
  port: number;
  /** Interface to listen on; 0.0.0.0 exposes the server beyond this machine. */
  host: string;
  /** `postgres://...` selects PostgreSQL; anything else is a SQLite file path (`:memory:` allowed). */
  databaseUrl: string;
  /** PostgreSQL: longest wait in milliseconds for a connection before a request answers 503. */
  databaseConnectTimeoutMs: number;
  /** DATABASE_PREPARED_STATEMENTS (true): PostgreSQL runs frequent statements prepared by name. */
  databasePreparedStatements: boolean;
  /** Milliseconds one filtered statement may run before the request answers 422 (storage/filter-time-limit.ts). */
  filterTimeLimitMs: number;
  /** Origins whose browser pages may call the API (CORS_ORIGINS); empty (`none`): none; `*`: any. */
  corsOrigins: string[];
  /** Whether bearer JWTs are required (contract §2.1). */
  useAuth: boolean;
  /** HS256 secret for JWTs; required when auth is on. */
  jwtSecret: string;
  /** pino level: fatal, error, warn, info, debug, trace or silent. */
  logLevel: string;
  /** Most peers with observe_others=true in one session (contract §3.1). */
  sessionObserversLimit: number;
  /** Most webhook endpoints per workspace (contract §7.6). */
  webhookMaxWorkspaceLimit: number;
  /** Milliseconds graceful shutdown waits for in-flight requests. */
  shutdownTimeoutMs: number;
  /** HMAC-SHA256 key for `X-Honcho-Signature`; webhooks are only delivered when it is set. */
  webhookSecret: string;
  /** Lets deliveries reach private, loopback and link-local addresses (local development, tests). */
  webhookAllowPrivateUrls: boolean;
  /** Milliseconds a webhook delivery may take. */
  webhookTimeoutMs: number;
  /**
   * Deliveries to one endpoint one at a time, in the order of their events (WEBHOOK_ORDERED,
   * default true); false sends them side by side, each retried on its own.
   */
  webhookOrdered: boolean;
  /** Days a dead-lettered job (with its last error) is kept before it is removed. */
  jobDeadRetentionDays: number;
  /** Attempts before a job is dead-lettered. */
  jobMaxAttempts: number;
  /** First retry delay in milliseconds; doubles each attempt, with jitter, up to jobRetryMaxMs. */
  jobRetryBaseMs: number;
  jobRetryMaxMs: number;
  /** Whether `engram serve` also runs the background workers (`engram worker` runs them alone). */
  runWorkers: boolean;
  /** Jobs one worker process runs at once. */
  workerConcurrency: number;
  /** Milliseconds between queue polls when idle. */
  workerPollMs: number;
  /**
   * Server processes `engram serve` runs on the one port (WEB_CONCURRENCY; `--processes` wins);
   * undefined: one per core.
   */
  processes: number | undefined;
  /** Serve Prometheus metrics at GET /metrics. */
  metricsEnabled: boolean;
  /** SQLite commit durability: NORMAL survives process crashes, FULL also power loss. */
  sqliteSynchronous: 'NORMAL' | 'FULL';
  /** SQLite's page cache per process, MiB (SQLITE_CACHE_MB). */
  sqliteCacheMb: number;
  /** How much of the SQLite file is read through a memory map, MiB; 0 turns it off (SQLITE_MMAP_MB). */
  sqliteMmapMb: number;
  /** Where the SQLite WAL is copied into the database: a thread of its own, or the commit that fills it (SQLITE_CHECKPOINTS). */
  sqliteCheckpoints: 'background' | 'inline';
  /** Where SQLite's scans of vectors run: a connection in a thread of its own, or the server connection (SQLITE_VECTOR_SCANS). */
  sqliteVectorScans: 'thread' | 'inline';
  /** Milliseconds a client may take to send a request's headers (answered 408 after). */
  headersTimeoutMs: number;
  /** Milliseconds a client may take to send a whole request, body included (answered 408 after). */
  requestTimeoutMs: number;
  /** Milliseconds an idle keep-alive connection stays open; above a load balancer's idle timeout. */
  keepAliveTimeoutMs: number;
  /** Largest request line plus headers, in bytes (answered 431 above). */
  maxHeaderBytes: number;
  /** Most open client connections; further ones are closed at once. 0: no limit. */
  maxConnections: number;
  /** The reasoning layer's settings (config-reasoning.ts; docs/reasoning.md). */
  reasoning: ReasoningSettings;
  /** Models per module, credentials, and how model calls are made (config-reasoning.ts). */
  models: ModelSettings;
  /** Reference settings that are set but not read by Engram, each with what to use instead: logged at start-up. */
  settingNotices: string[];
}

export const DEFAULT_SQLITE_PATH = './data/engram.db';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

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

  const { integer, boolean } = settingReaders(read, problems);

  const sqliteSynchronous = (): 'NORMAL' | 'FULL' => {
    const raw = (read('SQLITE_SYNCHRONOUS') ?? 'NORMAL').toUpperCase();
    if (raw === 'NORMAL' || raw === 'FULL') return raw;
    problems.push(`SQLITE_SYNCHRONOUS must be NORMAL or FULL, got "${raw}"`);
    return 'NORMAL';
  };

  /** A setting with one of `values` (in any case); the first is the default. */
  const oneOf = <T extends string>(name: string, values: readonly [T, ...T[]]): T => {
    const raw = (read(name) ?? values[0]).toLowerCase();
    if ((values as readonly string[]).includes(raw)) return raw as T;
    problems.push(`${name} must be ${values.join(' or ')}, got "${raw}"`);
    return values[0];
  };

  const logLevel = (read('LOG_LEVEL') ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const databaseUrl = read('DATABASE_URL') ?? DEFAULT_SQLITE_PATH;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(databaseUrl) && !/^postgres(ql)?:\/\//i.test(databaseUrl)) {
    problems.push(`DATABASE_URL must be a postgres:// URL or a SQLite file path, got "${databaseUrl}"`);
  }
  // an empty setting is an unset one (the default), so `none` turns CORS off
  const corsSetting = read('CORS_ORIGINS') ?? DEFAULT_CORS_ORIGINS.join(',');
  const corsOrigins = (corsSetting.trim().toLowerCase() === 'none' ? '' : corsSetting)
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '');
  for (const origin of corsOrigins) {
    // what a browser sends in Origin: scheme://host[:port], without a path or a trailing slash
    if (origin !== '*' && origin !== 'null' && !/^[a-z][a-z0-9+.-]*:\/\/[^/\s]+$/i.test(origin)) {
      problems.push(`CORS_ORIGINS must be a comma-separated list of origins (scheme://host[:port], no path) or *, got "${origin}"`);
    }
  }
  const useAuth = boolean('AUTH_USE_AUTH', false);
  const jwtSecret = read('AUTH_JWT_SECRET') ?? '';
  if (useAuth && jwtSecret === '') {
    problems.push('AUTH_JWT_SECRET must be set when AUTH_USE_AUTH is true');
  }

  const config: Config = {
    port: integer('PORT', 8000, 0, 65535),
    host: read('HOST') ?? '127.0.0.1',
    databaseUrl,
    databaseConnectTimeoutMs: integer('DATABASE_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
    databasePreparedStatements: boolean('DATABASE_PREPARED_STATEMENTS', true),
    filterTimeLimitMs: integer('FILTER_TIME_LIMIT_MS', DEFAULT_FILTER_TIME_LIMIT_MS, 10, 3_600_000),
    corsOrigins,
    useAuth,
    jwtSecret,
    logLevel,
    sessionObserversLimit: integer('SESSION_OBSERVERS_LIMIT', 10, 0, 1_000_000),
    webhookMaxWorkspaceLimit: integer('WEBHOOK_MAX_WORKSPACE_LIMIT', 10, 0, 1_000_000),
    shutdownTimeoutMs: integer('SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    webhookSecret: read('WEBHOOK_SECRET') ?? '',
    webhookAllowPrivateUrls: boolean('WEBHOOK_ALLOW_PRIVATE_URLS', false),
    webhookTimeoutMs: integer('WEBHOOK_TIMEOUT_MS', 30_000, 1, 600_000),
    webhookOrdered: boolean('WEBHOOK_ORDERED', true),
    jobMaxAttempts: integer('JOB_MAX_ATTEMPTS', 10, 1, 1000),
    jobDeadRetentionDays: integer('JOB_DEAD_RETENTION_DAYS', 30, 1, 3650),
    jobRetryBaseMs: integer('JOB_RETRY_BASE_MS', 1000, 1, 3_600_000),
    jobRetryMaxMs: integer('JOB_RETRY_MAX_MS', 300_000, 1, 86_400_000),
    runWorkers: boolean('RUN_WORKERS', true),
    workerConcurrency: integer('WORKER_CONCURRENCY', 8, 1, 1000),
    workerPollMs: integer('WORKER_POLL_MS', 250, 1, 60_000),
    processes: read('WEB_CONCURRENCY') === undefined ? undefined : integer('WEB_CONCURRENCY', 1, 1, 1024),
    metricsEnabled: boolean('METRICS_ENABLED', false),
    sqliteSynchronous: sqliteSynchronous(),
    sqliteCacheMb: integer('SQLITE_CACHE_MB', SQLITE_DEFAULTS.cacheMb, 1, 1_048_576),
    sqliteMmapMb: integer('SQLITE_MMAP_MB', SQLITE_DEFAULTS.mmapMb, 0, 1_048_576),
    sqliteCheckpoints: oneOf('SQLITE_CHECKPOINTS', ['background', 'inline']),
    sqliteVectorScans: oneOf('SQLITE_VECTOR_SCANS', ['thread', 'inline']),
    headersTimeoutMs: integer('HEADERS_TIMEOUT_MS', 10_000, 100, 3_600_000),
    requestTimeoutMs: integer('REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000),
    keepAliveTimeoutMs: integer('KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, 3_600_000),
    maxHeaderBytes: integer('MAX_HEADER_BYTES', 16_384, 1024, 1_048_576),
    maxConnections: integer('MAX_CONNECTIONS', 1000, 0, 1_000_000),
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
