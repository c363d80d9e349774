import { Ajv, type ValidateFunction } from 'ajv';
import type { ChatMessage, ChatModel, CompletionRequest, JsonSchema, ModelModule, ToolCall, ToolSpec, Usage } from '../../llm/provider.js';
import { isStoreUnavailable } from '../../storage/unavailable.js';
import { tokenCount } from '../text/token-count.js';
import type { ToolCallRecord } from '../chat-report.js';
import { DEFAULT_CHAT_LIMITS } from '../reasoning-settings.js';

/** LLM_MAX_TOOL_OUTPUT_CHARS's default: the most characters of one tool result the model is shown. */
const MAX_TOOL_OUTPUT_CHARS = DEFAULT_CHAT_LIMITS.maxToolOutputChars;

/** A tool the model may call. `execute` gets arguments already validated against `parameters`. */
export interface Tool extends ToolSpec {
  execute(args: Record<string, unknown>, signal?: AbortSignal): Promise<string>;
}


export interface ToolLoopOptions {
  model: ChatModel;
  module: ModelModule;
  messages: ChatMessage[];
  tools: Tool[];
  /** Turns in which the model may call tools; at the limit one last call is made without tools. */
  maxIterations: number;
  maxOutputTokens?: number;
  /** `required` applies to the first turn only (later turns are `auto`), so the loop can end. */
  toolChoice?: 'auto' | 'required' | 'none';
  maxToolOutputChars?: number;
  /** Input over this many tokens drops the oldest tool turns (the system message and the first user message stay). */
  maxInputTokens?: number;
  signal?: AbortSignal;
  /**
   * Stream every turn and pass the answer's text on as it comes. A turn that ends in tool calls
   * rarely has text; when it has, that text has been passed on too (it is part of what the model said).
   */
  onText?: (text: string) => void;
  /**
   * The final answer must be JSON: asked for on turns sent without tools (some transports cannot
   * mix a JSON answer with tools), checked with `validate` (undefined = valid, else the problem);
   * an answer that does not validate gets one retry, then a `FinalAnswerError`.
   */
  json?: { name: string; schema: JsonSchema; validate: (text: string) => string | undefined };
}

export interface ToolLoopResult {
  text: string;
  usage: Usage;
  toolCalls: ToolCallRecord[];
  /** Model calls made, retries included. */
  modelCalls: number;
}

/** The final answer did not validate against the JSON Schema asked for, even after a retry. */
export class FinalAnswerError extends Error {
  constructor(
    message: string,
    readonly answer: string,
  ) {
    super(message);
    this.name = 'FinalAnswerError';
  }
}

const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: true });
const validators = new WeakMap<object, ValidateFunction>();

function validatorOf(schema: JsonSchema): ValidateFunction {
  let validate = validators.get(schema);
  if (!validate) validators.set(schema, (validate = ajv.compile(schema)));
  return validate;
}

const describeErrors = (validate: ValidateFunction) =>
  (validate.errors ?? []).map((e) => `${e.instancePath || 'arguments'} ${e.message ?? 'is invalid'}`).join('; ');

/** Cuts a tool's output to `max` characters, saying so. */
export function capToolOutput(text: string, max = MAX_TOOL_OUTPUT_CHARS): string {
  if (text.length <= max) return text;
  const note = `\n[cut: ${text.length - max} more characters]`;
  let cut = text.slice(0, Math.max(0, max - note.length));
  // never leave half of a surrogate pair
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return cut + note;
}

/**
 * Runs one tool call: the model's output is untrusted, so an unknown tool, arguments that are
 * not JSON or do not validate, and a tool that throws all become an error text for the model.
 * An abort is the only error that escapes.
 */
