import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ADMIN_CLAIMS, AuthError, type Claims } from '../http/shared/auth.js';
import type { HttpDeps } from '../http/shared/route.js';
import { createMcpServer } from './server.js';

export const MCP_PATH = '/mcp';
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** scheme://host[:port] of the request, as the client reached this server. */
function originOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

/** A JSON-RPC error envelope without an id, as the transport writes its own refusals. */
function rpcError(reply: FastifyReply, status: number, code: number, message: string, headers: Record<string, string> = {}) {
  return reply
    .code(status)
    .headers(headers)
    .header('content-type', 'application/json')
    .send(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** The headers the transport reads (the others would only cost their copying). */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'];

function webHeaders(request: FastifyRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of TRANSPORT_HEADERS) {
    const value = request.headers[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/**
 * The MCP server at `/mcp` (Streamable HTTP, stateless: every POST gets a server of its own and
 * an answer as JSON; no session id), and its RFC 9728 metadata. With AUTH_USE_AUTH a request
 * needs a valid bearer key (the API's), else 401 with `WWW-Authenticate` pointing at the metadata;
 * each tool then checks the key as the routes it stands for do (api.ts).
 */
export function mountMcp(app: FastifyInstance, deps: HttpDeps): void {
  const metadata = async (request: FastifyRequest, reply: FastifyReply) =>
    reply
      .header('content-type', 'application/json')
      .header('cache-control', 'public, max-age=3600')
      .send(JSON.stringify({ resource: `${originOf(request)}${MCP_PATH}`, resource_name: 'Engram', bearer_methods_supported: ['header'] }));
  // the path RFC 9728 derives from the resource `/mcp`, and the root one clients also try
  app.get(RESOURCE_METADATA_PATH, { schema: { hide: true } }, metadata);
  app.get(`${RESOURCE_METADATA_PATH}${MCP_PATH}`, { schema: { hide: true } }, metadata);

  app.post(MCP_PATH, { schema: { hide: true } }, async (request, reply) => {
    let claims: Claims = ADMIN_CLAIMS;
    if (deps.readToken !== null) {
      try {
        claims = deps.readToken(request.headers.authorization);
      } catch (error) {
        if (!(error instanceof AuthError)) throw error;
        const pointer = `resource_metadata="${originOf(request)}${RESOURCE_METADATA_PATH}${MCP_PATH}"`;
        const challenge = request.headers.authorization === undefined ? `Bearer ${pointer}` : `Bearer error="invalid_token", ${pointer}`;
        return reply.code(401).header('www-authenticate', challenge).header('content-type', 'application/json').send(JSON.stringify({ detail: error.detail }));
      }
    }
    let parsedBody: unknown;
    const text = request.body;
    try {
      parsedBody = typeof text === 'string' && text !== '' ? JSON.parse(text) : undefined;
    } catch {
      return rpcError(reply, 400, -32700, 'Parse error: Invalid JSON');
    }
    if (parsedBody === undefined) return rpcError(reply, 400, -32700, 'Parse error: Invalid JSON');

    const header = request.headers['x-honcho-workspace-id'];
    const server = createMcpServer(deps.ctx, { claims, workspaceId: typeof header === 'string' ? header : undefined, log: request.log });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    // not closed after the answer: nothing of it outlives the request (JSON answers, no stream,
    // no timer), and closing fails every pending handler with an error made for the purpose
    await server.connect(transport);
    const response = await transport.handleRequest(new Request(`${originOf(request)}${request.url}`, { method: 'POST', headers: webHeaders(request) }), { parsedBody });
    reply.code(response.status);
    response.headers.forEach((value, name) => void reply.header(name, value));
    return reply.send(await response.text());
  });

  // stateless: no stream to open and no session to end (the SDK's clients expect 405 here)
  const notAllowed = async (_request: FastifyRequest, reply: FastifyReply) => rpcError(reply, 405, -32000, 'Method not allowed.', { allow: 'POST' });
  app.get(MCP_PATH, { schema: { hide: true } }, notAllowed);
  app.delete(MCP_PATH, { schema: { hide: true } }, notAllowed);
}
