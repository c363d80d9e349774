import fc from 'fast-check';
import { operationSeed } from './fuzz-engine.js';
import { addPrototypeKey, oddValue, rawBodyText, replaceSomewhere } from './mutations.js';
import { valueFor, type FixtureIds, type JsonSchema } from './schema-values.js';

/**
 * The MCP server at /mcp, fuzzed: for every tool of its `tools/list`, arguments from the tool's
 * input schema (valid, one place made odd, a prototype-named key added, or anything), and
 * JSON-RPC bodies of every kind (broken JSON, batches, unknown methods, odd ids and params, odd
 * headers). What must hold: no 5xx, an answer in time, JSON-RPC answers that parse, and no tool
 * answering "An unexpected error occurred" (a failure the tool did not expect).
 */

export interface McpFuzzOptions {
  baseUrl: string;
  seed: number;
  runsPerTool: number;
  ids: FixtureIds;
  timeoutMs?: number;
  /** Authorization headers to pick from per request (auth on), the admin's first; none when absent. */
  authorizations?: (string | undefined)[];
  isAlive?: () => boolean;
}

export interface McpFuzzResult {
  tools: number;
  requests: number;
  statuses: Record<number, number>;
  /** Tool calls answered with a result, and how many of them were tool errors. */
  toolResults: number;
  toolErrors: number;
  failures: string[];
}

interface McpRequest {
  body: string;
  accept: string;
  contentType: string;
  authorization?: string;
  /**
   * A single tools/call with an object of arguments: its answer must be a result (arguments that
   * are not an object fail the SDK's check of the request itself, a JSON-RPC error).
   */
  isToolCall: boolean;
}

const ACCEPT = 'application/json, text/event-stream';
const METHODS = ['tools/call', 'tools/list', 'initialize', 'ping', 'notifications/initialized', 'notifications/cancelled', 'resources/list', 'prompts/list', 'completion/complete', 'logging/setLevel'];

function rpc(method: string, params: unknown, id: unknown = 1): Record<string, unknown> {
  return params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params };
}

/** Arguments for one tool: mostly from its schema, some mutated, some anything. */
function argumentsFor(schema: JsonSchema, ids: FixtureIds): fc.Arbitrary<unknown> {
  const valid = valueFor(schema, ids);
  return fc.oneof(
    { arbitrary: valid, weight: 6 },
    { arbitrary: replaceSomewhere(valid), weight: 2 },
    { arbitrary: addPrototypeKey(valid), weight: 1 },
    { arbitrary: oddValue, weight: 1 },
  );
}

/** JSON-RPC bodies that are not one well-formed tool call. */
function oddBodies(toolNames: string[], ids: FixtureIds): fc.Arbitrary<{ body: string; accept: string; contentType: string }> {
  const message = fc.oneof(
    fc.record({ method: fc.oneof(fc.constantFrom(...METHODS), fc.string({ maxLength: 12 })), id: oddValue, params: oddValue }).map(({ method, id, params }) => rpc(method, params, id)),
    fc.record({ name: fc.oneof(fc.constantFrom(...toolNames), fc.string({ maxLength: 12 })), args: oddValue }).map(({ name, args }) => rpc('tools/call', { name, arguments: args })),
    fc.record({ id: oddValue, result: oddValue }).map(({ id, result }) => ({ jsonrpc: '2.0', id, result })),
    fc.record({ version: oddValue, method: fc.constantFrom(...METHODS) }).map(({ version, method }) => ({ jsonrpc: version, id: 1, method })),
    fc.constant(rpc('initialize', { protocolVersion: '1999-01-01', capabilities: {}, clientInfo: { name: 'fuzz', version: '0' } })),
    valueFor({ type: 'object' }, ids),
  );
  const text = fc.oneof(
    { arbitrary: message.map((m) => JSON.stringify(m)), weight: 4 },
    { arbitrary: fc.array(message, { maxLength: 4 }).map((batch) => JSON.stringify(batch)), weight: 2 },
    { arbitrary: rawBodyText, weight: 2 },
  );
  return fc.record({
    body: text,
    accept: fc.oneof({ arbitrary: fc.constant(ACCEPT), weight: 6 }, { arbitrary: fc.constantFrom('application/json', 'text/event-stream', '*/*', ''), weight: 1 }),
    contentType: fc.oneof({ arbitrary: fc.constant('application/json'), weight: 6 }, { arbitrary: fc.constantFrom('text/plain', 'application/json; charset=utf-8', ''), weight: 1 }),
  });
}

