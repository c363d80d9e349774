import { isUtf8 } from 'node:buffer';
import { fileURLToPath } from 'node:url';
import Fastify, { LogController, type FastifyInstance, type FastifyReply } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import pino, { type Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { DomainContext } from '../domain/context.js';
import { mountCors } from './shared/cors.js';
import { createTokenReader, mintToken } from './shared/auth.js';
import type { HttpDeps } from './shared/route.js';
import { RouteIndex } from './shared/route-index.js';
import { requestLogger } from './shared/request-logger.js';
import { processLog, requestLine } from '../server/logging.js';
import { limitConnections, serverLimitOptions } from './shared/server-limits.js';
import { JobMetrics, ModelCallMetrics, mountMetrics } from './shared/metrics.js';
import { logFailedModelCalls, observeModelCalls, buildModels } from '../llm/models.js';
import type { Models } from '../llm/provider.js';
import { mountReadiness, type WorkerStatus } from './shared/readiness.js';
import { UNAVAILABLE_HEADERS } from './shared/route.js';
import { mountV1 } from './v1/index.js';
import { mountV2 } from './v2/index.js';
import { mountV3 } from './v3/index.js';
import { mountMcp } from '../mcp/http.js';
import { mountStaticPage } from './shared/static-page.js';
import type { Database } from '../runtime/database.js';
import { composeRuntime, modelUsageRecorder } from '../runtime/runtime.js';
import { StoreUnavailableError } from '../storage/unavailable.js';

/** Message batches of 100 x 25,000 characters must fit (contract §7.4). */
const BODY_LIMIT = 16 * 1024 * 1024;

export interface AppDeps {
  config: Config;
  database: Database;
  /** Fastify logger options; false silences request logs (tests). Default: the process log (logging.ts) at LOG_LEVEL. */
  logger?: boolean | Record<string, unknown>;
  /** Where the default log goes: a file descriptor (standard output by default) or a file path. */
  logDestination?: number | string;
  now?: () => Date;
  /** The state of this process's workers for `GET /ready`; undefined when it runs none. */
  workers?: () => WorkerStatus | undefined;
  /** The models to reason with; default: built from `config.models`, measured at /metrics. */
  models?: Models;
  /** The inspector page's built files (index.html, assets/); default: dist/inspector, which `npm run build` writes. */
  inspectorAssets?: string;
}

const REDOC_PAGE = `<!DOCTYPE html>
<html>
<head>
<title>Engram - ReDoc</title>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1">
</head>
<body>
<noscript>ReDoc requires JavaScript; the OpenAPI document is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<redoc spec-url="/openapi.json"></redoc>
<script src="https://cdn.jsdelivr.net/npm/redoc@2/bundles/redoc.standalone.js"></script>
</body>
</html>
`;

const MEDIA_TYPE_NAME = /^[\w!#$%&'*+.^`|~-]+$/;
const MEDIA_SUBTYPE_NAME = /^[\w!#$%&'*+.^`|~-]+\s*$/;

/** Whether Fastify reads `value` as a media type (`type/subtype`, parameters aside), as its ContentType does. */
function isMediaType(value: string): boolean {
  const semicolon = value.indexOf(';');
  const media = semicolon === -1 ? value : value.slice(0, semicolon);
  const slash = media.indexOf('/');
  return slash !== -1 && MEDIA_TYPE_NAME.test(media.slice(0, slash).trimStart()) && MEDIA_SUBTYPE_NAME.test(media.slice(slash + 1).trimEnd());
}

/** Builds the HTTP app with /v2 and /v3 mounted, without listening (tests use inject). */
export async function buildApp(
  deps: AppDeps,
): Promise<{
  app: FastifyInstance;
  ctx: DomainContext;
  models: Models;
  jobMetrics: JobMetrics;
  /** Every route of every generation with the access it declares; complete once the app is ready. */
  routes: RouteIndex;
  flushLog: () => void;
  closeLog: () => Promise<void>;
  /** Writes the model usage counted and not written yet (the app's close does too; a worker sharing its models may count more after it). */
  flushUsage: () => Promise<void>;
}> {
  const { config } = deps;
  const log = deps.logger === undefined ? processLog(config.logLevel, deps.logDestination) : undefined;
  const app = Fastify({
    ...(log === undefined ? { logger: deps.logger } : { loggerInstance: log.logger }),
    bodyLimit: BODY_LIMIT,
    // ids are client-chosen strings; the router must not reject long ones
    routerOptions: { maxParamLength: 2048 },
    requestIdHeader: 'x-request-id',
    // a request's child logger made only when something logs through it
    childLoggerFactory: requestLogger,
    // one structured line per request, written when the response is done (below)
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // header size, slow senders, idle connections (docs/operations.md, "Limits")
    ...serverLimitOptions(config),
    // The router's own refusals (a path that is not valid percent-encoded UTF-8, a path segment
    // over maxParamLength) get the contract's `{"detail": ...}` body like every other error.
    frameworkErrors: (error, _request, reply: FastifyReply) => {
      const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
      void reply
        .code(tooLong ? 414 : 400)
        .header('content-type', 'application/json')
        .send(tooLong ? '{"detail":"URI Too Long: a path segment is longer than 2048 characters"}' : '{"detail":"Invalid URL: the path is not valid percent-encoded UTF-8"}');
    },
  });

  limitConnections(app.server, config);
  const modelCalls = new ModelCallMetrics();
  // each workspace's model calls and tokens, kept in the store (GET .../statistics), written on close too
  const usage = deps.models === undefined ? modelUsageRecorder(deps.database, app.log) : undefined;
  if (usage !== undefined) app.addHook('onClose', () => usage.flush());
  const models = deps.models ?? buildModels(config.models, observeModelCalls([modelCalls, logFailedModelCalls(app.log), usage]));

  const routes = new RouteIndex();
  app.addHook('onRoute', (route) => routes.add(route.url, route.method, route.config?.access));
  // one line per request; no hook at all when request lines would be dropped (logger off or
  // above info), as every hook costs each request its own step in Fastify's pipeline
  if ((pino.levels.values[app.log.level] ?? Infinity) <= pino.levels.values.info) {
    // written beside the logger's other lines, without a child logger per request (logging.ts)
    const log = app.log as Logger;
    app.addHook('onResponse', (request, reply, done) => {
      requestLine(log, request.id, request.method, request.url, reply.statusCode, Number(reply.elapsedTime.toFixed(2)));
      done();
    });
  }

  mountCors(app, config.corsOrigins);

  // A Content-Type Fastify cannot read as a media type (`foo`, `application`, an empty header) would
  // be its 415 before any route. The reference's framework reads such a header as not JSON, and an
  // empty one as none (contract §1.4; v1 §0.3): it is rewritten so that the routes decide as for
  // `text/plain` or no header.
  app.addHook('onRequest', (request, _reply, done) => {
    const type = request.headers['content-type'];
    if (type !== undefined && type !== 'application/json' && !isMediaType(type)) {
      if (type === '') delete request.headers['content-type'];
      else request.headers['content-type'] = 'text/plain';
    }
    done();
  });

  // Bodies arrive as text: each generation decides how to parse them (contract §1.4, §9.1).
  app.removeAllContentTypeParsers();
  // Bytes that are not UTF-8 are refused as the reference's framework refuses them (its JSON
  // decoder fails on them before any JSON is read), not read with U+FFFD in their place.
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body: Buffer, done) => {
    if (isUtf8(body)) return done(null, body.toString('utf8'));
    done(Object.assign(new Error('There was an error parsing the body'), { statusCode: 400 }));
  });
  // Validation happens in the route layer so errors come out in the reference's shape and order;
  // the schemas given to Fastify only document the API.
  app.setValidatorCompiler(() => () => true);

  await app.register(swagger, {
    openapi: {
      info: { title: 'Engram', version: '0.1.0', description: 'Memory server for AI agents (Honcho-compatible HTTP API)' },
      components: { securitySchemes: { HTTPBearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ HTTPBearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  const { ctx } = composeRuntime(config, deps.database, {
    models,
    now: deps.now,
    onChat: (report) => {
      modelCalls.onChat(report);
      // what each chat used: its tool calls and tokens; an unexpected failure as an error
      app.log[report.outcome === 'error' ? 'error' : 'info'](
        {
          workspace: report.workspaceId,
          reasoningLevel: report.level,
          model: report.model,
          stream: report.stream,
          outcome: report.outcome,
          tools: report.toolCalls.map((c) => (c.ok ? c.name : `${c.name}!`)),
          inputTokens: report.usage.inputTokens,
          outputTokens: report.usage.outputTokens,
          modelCalls: report.modelCalls,
          ms: report.durationMs,
          ...(report.error !== undefined ? { error: report.error } : {}),
        },
        'chat',
      );
    },
  });
  const httpDeps: HttpDeps = {
    ctx,
    readToken: config.useAuth ? createTokenReader(config.jwtSecret) : null,
    mintKey: config.useAuth ? (claims) => mintToken(config.jwtSecret, claims) : null,
  };

  app.get('/health', { schema: { hide: true } }, async (_request, reply) =>
    reply.header('content-type', 'application/json').send('{"status":"ok"}'),
  );
  mountReadiness(app, deps.database.store, deps.workers ?? (() => undefined));
  const jobMetrics = new JobMetrics();
  mountMetrics(app, deps.database.store, deps.database.driver, config.metricsEnabled, modelCalls, jobMetrics);
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  // the reference's second documentation page (contract §1.9): ReDoc, loaded by the browser from
  // its CDN as the reference's framework does (/docs is served from this server)
  app.get('/redoc', { schema: { hide: true } }, async (_request, reply) => reply.header('content-type', 'text/html; charset=utf-8').send(REDOC_PAGE));

  mountV1(app, httpDeps);
  mountV2(app, httpDeps);
  mountV3(app, httpDeps);
  mountMcp(app, httpDeps);
  // the memory inspector (docs/inspector.md): static files, a client of the routes above
  mountStaticPage(app, '/inspector', deps.inspectorAssets ?? fileURLToPath(new URL('../inspector/', import.meta.url)));

  app.setNotFoundHandler((request, reply) => {
    const answer = routes.resolve(request.method, request.url);
    if (answer?.status === 307) return reply.code(307).header('location', answer.location).send();
    if (answer?.status === 405) {
      return reply.code(405).header('allow', answer.allow).header('content-type', 'application/json').send('{"detail":"Method Not Allowed"}');
    }
    return reply.code(404).header('content-type', 'application/json').send('{"detail":"Not Found"}');
  });
  app.setErrorHandler((error: { statusCode?: number; message: string }, request, reply) => {
    // the store failing outside a route's own handling (e.g. /metrics reading the queue)
    if (error instanceof StoreUnavailableError) return reply.code(503).headers(UNAVAILABLE_HEADERS).send({ detail: error.message });
    const status = error.statusCode ?? 500;
    if (status >= 500) {
      request.log.error({ err: error }, 'unhandled error');
      return reply.code(500).send({ detail: 'An unexpected error occurred' });
    }
    return reply.code(status).send({ detail: error.message });
  });

  return {
    app,
    ctx,
    models,
    jobMetrics,
    routes,
    flushLog: log?.flush ?? (() => undefined),
    closeLog: log?.close ?? (() => Promise.resolve()),
    flushUsage: () => usage?.flush() ?? Promise.resolve(),
  };
}
