import type { FastifyInstance } from 'fastify';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { expect } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { loadConfig, type Config } from '../../src/config/config.js';
import { DIALECT, ownPostgresDatabase, TEST_DATABASE_URL } from './test-app.js';

/**
 * The real server, listening on an ephemeral port, for tests that drive it through the official
 * SDKs. Every request the server answers is recorded (method, path, query, body, status, response)
 * so a test can say exactly what an SDK sent and what it got back, without touching the SDK.
 */

export interface Exchange {
  method: string;
  /** Path without the query string, as the SDK sent it. */
  path: string;
  /** The raw query string without `?`, '' when none. */
  query: string;
  /** Parsed JSON request body; the raw text when it is not JSON; undefined when there is none. */
  requestBody: unknown;
  status: number;
  /** Parsed JSON response body; the raw text when it is not JSON; undefined when empty. */
  responseBody: unknown;
}

export interface SdkServer {
  app: FastifyInstance;
  database: Database;
  /** The server's configuration: what a worker for its database is made with. */
  config: Config;
  /** `http://127.0.0.1:<port>`, what the SDKs take as `baseURL`. */
  baseURL: string;
  /** Every exchange so far, in the order the server answered them. */
  exchanges: Exchange[];
  /** Exchanges recorded after `mark` (a previous `exchanges.length`). */
  since(mark: number): Exchange[];
  close(): Promise<void>;
}

function parseMaybeJson(text: unknown): unknown {
  if (typeof text !== 'string') return text === null ? undefined : text;
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * `ownDatabase`: on PostgreSQL, a database of the server's own instead of the shared test
 * database, for files that run a worker (on the shared one it would take other files' jobs).
 */
export async function startSdkServer(overrides: Record<string, string> = {}, options: { ownDatabase?: boolean } = {}): Promise<SdkServer> {
  const own = options.ownDatabase === true && DIALECT === 'postgres' && overrides.DATABASE_URL === undefined ? await ownPostgresDatabase() : undefined;
  const config = loadConfig({ DATABASE_URL: own?.url ?? TEST_DATABASE_URL, LOG_LEVEL: 'silent', ...overrides }, '/nonexistent/.env');
  const database = await openDatabase(config.databaseUrl);
  const { app } = await buildApp({ config, database, logger: false });

  const exchanges: Exchange[] = [];
  // onSend runs for routes, the not-found handler and errors alike, before the client sees the
  // response, so the record is complete by the time the SDK call returns.
  app.addHook('onSend', async (request, reply, payload) => {
    const url = request.raw.url ?? request.url;
    const q = url.indexOf('?');
    exchanges.push({
      method: request.method,
      path: q === -1 ? url : url.slice(0, q),
      query: q === -1 ? '' : url.slice(q + 1),
      requestBody: parseMaybeJson(request.body),
      status: reply.statusCode,
      responseBody: parseMaybeJson(payload),
    });
    return payload;
  });

  try {
    await app.listen({ port: 0, host: '127.0.0.1' });
  } catch (error) {
    await app.close().catch(() => undefined);
    await database.driver.close().catch(() => undefined);
    await own?.drop();
    throw error;
  }
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error(`unexpected server address ${String(address)}`);

  return {
    app,
    database,
    config,
    baseURL: `http://127.0.0.1:${address.port}`,
    exchanges,
    since: (mark) => exchanges.slice(mark),
    async close() {
      await app.close();
      await database.driver.close();
      await own?.drop();
    },
  };
}

/** One exchange as a line a report can quote: `PUT /v3/... ?q body=... -> 200 {...}`. */
export function describeExchange(e: Exchange): string {
  const query = e.query === '' ? '' : `?${e.query}`;
  const body = e.requestBody === undefined ? '' : ` body=${JSON.stringify(e.requestBody)}`;
  const response = e.responseBody === undefined ? '' : ` ${JSON.stringify(e.responseBody)}`;
  return `${e.method} ${e.path}${query}${body} -> ${e.status}${response}`;
}

/**
 * `METHOD /path` with the given ids replaced by `{name}` placeholders, for comparing the routes an
 * SDK called regardless of the ids the test chose. A name may stand for several ids.
 */
export function routeOf(e: Exchange, ids: Record<string, string | string[]>): string {
  const lookup = new Map<string, string>();
  for (const [name, value] of Object.entries(ids)) {
    for (const id of Array.isArray(value) ? value : [value]) lookup.set(id, name);
  }
  const segments = e.path.split('/').map((segment) => {
    const name = lookup.get(decodeURIComponent(segment));
    return name === undefined ? segment : `{${name}}`;
  });
  return `${e.method} ${segments.join('/')}`;
}

/** Every exchange succeeded; otherwise the failures, verbatim, are the assertion's message. */
export function expectAllOk(exchanges: Exchange[]): void {
  const failed = exchanges.filter((e) => e.status >= 400);
  expect(failed.map(describeExchange)).toEqual([]);
}

/** The distinct routes the SDK called, ids replaced by placeholders, in first-call order. */
export function routesCalled(exchanges: Exchange[], ids: Record<string, string | string[]>): string[] {
  return [...new Set(exchanges.map((e) => routeOf(e, ids)))];
}

/** Every item of an SDK's paged iterator. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** The rejection of `promise`, or a failure when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

/** A text's token count with o200k_base, the encoder the server counts with. */
export const tokens = (text: string) => encode(text).length;
export const contents = (messages: { content: string }[]) => messages.map((m) => m.content);
/** How the server renders a conclusion's time in a representation: whole seconds, UTC. */
export const renderedTime = (createdAt: string) => `${new Date(createdAt).toISOString().slice(0, 19)}Z`;
