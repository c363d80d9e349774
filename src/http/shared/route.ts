import { Readable } from 'node:stream';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DomainContext } from '../../domain/context.js';
import { DomainError, conflict, invalidInput, unavailable } from '../../domain/errors.js';
import { countAhead } from '../../domain/text/token-count.js';
import { FilterTimeLimitError, StoreUnavailableError } from '../../storage/store.js';
import { PeerDeletingError } from '../../storage/peer-deleting.js';
import { AuthError, authorizeV1, authorizeV2, authorizeV3, type Claims, type RouteScope, type V1Claims } from './auth.js';
import { parseJsonLikePython } from './python-json.js';
import { INVALID, type Field, type Schema, type ValidationItem, missingItem, validationBody } from './validate.js';
import type { ListRequest, ReadRules } from '../../domain/filters/filters.js';

export type Generation = 'v1' | 'v2' | 'v3';

/**
 * Who may call a route, as the route declares it: kept in its Fastify route config
 * (`config.access`), where the app's route table reads it when the route is registered
 * (shared/route-index.ts), never per request.
 */
export interface RouteAccess {
  generation: Generation;
  scope: RouteScope;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
}

/** What every route handler can reach. */
export interface HttpDeps {
  ctx: DomainContext;
  /** null when auth is off: every caller is treated as admin. */
  readToken: ((authorization: string | undefined) => Claims) | null;
  /** Signs a scoped key; null when auth is off. */
  mintKey: ((claims: KeyClaims) => string) | null;
}

export interface KeyClaims {
  workspaceId?: string;
  peerId?: string;
  sessionId?: string;
  expiresAt?: Date;
  /** v1 keys: ap/us/se/co (contract-v1 §2.7). */
  v1?: V1Claims;
}

export interface Reply {
  status: number;
  /** undefined sends an empty body (204). */
  body?: unknown;
  /** An already serialised JSON body, sent as is (cached pages). */
  json?: string;
  headers?: Readonly<Record<string, string>>;
  /** A streamed body (`text/event-stream` unless `streamType` says otherwise): each piece is written as the client takes it. */
  stream?: AsyncIterable<string>;
  streamType?: string;
}

/** Seconds a client is asked to wait before retrying while the store is unavailable (503). */
export const RETRY_AFTER_SECONDS = 5;
export const UNAVAILABLE_HEADERS: Readonly<Record<string, string>> = { 'retry-after': String(RETRY_AFTER_SECONDS) };

export interface RouteInput<Q, B> {
  params: Record<string, string>;
  query: Q;
  body: B;
  claims: Claims;
  /** Aborted when the client closes the connection before the answer is sent. */
  signal: AbortSignal;
  /** The request's logger, for a failure the answer does not show. */
  log: FastifyBaseLogger;
}

export type QueryFields = Record<string, Field<any>>;
export type QueryOutput<F extends QueryFields> = { [K in keyof F]: F[K] extends Field<infer T> ? T : never };

export interface RouteSpec<F extends QueryFields, B> {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  generation: Generation;
  scope: RouteScope;
  summary: string;
  tags: string[];
  /** Query parameters in the order their errors are reported. */
  query?: F;
  /** `required: false` lets an absent body (no bytes or `null`) through as undefined. */
  body?: { schema: Schema<B>; required: boolean };
  /** Left out of the OpenAPI document (aliases such as trailing-slash paths). */
  hidden?: boolean;
  /**
   * Texts of the raw body that validation counts tokens of in full: counted ahead, a slice at a
   * time, so the synchronous validation does not hold the event loop (docs/operations.md).
   */
  countAhead?: (rawBody: unknown) => string[];
  handler(input: RouteInput<QueryOutput<F>, B>): Promise<Reply>;
}

/**
 * What a handler receives. The abort signal is made when a handler first reads it (the chat
 * routes): an AbortController and a 'close' listener on every request cost more than some
 * whole routes.
 */
class HandlerInput<Q, B> implements RouteInput<Q, B> {
  private closed: AbortController | undefined;

  constructor(
    readonly params: Record<string, string>,
    readonly query: Q,
    readonly body: B,
    readonly claims: Claims,
    private readonly reply: FastifyReply,
  ) {}

  get signal(): AbortSignal {
    if (this.closed === undefined) {
      const controller = new AbortController();
      this.closed = controller;
      const raw = this.reply.raw;
      const onClose = () => {
        if (!raw.writableFinished) controller.abort(new Error('the client closed the connection'));
      };
      // read after the connection already closed: abort at once, as the listener would have
      if (raw.destroyed) onClose();
      else raw.once('close', onClose);
    }
    return this.closed.signal;
  }

