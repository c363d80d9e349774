import { badResponse, postJson, readJson, readSse, runCall, runStream, streamedJson, withProviderParams, type CallContext } from '../http-call.js';
import type { ChatMessage, ChatModel, Completion, CompletionRequest, Embedder, StreamEvent, ToolCall, Usage } from '../provider.js';
import { ModelError } from '../provider.js';
import type { ChatModelSettings, EmbeddingSettings } from '../settings.js';
import { checkDimensions, TransportChatModel, TransportEmbedder } from '../transport-models.js';

/**
 * The `openai` transport: the Chat Completions and Embeddings APIs, which OpenAI and every
 * OpenAI-compatible server (Ollama, vLLM, LM Studio, llama.cpp server, OpenRouter) serve.
 * Any model name; an empty key sends no Authorization header.
 */

export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

const baseUrlOf = (baseUrl: string | undefined) => (baseUrl ?? OPENAI_BASE_URL).replace(/\/+$/, '');

function authHeaders(apiKey: string | undefined): Record<string, string> {
  return apiKey ? { authorization: `Bearer ${apiKey}` } : {};
}

function wireMessages(messages: ChatMessage[]): unknown[] {
  return messages.map((message) => {
    switch (message.role) {
      case 'assistant':
        return {
          role: 'assistant',
          content: message.content === '' && message.toolCalls?.length ? null : message.content,
          ...(message.toolCalls?.length
            ? { tool_calls: message.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })) }
            : {}),
        };
      case 'tool':
        return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
      default:
        return { role: message.role, content: message.content };
    }
  });
}

function usageOf(usage: any): Usage {
  return { inputTokens: Number(usage?.prompt_tokens ?? 0) || 0, outputTokens: Number(usage?.completion_tokens ?? 0) || 0 };
}

export class OpenAiChatModel extends TransportChatModel implements ChatModel {
  private readonly url: string;

  constructor(settings: ChatModelSettings, context: Omit<CallContext, 'module'>) {
    super('openai', settings, context);
    this.url = `${baseUrlOf(settings.baseUrl)}/chat/completions`;
  }

  /** The request body (exported for tests of its shape). */
  body(request: CompletionRequest, stream: boolean): Record<string, unknown> {
    const s = this.settings;
    const body: Record<string, unknown> = { model: s.model, messages: wireMessages(request.messages) };
    const maxTokens = request.maxOutputTokens ?? s.maxOutputTokens;
    // OpenAI's reasoning models refuse max_tokens; servers compatible with the older API may not know max_completion_tokens
    if (s.baseUrl === undefined) body.max_completion_tokens = maxTokens;
    else body.max_tokens = maxTokens;
    if (s.temperature !== undefined) body.temperature = s.temperature;
    if (s.topP !== undefined) body.top_p = s.topP;
    if (s.frequencyPenalty !== undefined) body.frequency_penalty = s.frequencyPenalty;
    if (s.presencePenalty !== undefined) body.presence_penalty = s.presencePenalty;
    if (s.seed !== undefined) body.seed = s.seed;
    if (s.stopSequences?.length) body.stop = s.stopSequences;
    if (s.thinkingEffort !== undefined) body.reasoning_effort = s.thinkingEffort;
    if (request.json) {
      const mode = request.json.mode ?? s.structuredOutputMode;
      if (mode === 'json_schema') {
        body.response_format = { type: 'json_schema', json_schema: { name: request.json.name, schema: request.json.schema, strict: request.json.strict ?? false } };
      } else if (mode === 'json_object') {
        body.response_format = { type: 'json_object' };
      }
    }
    if (request.tools?.length) {
      body.tools = request.tools.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } }));
      if (request.toolChoice) body.tool_choice = request.toolChoice;
    }
    if (stream) {
      body.stream = true;
      body.stream_options = { include_usage: true };
    }
    return withProviderParams(body, s.providerParams);
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    const body = this.body(request, false);
    return runCall(this.callContext(request), request.signal, async (signal) => {
      const answer = await readJson(await postJson(this.url, authHeaders(this.settings.apiKey), body, signal, 'openai'), 'openai');
      const choice = answer?.choices?.[0];
      if (!choice?.message) throw badResponse('openai', 'choices[0].message');
      const toolCalls: ToolCall[] = (choice.message.tool_calls ?? []).map((call: any) => ({
        id: String(call.id ?? ''),
        name: String(call.function?.name ?? ''),
        arguments: typeof call.function?.arguments === 'string' ? call.function.arguments : JSON.stringify(call.function?.arguments ?? {}),
      }));
      const usage = usageOf(answer.usage);
      const text = typeof choice.message.content === 'string' ? choice.message.content : '';
      return { value: { text, toolCalls, usage, finishReason: String(choice.finish_reason ?? 'stop') }, usage };
    });
  }

  stream(request: CompletionRequest): AsyncIterable<StreamEvent> {
    const body = this.body(request, true);
    return runStream(
      this.callContext(request),
      request.signal,
      (signal) => postJson(this.url, authHeaders(this.settings.apiKey), body, signal, 'openai'),
      (response, touch) => parseOpenAiStream(response, touch),
    );
  }
}