async function post(baseUrl: string, req: McpRequest, timeoutMs: number): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = { accept: req.accept, 'content-type': req.contentType };
  if (req.authorization !== undefined) headers.authorization = req.authorization;
  const response = await fetch(`${baseUrl}/mcp`, { method: 'POST', headers, body: req.body, signal: AbortSignal.timeout(timeoutMs) });
  return { status: response.status, text: await response.text() };
}

export async function runMcpFuzz(options: McpFuzzOptions): Promise<McpFuzzResult> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const authorizations = options.authorizations ?? [undefined];
  const listed = await post(options.baseUrl, { body: JSON.stringify(rpc('tools/list', {})), accept: ACCEPT, contentType: 'application/json', authorization: authorizations[0], isToolCall: false }, timeoutMs);
  const tools = (JSON.parse(listed.text) as { result: { tools: { name: string; inputSchema: JsonSchema }[] } }).result.tools;
  const names = tools.map((t) => t.name);
  // the first (the admin's) mostly, so that most calls reach the tools; the others now and then
  const authorization =
    authorizations.length === 1
      ? fc.constant(authorizations[0])
      : fc.oneof({ arbitrary: fc.constant(authorizations[0]), weight: 6 }, { arbitrary: fc.constantFrom(...authorizations.slice(1)), weight: 3 });

  const plans: { label: string; requests: McpRequest[] }[] = tools.map((t, index) => ({
    label: `tools/call ${t.name}`,
    requests: fc.sample(
      fc.tuple(argumentsFor(t.inputSchema, options.ids), authorization).map(([args, auth]) => ({
        body: JSON.stringify(rpc('tools/call', { name: t.name, arguments: args })),
        accept: ACCEPT,
        contentType: 'application/json',
        authorization: auth,
        isToolCall: args !== null && typeof args === 'object' && !Array.isArray(args),
      })),
      { numRuns: options.runsPerTool, seed: operationSeed(options.seed, index) },
    ),
  }));
  plans.push({
    label: 'JSON-RPC bodies',
    requests: fc.sample(
      fc.tuple(oddBodies(names, options.ids), authorization).map(([b, auth]) => ({ ...b, authorization: auth, isToolCall: false })),
      { numRuns: options.runsPerTool * 4, seed: operationSeed(options.seed, tools.length) },
    ),
  });

  const result: McpFuzzResult = { tools: tools.length, requests: 0, statuses: {}, toolResults: 0, toolErrors: 0, failures: [] };
  for (const plan of plans) {
    for (const req of plan.requests) {
      result.requests++;
      const fail = (why: string) => result.failures.push(`${plan.label}: ${why}\nauthorization: ${req.authorization?.slice(0, 60) ?? '(none)'}\nbody: ${req.body.slice(0, 600)}`);
      let response: { status: number; text: string };
      try {
        response = await post(options.baseUrl, req, timeoutMs);
      } catch (error) {
        fail(`no answer: ${error instanceof Error ? error.message : String(error)}${options.isAlive?.() === false ? ' (the server exited)' : ''}`);
        if (options.isAlive?.() === false) return result;
        continue;
      }
      result.statuses[response.status] = (result.statuses[response.status] ?? 0) + 1;
      if (response.status >= 500) {
        fail(`status ${response.status}: ${response.text.slice(0, 300)}`);
        continue;
      }
      if (response.status === 202 || response.status === 401) continue;
      let answer: unknown;
      try {
        answer = JSON.parse(response.text);
      } catch {
        fail(`status ${response.status} with a body that is not JSON: ${response.text.slice(0, 300)}`);
        continue;
      }
      if (req.isToolCall && response.status === 200) {
        const toolResult = (answer as { result?: { isError?: boolean; content?: { text?: string }[] } }).result;
        if (toolResult === undefined) {
          fail(`a tool call answered without a result: ${response.text.slice(0, 300)}`);
          continue;
        }
        result.toolResults++;
        if (toolResult.isError === true) result.toolErrors++;
        const text = toolResult.content?.[0]?.text ?? '';
        if (text.includes('An unexpected error occurred')) fail(`the tool failed unexpectedly: ${text.slice(0, 300)}`);
      }
    }
  }
  return result;
}
