import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { DomainContext } from '../domain/context.js';
import { DomainError } from '../domain/errors.js';
import { AuthError, type Claims } from '../http/shared/auth.js';
import { FilterTimeLimitError, StoreUnavailableError } from '../storage/store.js';
import { PeerDeletingError } from '../storage/peer-deleting.js';
import { Api, InvalidInput } from './api.js';
import { INSTRUCTIONS } from './instructions.js';
import { ToolError, type ToolSpec } from './tool.js';
import { TOOLS } from './tools/index.js';

export const SERVER_NAME = 'Engram';
export const SERVER_VERSION = '0.1.0';

export const MISSING_WORKSPACE =
  'Missing workspace_id. Pass workspace_id on the next tool call, or name the workspace on the connection (the X-Honcho-Workspace-ID header, or `engram mcp --workspace <id>`) so it is used automatically.';

/** Who is calling and what the connection names. */
export interface McpCaller {
  /** The key's claims; ADMIN_CLAIMS when authentication is off (and over stdio). */
  claims: Claims;
  /** The connection's workspace (X-Honcho-Workspace-ID, `--workspace`). */
  workspaceId?: string;
  /** Where failures the answer does not show are logged. */
  log: { error(object: unknown, message: string): void };
}

/** The API's message for a failure, or undefined for one it does not expect (a bug). */
export function failureMessage(error: unknown): string | undefined {
  if (error instanceof AuthError) return error.detail;
  if (error instanceof InvalidInput || error instanceof ToolError || error instanceof DomainError) return error.message;
  if (error instanceof StoreUnavailableError || error instanceof FilterTimeLimitError || error instanceof PeerDeletingError) return error.message;
  return undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

async function callTool(spec: ToolSpec, args: Record<string, unknown>, api: Api, caller: McpCaller, signal: AbortSignal): Promise<CallToolResult> {
  const workspace = (argument: string | undefined) => {
    const id = nonEmpty(argument) ?? nonEmpty(caller.workspaceId) ?? caller.claims.workspaceId;
    if (id === undefined) throw new ToolError(MISSING_WORKSPACE);
    return id;
  };
  try {
    const answer = await spec.run(args as never, { api, workspace, signal });
    return { content: [{ type: 'text', text: answer.text }], structuredContent: answer.data };
  } catch (error) {
    let message = failureMessage(error);
    if (message === undefined) {
      caller.log.error({ err: error, tool: spec.name }, 'tool failed unexpectedly');
      message = 'An unexpected error occurred';
    }
    return { content: [{ type: 'text', text: `${spec.failure}: ${message}` }], isError: true };
  }
}

/**
 * An MCP server with every tool, for one caller: made per HTTP request (the transport is
 * stateless) or once for a stdio connection. Its tools call the domain in this process.
 */
export function createMcpServer(ctx: DomainContext, caller: McpCaller): McpServer {
  const server = new McpServer({ name: SERVER_NAME, version: SERVER_VERSION }, { instructions: INSTRUCTIONS, capabilities: { tools: {} }, jsonSchemaValidator: VALIDATOR });
  const api = new Api(ctx, caller.claims);
  for (const { spec, config } of REGISTRATIONS) {
    server.registerTool(spec.name, config, (args: Record<string, unknown>, extra: { signal: AbortSignal }) => callTool(spec, args, api, caller, extra.signal));
  }
  return server;
}

/** One for every server: each would otherwise make an Ajv of its own (about half a tool call's CPU). */
const VALIDATOR = new AjvJsonSchemaValidator();

/**
 * Each tool's registration, its schemas made once: a server is made per HTTP request, and a
 * zod object made anew would be compiled anew on its first parse (most of a call's cost).
 */
const REGISTRATIONS = TOOLS.map((spec) => ({
  spec,
  config: { title: spec.title, description: spec.description, inputSchema: z.object(spec.input), outputSchema: z.object(spec.output), annotations: spec.annotations },
}));