async function* parseOpenAiStream(response: Response, touch: () => void): AsyncGenerator<StreamEvent> {
  if (!response.body) throw badResponse('openai', 'a body');
  const calls = new Map<number, ToolCall>();
  let usage: Usage = { inputTokens: 0, outputTokens: 0 };
  let finishReason = 'stop';
  for await (const event of readSse(response.body, touch)) {
    if (event.data.trim() === '[DONE]') break;
    const chunk = streamedJson('openai', event.data);
    if (chunk.error) throw new ModelError(`openai stream failed: ${chunk.error.message ?? JSON.stringify(chunk.error)}`, true, undefined, undefined, { reason: 'server_error' });
    if (chunk.usage) usage = usageOf(chunk.usage);
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    const delta = choice.delta ?? {};
    if (typeof delta.content === 'string' && delta.content !== '') yield { type: 'text', text: delta.content };
    for (const part of delta.tool_calls ?? []) {
      const index = Number(part.index ?? 0);
      const call = calls.get(index) ?? { id: '', name: '', arguments: '' };
      if (part.id) call.id = part.id;
      if (part.function?.name) call.name += part.function.name;
      if (typeof part.function?.arguments === 'string') call.arguments += part.function.arguments;
      calls.set(index, call);
    }
    if (choice.finish_reason) finishReason = String(choice.finish_reason);
  }
  for (const index of [...calls.keys()].sort((a, b) => a - b)) yield { type: 'tool_call', call: calls.get(index)! };
  yield { type: 'done', usage, finishReason };
}

/** OpenAI `text-embedding-3-*` models take a size; other models and servers may refuse the field. */
const takesDimensions = (model: string) => /^text-embedding-3/.test(model);

/**
 * A base64 embedding (`encoding_format: base64`): little-endian float32 values. Undefined when it
 * is no whole number of them (a bad response, reported by the caller's check).
 */
function decodeFloat32(text: string): number[] | undefined {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length === 0 || bytes.length % 4 !== 0) return undefined;
  const values = new Array<number>(bytes.length / 4);
  for (let i = 0; i < values.length; i++) values[i] = bytes.readFloatLE(i * 4);
  return values;
}

/** Most texts in one embeddings request. */
const BATCH_SIZE = 256;

export class OpenAiEmbedder extends TransportEmbedder implements Embedder {
  private readonly url: string;

  constructor(settings: EmbeddingSettings, context: CallContext) {
    super('openai', settings, context, BATCH_SIZE);
    this.url = `${baseUrlOf(settings.baseUrl)}/embeddings`;
  }

  protected async embedBatch(texts: string[], signal: AbortSignal | undefined, workspaceId: string | undefined): Promise<number[][]> {
    const body: Record<string, unknown> = { model: this.settings.model, input: texts };
    if (this.settings.dimensions !== undefined && takesDimensions(this.settings.model)) body.dimensions = this.settings.dimensions;
    if (this.settings.encodingFormat === 'base64') body.encoding_format = 'base64';
    return runCall({ ...this.context, workspaceId }, signal, async (callSignal) => {
      const answer = await readJson(await postJson(this.url, authHeaders(this.settings.apiKey), body, callSignal, 'openai'), 'openai');
      const data: any[] = Array.isArray(answer?.data) ? answer.data : [];
      if (data.length !== texts.length) throw badResponse('openai', `${texts.length} embeddings (got ${data.length})`);
      const ordered = [...data].sort((a, b) => Number(a.index ?? 0) - Number(b.index ?? 0));
      // base64 when asked for it; a server that answers numbers anyway is read as well
      const vectors = ordered.map((item) => (typeof item.embedding === 'string' ? decodeFloat32(item.embedding) : item.embedding));
      this.check(vectors);
      const tokens = Number(answer.usage?.prompt_tokens ?? 0) || 0;
      return { value: vectors, usage: { inputTokens: tokens, outputTokens: 0 } };
    });
  }

  private check(vectors: unknown[]): asserts vectors is number[][] {
    for (const vector of vectors) {
      if (!Array.isArray(vector) || vector.length === 0 || vector.some((v) => typeof v !== 'number' || !Number.isFinite(v))) {
        throw badResponse('openai', 'a list of finite numbers (or their base64 float32 bytes) for each embedding');
      }
      checkDimensions(vector.length, this);
    }
  }
}
