import { badResponse, parseToolArguments, postJson, readJson, readSse, runCall, runStream, streamedJson, withProviderParams, type CallContext } from '../http-call.js';
import { ModelError, type ChatMessage, type ChatModel, type Completion, type CompletionRequest, type Embedder, type StreamEvent, type ToolCall, type Usage } from '../provider.js';
import type { ChatModelSettings, EmbeddingSettings } from '../settings.js';
import { alternatingTurns, checkDimensions, TransportChatModel, TransportEmbedder } from '../transport-models.js';

/**
 * The `gemini` transport: generateContent / streamGenerateContent and batchEmbedContents of the
 * Gemini API. `json_schema` sends the schema as `responseJsonSchema`, `json_object` asks only for
 * `application/json`. Gemini has no call ids: ids are made up and mapped back to names.
 */

export const GEMINI_BASE_URL = 'https://generativelanguage.googleapis.com';

const base = (baseUrl: string | undefined) => `${(baseUrl ?? GEMINI_BASE_URL).replace(/\/+$/, '')}/v1beta`;
const headersOf = (apiKey: string | undefined): Record<string, string> => (apiKey ? { 'x-goog-api-key': apiKey } : {});

function wire(messages: ChatMessage[]): { systemInstruction?: unknown; contents: unknown[] } {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n\n');
  const names = new Map<string, string>();
  const { turns: contents, add: push } = alternatingTurns<'user' | 'model'>();
  for (const message of messages) {
    if (message.role === 'system') continue;
    if (message.role === 'user') push('user', { text: message.content });
    else if (message.role === 'tool') {
      push('user', { functionResponse: { name: names.get(message.toolCallId) ?? message.toolCallId, response: { content: message.content } } });
    } else {
      if (message.content !== '') push('model', { text: message.content });
      for (const call of message.toolCalls ?? []) {
        names.set(call.id, call.name);
        push('model', { functionCall: { name: call.name, args: parseToolArguments(call.arguments) } });
      }
    }
  }
  return { ...(system ? { systemInstruction: { parts: [{ text: system }] } } : {}), contents };
}

const usageOf = (metadata: any): Usage => ({
  inputTokens: Number(metadata?.promptTokenCount ?? 0) || 0,
  outputTokens: (Number(metadata?.candidatesTokenCount ?? 0) || 0) + (Number(metadata?.thoughtsTokenCount ?? 0) || 0),
});

export class GeminiChatModel extends TransportChatModel implements ChatModel {
  private callCounter = 0;

  constructor(settings: ChatModelSettings, context: Omit<CallContext, 'module'>) {
    super('gemini', settings, context);
  }

  private url(stream: boolean): string {
    const model = encodeURIComponent(this.settings.model);
    return `${base(this.settings.baseUrl)}/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`;
  }

  body(request: CompletionRequest): Record<string, unknown> {
    const s = this.settings;
    const generationConfig: Record<string, unknown> = { maxOutputTokens: request.maxOutputTokens ?? s.maxOutputTokens };
    if (s.temperature !== undefined) generationConfig.temperature = s.temperature;
    if (s.topP !== undefined) generationConfig.topP = s.topP;
    if (s.topK !== undefined) generationConfig.topK = s.topK;
    if (s.seed !== undefined) generationConfig.seed = s.seed;
    if (s.frequencyPenalty !== undefined) generationConfig.frequencyPenalty = s.frequencyPenalty;
    if (s.presencePenalty !== undefined) generationConfig.presencePenalty = s.presencePenalty;
    if (s.stopSequences?.length) generationConfig.stopSequences = s.stopSequences;
    if (s.thinkingBudgetTokens !== undefined) generationConfig.thinkingConfig = { thinkingBudget: s.thinkingBudgetTokens };
    else if (s.thinkingEffort !== undefined) generationConfig.thinkingConfig = { thinkingLevel: s.thinkingEffort };
    if (request.json) {
      const mode = request.json.mode ?? s.structuredOutputMode;
      if (mode !== 'none') generationConfig.responseMimeType = 'application/json';
      if (mode === 'json_schema') generationConfig.responseJsonSchema = request.json.schema;
    }
    const body: Record<string, unknown> = { ...wire(request.messages), generationConfig };
    if (request.tools?.length) {
      body.tools = [{ functionDeclarations: request.tools.map((tool) => ({ name: tool.name, description: tool.description, parametersJsonSchema: tool.parameters })) }];
      if (request.toolChoice) body.toolConfig = { functionCallingConfig: { mode: request.toolChoice === 'required' ? 'ANY' : request.toolChoice.toUpperCase() } };
    }
    return withProviderParams(body, s.providerParams, ['generationConfig']);
  }