  get log(): FastifyBaseLogger {
    return this.reply.log;
  }
}

const ADMIN: Claims = { isAdmin: true };
const NO_BODY = Symbol('no body');

function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const type = header.split(';', 1)[0].trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/** Errors every generation answers the same way; domain codes map per generation. */
export function errorReply(error: unknown, mapDomain: (error: DomainError) => Reply): Reply | undefined {
  if (error instanceof AuthError) return { status: 401, body: { detail: error.detail } };
  if (error instanceof DomainError) return mapDomain(error);
  // no log line per request: the request log shows the 503, the readiness route says why
  if (error instanceof StoreUnavailableError) return mapDomain(unavailable(error.message));
  // a 4xx, not a 5xx the official clients would retry, each retry running as long again
  if (error instanceof FilterTimeLimitError) return mapDomain(invalidInput(error.message));
  // a write naming a peer whose deletion is under way
  if (error instanceof PeerDeletingError) return mapDomain(conflict(error.message));
  return undefined;
}

export function send(reply: FastifyReply, result: Reply): FastifyReply {
  reply.code(result.status);
  if (result.headers !== undefined) reply.headers(result.headers);
  if (result.stream !== undefined) return reply.header('content-type', result.streamType ?? 'text/event-stream').header('cache-control', 'no-cache').send(Readable.from(result.stream, { objectMode: false }));
  if (result.json !== undefined) return reply.header('content-type', 'application/json').send(result.json);
  if (result.body === undefined) return reply.send();
  return reply.header('content-type', 'application/json').send(JSON.stringify(result.body));
}

function lastValue(value: unknown): unknown {
  // Repeated query keys: FastAPI reads the last one for a scalar parameter.
  return Array.isArray(value) ? value[value.length - 1] : value;
}

/** Every value of a repeatable query key, as a list (undefined when absent). */
function allValues(value: unknown): unknown[] | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value : [value];
}

/** Reads the bearer token and checks it against the route's scope; admin when auth is off. */
export async function authenticate(deps: HttpDeps, generation: Generation, scope: RouteScope, request: FastifyRequest): Promise<Claims> {
  if (deps.readToken === null) return ADMIN;
  const claims = deps.readToken(request.headers.authorization);
  const params = request.params as Record<string, string>;
  const rawQuery = request.query as Record<string, unknown>;
  const pick = (name: string) => params[name] ?? (lastValue(rawQuery[name]) as string | undefined);
  const ids = { workspaceId: pick('workspace_id'), peerId: pick('peer_id'), sessionId: pick('session_id') };
  if (generation === 'v1') {
    authorizeV1(claims, scope, { appId: pick('app_id'), userId: pick('user_id'), sessionId: pick('session_id') });
  } else if (generation === 'v3') {
    await authorizeV3(claims, scope, ids, (w, s, p) => deps.ctx.store.sessions.isActiveMember(w, s, p));
  } else {
    authorizeV2(claims, scope, ids);
  }
  return claims;
}

/**
 * Registers one route with the contract's processing order (§1.3): JSON parsing, then
 * authentication, then validation of query and body (all errors in one 422), then the handler.
 */
