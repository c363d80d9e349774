import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/http/app.js';
import { databaseOptions, openDatabase, type Database } from '../../src/runtime/database.js';
import { loadConfig, type Config } from '../../src/config/config.js';
import { mintToken } from '../../src/http/shared/auth.js';
import type { DeclaredRoute } from '../../src/http/shared/route-index.js';
import { workerDatabaseUrl } from './worker-database.js';

/**
 * `DATABASE_URL=postgres://...` runs the suite on PostgreSQL; otherwise an in-memory SQLite. Test
 * files run in several worker processes at once: on PostgreSQL each worker has a database of its
 * own (see workerDatabaseUrl), so the job workers of one file never claim another file's jobs.
 */
export const TEST_DATABASE_URL = process.env.DATABASE_URL?.startsWith('postgres') ? workerDatabaseUrl(process.env.DATABASE_URL) : ':memory:';
export const DIALECT = TEST_DATABASE_URL.startsWith('postgres') ? 'postgres' : 'sqlite';

export const TEST_SECRET = 'test-secret-of-reasonable-length';

export interface TestResponse {
  status: number;
  headers: Record<string, unknown>;
  text: string;
  body: any;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Raw body text, sent as is (no JSON encoding). */
  raw?: string;
  token?: string;
}

export interface TestApi {
  app: FastifyInstance;
  database: Database;
  config: Config;
  request(method: string, url: string, body?: unknown, options?: RequestOptions): Promise<TestResponse>;
  get(url: string, options?: RequestOptions): Promise<TestResponse>;
  post(url: string, body?: unknown, options?: RequestOptions): Promise<TestResponse>;
  put(url: string, body?: unknown, options?: RequestOptions): Promise<TestResponse>;
  delete(url: string, body?: unknown, options?: RequestOptions): Promise<TestResponse>;
  /** Every route of every generation with the access it declares (method, URL pattern, scope). */
  declaredRoutes(): readonly DeclaredRoute[];
  /** Signs a token with the test secret. */
  token(claims: Parameters<typeof mintToken>[1]): string;
  close(): Promise<void>;
}

/** A unique id, so tests never share workspaces and can run in any order or in parallel. */
export function uniqueId(prefix = 'ws'): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

let template: Promise<string> | undefined;

/**
 * The name of a database on the test server with every migration applied, made once per server
 * and set of migrations (its name carries their hash) by whichever test process needs it first,
 * under an advisory lock taken in the suite's base database; nothing connects to it afterwards,
 * so it can be copied.
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const dir = fileURLToPath(new URL('../../src/storage/postgres/migrations/', import.meta.url));
    const hash = createHash('sha256');
    for (const file of readdirSync(dir).sort()) hash.update(file).update(readFileSync(join(dir, file)));
    const name = `engram_template_${hash.digest('hex').slice(0, 16)}`;
    // connected to the database DATABASE_URL names, the same for every test worker: an advisory
    // lock holds only within one database, and each worker has its own (worker-database.ts)
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    try {
      await admin.query('SELECT pg_advisory_lock(hashtext($1))', [name]);
      const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (found.rowCount === 0) {
        // migrated under another name and renamed when done, so a half-migrated one is never copied
        const building = `${name}_building`;
        await admin.query(`DROP DATABASE IF EXISTS ${building}`);
        await admin.query(`CREATE DATABASE ${building}`);
        const url = new URL(TEST_DATABASE_URL);
        url.pathname = `/${building}`;
        const database = await openDatabase(url.toString());
        await database.driver.close();
        await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      }
    } finally {
      await admin.end();
    }
    return name;
  })();
  return template;
}

/**
 * A PostgreSQL database of its own on the test server (dropped by the returned function), for
 * tests that run workers: on one shared database a test file's worker would claim another file's
 * jobs and run them with its own fake model.
 */
export async function ownPostgresDatabase(options: { migrated?: boolean } = {}): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `engram_own_${randomBytes(6).toString('hex')}`;
  // a copy of a migrated template: 0.3 s, where creating and migrating an empty one took 0.9 s
  const template = options.migrated === false ? undefined : await migratedTemplate();
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}${template === undefined ? '' : ` TEMPLATE ${template}`}`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const cleanup = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await cleanup.connect();
      try {
        await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await cleanup.end();
      }
    },
  };
}

/**
 * The database of a test file whose tests start server processes, as a function read when a
 * process starts: a file in `dir` on SQLite; on PostgreSQL a database of the file's own, made
 * before the file's tests and dropped after them, so the processes' workers meet only this
 * file's jobs (other files queue deliveries to endpoints that never answer on the shared one).
 */
export function databaseForProcesses(dir: string): () => string {
  let url = join(dir, 'engram.db');
  let drop = async (): Promise<void> => undefined;
  beforeAll(async () => {
    if (DIALECT !== 'postgres') return;
    const own = await ownPostgresDatabase();
    url = own.url;
    drop = own.drop;
  });
  afterAll(() => drop());
  return () => url;
}

/**
 * `ownDatabase`: on PostgreSQL, a database of the app's own instead of the shared test database
 * (for tests that run workers); SQLite tests always have their own in-memory database.
 */
export async function buildTestApp(overrides: Record<string, string> = {}, options: { ownDatabase?: boolean; inspectorAssets?: string } = {}): Promise<TestApi> {
  const own = options.ownDatabase === true && DIALECT === 'postgres' && overrides.DATABASE_URL === undefined ? await ownPostgresDatabase() : undefined;
  const config = loadConfig(
    { DATABASE_URL: own?.url ?? TEST_DATABASE_URL, AUTH_JWT_SECRET: TEST_SECRET, LOG_LEVEL: 'silent', ...overrides },
    '/nonexistent/.env',
  );
  const database = await openDatabase(config.databaseUrl, databaseOptions(config));
  const { app, routes } = await buildApp({ config, database, logger: false, inspectorAssets: options.inspectorAssets });
  await app.ready();

  const request = async (method: string, url: string, body?: unknown, options: RequestOptions = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    let payload: string | undefined;
    if (options.raw !== undefined) {
      payload = options.raw;
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] ??= 'application/json';
    }
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    const response = await app.inject({ method: method as 'GET', url, payload, headers });
    let parsed: unknown = undefined;
    if (response.body !== '') {
      try {
        parsed = JSON.parse(response.body);
      } catch {
        parsed = response.body;
      }
    }
    return { status: response.statusCode, headers: response.headers, text: response.body, body: parsed };
  };

  return {
    app,
    database,
    config,
    request,
    get: (url, options) => request('GET', url, undefined, options),
    post: (url, body, options) => request('POST', url, body, options),
    put: (url, body, options) => request('PUT', url, body, options),
    delete: (url, body, options) => request('DELETE', url, body, options),
    declaredRoutes: () => routes.declaredRoutes(),
    token: (claims) => mintToken(TEST_SECRET, claims),
    async close() {
      await app.close();
      await database.driver.close();
      await own?.drop();
    },
  };
}