  private callsOf(parts: any[]): ToolCall[] {
    return parts
      .filter((part) => part?.functionCall)
      .map((part) => ({ id: String(part.functionCall.id ?? `call_${++this.callCounter}`), name: String(part.functionCall.name), arguments: JSON.stringify(part.functionCall.args ?? {}) }));
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    const body = this.body(request);
    return runCall(this.callContext(request), request.signal, async (signal) => {
      const answer = await readJson(await postJson(this.url(false), headersOf(this.settings.apiKey), body, signal, 'gemini'), 'gemini');
      const candidate = answer?.candidates?.[0];
      if (!candidate) {
        const blocked = answer?.promptFeedback?.blockReason;
        if (blocked) throw new ModelError(`gemini refused the prompt: ${blocked}`, false, undefined, undefined, { reason: 'client_error' });
        throw badResponse('gemini', 'candidates');
      }
      const parts: any[] = candidate.content?.parts ?? [];
      const text = parts.filter((part) => typeof part.text === 'string' && !part.thought).map((part) => part.text).join('');
      const usage = usageOf(answer.usageMetadata);
      return { value: { text, toolCalls: this.callsOf(parts), usage, finishReason: String(candidate.finishReason ?? 'STOP') }, usage };
    });
  }

  stream(request: CompletionRequest): AsyncIterable<StreamEvent> {
    const body = this.body(request);
    const callsOf = (parts: any[]) => this.callsOf(parts);
    return runStream(
      this.callContext(request),
      request.signal,
      (signal) => postJson(this.url(true), headersOf(this.settings.apiKey), body, signal, 'gemini'),
      async function* (response, touch) {
        if (!response.body) throw badResponse('gemini', 'a body');
        let usage: Usage = { inputTokens: 0, outputTokens: 0 };
        let finishReason = 'STOP';
        for await (const event of readSse(response.body, touch)) {
          const chunk = streamedJson('gemini', event.data);
          if (chunk.usageMetadata) usage = usageOf(chunk.usageMetadata);
          const candidate = chunk.candidates?.[0];
          if (!candidate) continue;
          const parts: any[] = candidate.content?.parts ?? [];
          for (const part of parts) if (typeof part.text === 'string' && part.text !== '' && !part.thought) yield { type: 'text', text: part.text };
          for (const call of callsOf(parts)) yield { type: 'tool_call', call };
          if (candidate.finishReason) finishReason = String(candidate.finishReason);
        }
        yield { type: 'done', usage, finishReason };
      },
    );
  }
}

/** Most texts in one batchEmbedContents request (the API's limit is 100). */
const BATCH_SIZE = 100;

export class GeminiEmbedder extends TransportEmbedder implements Embedder {
  constructor(settings: EmbeddingSettings, context: CallContext) {
    super('gemini', settings, context, BATCH_SIZE);
  }

  protected async embedBatch(texts: string[], signal: AbortSignal | undefined, workspaceId: string | undefined): Promise<number[][]> {
    const model = `models/${this.settings.model}`;
    const url = `${base(this.settings.baseUrl)}/models/${encodeURIComponent(this.settings.model)}:batchEmbedContents`;
    const body = {
      requests: texts.map((text) => ({
        model,
        content: { parts: [{ text }] },
        ...(this.settings.dimensions !== undefined ? { outputDimensionality: this.settings.dimensions } : {}),
      })),
    };
    return runCall({ ...this.context, workspaceId }, signal, async (callSignal) => {
      const answer = await readJson(await postJson(url, headersOf(this.settings.apiKey), body, callSignal, 'gemini'), 'gemini');
      const embeddings: any[] = Array.isArray(answer?.embeddings) ? answer.embeddings : [];
      if (embeddings.length !== texts.length) throw badResponse('gemini', `${texts.length} embeddings (got ${embeddings.length})`);
      const vectors = embeddings.map((item) => item?.values);
      for (const vector of vectors) {
        if (!Array.isArray(vector) || vector.length === 0) throw badResponse('gemini', 'values for each embedding');
        checkDimensions(vector.length, this);
      }
      return { value: vectors as number[][], usage: { inputTokens: 0, outputTokens: 0 } };
    });
  }
}