export function defineRoute<F extends QueryFields, B = undefined>(
  app: FastifyInstance,
  deps: HttpDeps,
  mapDomain: (error: DomainError) => Reply,
  spec: RouteSpec<F, B>,
): void {
  const queryEntries = Object.entries(spec.query ?? {}) as [string, Field<unknown>][];
  const generation = spec.generation;
  const hasParams = spec.url.includes(':');

  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const params = request.params as Record<string, string>;
    // the router gives an empty segment (`/v1/apps/`) to a path parameter, which the reference's
    // does not match: that is an unmatched path (a 307 to the form without the slash, or a 404)
    if (hasParams) {
      for (const name in params) if (params[name] === '') return reply.callNotFound();
    }
    let release: (() => void) | undefined;
    try {
      // 1. body: parsed before authentication, so broken JSON is a 422 even without a token
      let rawBody: unknown = NO_BODY;
      const text = request.body as string | undefined;
      if (spec.body !== undefined && text !== undefined && text !== '') {
        const contentType = request.headers['content-type'];
        // v1/v2 parse a body without Content-Type as JSON (an empty header is removed before, in
        // app.ts); v3 does not; a non-JSON type never is
        const parseAsJson = isJsonContentType(contentType) || (contentType === undefined && generation !== 'v3');
        if (!parseAsJson) {
          rawBody = text;
        } else {
          const parsed = parseJsonLikePython(text);
          if (!parsed.ok) {
            const item: ValidationItem = {
              type: 'json_invalid',
              loc: ['body', parsed.pos],
              // our own limit, named in msg too since v1 items carry no ctx
              msg: parsed.isTooDeep === true ? `JSON decode error: ${parsed.msg}` : 'JSON decode error',
              input: {},
              ctx: { error: parsed.msg },
            };
            return send(reply, { status: 422, body: validationBody([item], generation) });
          }
          rawBody = parsed.value === null ? NO_BODY : parsed.value;
        }
      }

      // 2. authentication and route scope
      const claims = await authenticate(deps, generation, spec.scope, request);
      if (spec.countAhead !== undefined && rawBody !== NO_BODY) release = await countAhead(spec.countAhead(rawBody));

      // 3. validation: query parameters in declaration order, then the body
      const errors: ValidationItem[] = [];
      const query: Record<string, unknown> = {};
      const rawQuery = request.query as Record<string, unknown>;
      for (const [name, field] of queryEntries) {
        const value = field.repeated ? allValues(rawQuery[name]) : lastValue(rawQuery[name]);
        if (value === undefined) {
          if (field.default === undefined) errors.push(missingItem(['query', name]));
          else query[name] = field.default();
          continue;
        }
        const parsed = field.schema.parse(value, ['query', name], errors);
        if (parsed !== INVALID) query[name] = parsed;
      }
      let body: unknown = undefined;
      if (spec.body !== undefined) {
        if (rawBody === NO_BODY) {
          if (spec.body.required) errors.push(missingItem(['body']));
        } else {
          const parsed = spec.body.schema.parse(rawBody, ['body'], errors);
          if (parsed !== INVALID) body = parsed;
        }
      }
      if (errors.length > 0) return send(reply, { status: 422, body: validationBody(errors, generation) });

      // 4. the handler
      const input = new HandlerInput(params, query as QueryOutput<F>, body as B, claims, reply);
      const result = await spec.handler(input);
      return send(reply, result);
    } catch (error) {
      // the 422 alone would not tell an operator that a filter, or the limit, needs a look
      if (error instanceof FilterTimeLimitError) request.log.warn({ limitMs: error.limitMs }, 'a filtered statement ran past FILTER_TIME_LIMIT_MS');
      const known = errorReply(error, mapDomain);
      if (known !== undefined) return send(reply, known);
      request.log.error({ err: error }, 'unhandled error');
      return send(reply, { status: 500, body: { detail: 'An unexpected error occurred' } });
    } finally {
      release?.();
    }
  };

  const openapiQuery: Record<string, unknown> = {};
  for (const [name, field] of queryEntries) openapiQuery[name] = field.schema.jsonSchema();
  const access: RouteAccess = { generation, scope: spec.scope };
  app.route({
    method: spec.method,
    url: spec.url,
    handler: handle,
    config: { access },
    schema: {
      hide: spec.hidden,
      summary: spec.summary,
      tags: spec.tags,
      // seed part 5: the v1 interface lists the bearer header as optional (see authorizeV1)
      ...(generation === 'v1' ? { security: [{ HTTPBearer: [] }, {}] } : {}),
      ...(queryEntries.length > 0
        ? {
            querystring: {
              type: 'object',
              properties: openapiQuery,
              required: queryEntries.filter(([, f]) => f.default === undefined).map(([n]) => n),
            },
          }
        : {}),
      ...(spec.body !== undefined ? { body: spec.body.schema.jsonSchema() } : {}),
    },
  });
}

/** Registers routes of one generation: `route({...})` with the generation and error map bound. */
export type RouteDefiner = <F extends QueryFields = Record<string, never>, B = undefined>(
  spec: Omit<RouteSpec<F, B>, 'generation'>,
) => void;

export function routeDefiner(
  app: FastifyInstance,
  deps: HttpDeps,
  generation: Generation,
  mapDomain: (error: DomainError) => Reply,
): RouteDefiner {
  return (spec) => defineRoute(app, deps, mapDomain, { ...spec, generation } as RouteSpec<any, any>);
}

/** The list parameters every paged list route hands to the domain. */
export function listQuery(
  query: { page: number; size: number; reverse?: boolean },
  body: { filters?: Record<string, unknown> | null } | undefined,
  rules: ReadRules,
): ListRequest {
  return {
    filters: body?.filters ?? null,
    page: query.page,
    size: query.size,
    reverse: query.reverse ?? false,
    rules,
  };
}
