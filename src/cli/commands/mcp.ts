import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import pino from 'pino';
import { databaseOptions, openDatabase } from '../../runtime/database.js';
import { ADMIN_CLAIMS } from '../../http/shared/auth.js';
import { checkVectorDimensions, composeRuntime, workerOf } from '../../runtime/runtime.js';
import { configOrExit } from '../../runtime/serve.js';
import { createMcpServer } from '../../mcp/server.js';

function option(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
}

/** Ends the process once stdin closes (the host went away) or on a signal; `stop` runs first. */
function stopOnEnd(stop: () => Promise<void>): void {
  let stopping = false;
  const end = () => {
    if (stopping) return;
    stopping = true;
    stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.stdin.once('end', end);
  process.stdin.once('close', end);
  process.once('SIGINT', end);
  process.once('SIGTERM', end);
}

/**
 * `engram mcp`: the MCP server over stdio. Only protocol messages go to stdout; logs go to
 * stderr. Over the store it runs as the server does (migrations first, background workers unless
 * RUN_WORKERS=false), with the whole store's reach, as any process holding DATABASE_URL has.
 */
export async function runMcp(args: string[]): Promise<number> {
  const workspaceId = option(args, '--workspace');
  const url = option(args, '--url');
  if (url !== undefined) return forward(url, option(args, '--api-key') ?? process.env.ENGRAM_API_KEY, workspaceId);

  const config = configOrExit();
  const logger = pino({ level: config.logLevel }, pino.destination(2));
  const database = await openDatabase(config.databaseUrl, databaseOptions(config));
  await checkVectorDimensions(config, database);
  const runtime = composeRuntime(config, database, { logger });
  const { ctx } = runtime;
  const worker = config.runWorkers ? workerOf(runtime, logger) : undefined;
  const server = createMcpServer(ctx, { claims: ADMIN_CLAIMS, workspaceId, log: logger });
  stopOnEnd(async () => {
    await server.close();
    await worker?.stop(config.shutdownTimeoutMs);
    // the model calls of the last moments, counted in memory for a short while (model-usage.ts)
    await runtime.usage?.flush();
    await database.driver.close();
  });
  await server.connect(new StdioServerTransport());
  worker?.start();
  logger.info({ workspace: workspaceId ?? null }, 'MCP server on stdio');
  return -1;
}

/** `engram mcp --url`: every message from stdin to the running server's /mcp, and its answers back. */
async function forward(url: string, apiKey: string | undefined, workspaceId: string | undefined): Promise<number> {
  let endpoint: URL;
  try {
    endpoint = new URL(url.endsWith('/mcp') ? url : `${url.replace(/\/+$/, '')}/mcp`);
  } catch {
    console.error(`engram: --url must be the URL of a running Engram, got "${url}"`);
    return 2;
  }
  const headers: Record<string, string> = {};
  if (apiKey !== undefined && apiKey !== '') headers.authorization = `Bearer ${apiKey}`;
  if (workspaceId !== undefined) headers['x-honcho-workspace-id'] = workspaceId;
  const remote = new StreamableHTTPClientTransport(endpoint, { requestInit: { headers } });
  const local = new StdioServerTransport();
  local.onmessage = (message: JSONRPCMessage) => {
    remote.send(message).catch((error: unknown) => {
      // a request the server could not be asked gets an error answer, so the host does not wait
      if ('id' in message && 'method' in message) {
        const text = error instanceof Error ? error.message : String(error);
        void local.send({ jsonrpc: '2.0', id: message.id, error: { code: -32000, message: `Engram at ${endpoint.origin} did not answer: ${text}` } });
      }
    });
  };
  remote.onmessage = (message: JSONRPCMessage) => void local.send(message);
  remote.onerror = (error: Error) => console.error(`engram: ${error.message}`);
  stopOnEnd(() => remote.close());
  await remote.start();
  await local.start();
  return -1;
}