async function runToolCall(call: ToolCall, tools: Map<string, Tool>, maxChars: number, signal: AbortSignal | undefined): Promise<{ output: string; ok: boolean }> {
  const tool = tools.get(call.name);
  if (!tool) return { output: `Error: there is no tool named "${call.name}". Tools: ${[...tools.keys()].join(', ') || 'none'}.`, ok: false };
  let args: unknown;
  try {
    args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch {
    return { output: `Error: the arguments of ${call.name} are not valid JSON.`, ok: false };
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return { output: `Error: the arguments of ${call.name} must be a JSON object.`, ok: false };
  const validate = validatorOf(tool.parameters);
  if (!validate(args)) return { output: `Error: invalid arguments for ${call.name}: ${describeErrors(validate)}.`, ok: false };
  try {
    return { output: capToolOutput(await tool.execute(args as Record<string, unknown>, signal), maxChars), ok: true };
  } catch (error) {
    if (signal?.aborted) throw signal.reason ?? error;
    // the database being away is no matter for the model: the request or job sees it (503, attempt given back)
    if (isStoreUnavailable(error)) throw error;
    return { output: `Error: ${call.name} failed: ${error instanceof Error ? error.message : String(error)}`, ok: false };
  }
}

/**
 * Asks the model, runs the tools it calls, gives it their results, and again, until it answers
 * without calling a tool: the answer. An empty answer gets one retry; after `maxIterations`
 * turns with tools one last call is made without them. Used by chat and by the dream specialists.
 */
export async function runToolLoop(options: ToolLoopOptions): Promise<ToolLoopResult> {
  const { model, module, tools, signal } = options;
  const maxChars = options.maxToolOutputChars ?? MAX_TOOL_OUTPUT_CHARS;
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const specs: ToolSpec[] = tools.map(({ name, description, parameters }) => ({ name, description, parameters }));
  const messages = [...options.messages];
  const usage: Usage = { inputTokens: 0, outputTokens: 0 };
  const log: ToolCallRecord[] = [];
  let modelCalls = 0;

  const tokensOf = new WeakMap<ChatMessage, number>();
  const textOf = (m: ChatMessage) => (m.role === 'assistant' ? m.content + (m.toolCalls ?? []).map((c) => c.name + c.arguments).join('') : m.content);
  const tokens = (m: ChatMessage) => {
    let n = tokensOf.get(m);
    if (n === undefined) tokensOf.set(m, (n = tokenCount(textOf(m), options.maxInputTokens! + 1) + 4));
    return n;
  };
  const trimInput = () => {
    // a token is at least one UTF-8 byte: input whose bytes fit the limit needs no counting
    const bytes = messages.reduce((sum, m) => sum + Buffer.byteLength(textOf(m), 'utf8') + 4, 0);
    if (bytes <= options.maxInputTokens!) return;
    let total = messages.reduce((sum, m) => sum + tokens(m), 0);
    while (total > options.maxInputTokens!) {
      const first = messages.findIndex((m, i) => i > 0 && m.role === 'assistant');
      if (first === -1) return;
      let end = first + 1;
      while (end < messages.length && messages[end]!.role === 'tool') end++;
      for (const dropped of messages.splice(first, end - first)) total -= tokens(dropped);
    }
  };

  const call = async (withTools: boolean, turn: number) => {
    signal?.throwIfAborted();
    if (options.maxInputTokens !== undefined) trimInput();
    const request: CompletionRequest = { module, messages: [...messages], maxOutputTokens: options.maxOutputTokens, signal };
    if (withTools && specs.length > 0) {
      request.tools = specs;
      const choice = options.toolChoice === 'required' && turn > 0 ? 'auto' : options.toolChoice;
      if (choice) request.toolChoice = choice;
    } else if (options.json) {
      request.json = { name: options.json.name, schema: options.json.schema };
    }
    modelCalls++;
    if (!options.onText) {
      const answer = await model.complete(request);
      usage.inputTokens += answer.usage.inputTokens;
      usage.outputTokens += answer.usage.outputTokens;
      return { text: answer.text, toolCalls: answer.toolCalls };
    }
    let text = '';
    const toolCalls: ToolCall[] = [];
    for await (const event of model.stream(request)) {
      if (event.type === 'text') {
        text += event.text;
        if (event.text !== '') options.onText(event.text);
      } else if (event.type === 'tool_call') {
        toolCalls.push(event.call);
      } else {
        usage.inputTokens += event.usage.inputTokens;
        usage.outputTokens += event.usage.outputTokens;
      }
    }
    return { text, toolCalls };
  };

  const finish = async (text: string, retried: { empty: boolean }, turn: number): Promise<ToolLoopResult> => {
    let answer = text;
    if (answer.trim() === '' && !retried.empty) {
      retried.empty = true;
      messages.push({ role: 'user', content: 'Your answer was empty. Answer the question now, with what you have found.' });
      answer = (await call(false, turn)).text;
    }
    if (options.json) {
      let problem = options.json.validate(answer);
      if (problem !== undefined) {
        messages.push({ role: 'assistant', content: answer });
        messages.push({ role: 'user', content: `That answer is not valid: ${problem}. Answer again with only one JSON value that validates against the schema.` });
        answer = (await call(false, turn)).text;
        problem = options.json.validate(answer);
        if (problem !== undefined) throw new FinalAnswerError(`The model's answer does not validate against response_format: ${problem}`, answer);
      }
    }
    return { text: answer, usage, toolCalls: log, modelCalls };
  };

  const retried = { empty: false };
  for (let turn = 0; turn < options.maxIterations; turn++) {
    const answer = await call(true, turn);
    if (answer.toolCalls.length === 0) {
      if (answer.text.trim() === '' && !retried.empty) {
        // one retry of an empty turn, still with tools
        retried.empty = true;
        continue;
      }
      return finish(answer.text, retried, turn);
    }
    messages.push({ role: 'assistant', content: answer.text, toolCalls: answer.toolCalls });
    for (const toolCall of answer.toolCalls) {
      signal?.throwIfAborted();
      const started = performance.now();
      const result = await runToolCall(toolCall, byName, maxChars, signal);
      log.push({ name: toolCall.name, arguments: toolCall.arguments, ok: result.ok, outputChars: result.output.length, durationMs: Math.round(performance.now() - started) });
      messages.push({ role: 'tool', toolCallId: toolCall.id, content: result.output });
    }
  }
  const last = await call(false, options.maxIterations);
  return finish(last.text, retried, options.maxIterations);
}
