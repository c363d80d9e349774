import { badResponse, parseToolArguments, postJson, readJson, readSse, runCall, runStream, streamedJson, withProviderParams, type CallContext } from '../http-call.js';
import { ModelError, type ChatMessage, type ChatModel, type Completion, type CompletionRequest, type StreamEvent, type ToolCall, type Usage } from '../provider.js';
import type { ChatModelSettings } from '../settings.js';
import { alternatingTurns, TransportChatModel } from '../transport-models.js';

/**
 * The `anthropic` transport: the Messages API. JSON in `json_schema` mode is asked for as a
 * forced tool whose input schema is the schema (the tool's input is the answer); `json_object`
 * and `none` rely on the prompt. `THINKING_BUDGET_TOKENS` turns on extended thinking.
 */

export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';
const VERSION = '2023-06-01';

function wire(messages: ChatMessage[]): { system?: string; messages: unknown[] } {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n\n');
  const { turns, add: push } = alternatingTurns<'user' | 'assistant'>();
  for (const message of messages) {
    if (message.role === 'system') continue;
    if (message.role === 'user') push('user', { type: 'text', text: message.content });
    else if (message.role === 'tool') push('user', { type: 'tool_result', tool_use_id: message.toolCallId, content: message.content });
    else {
      if (message.content !== '') push('assistant', { type: 'text', text: message.content });
      for (const call of message.toolCalls ?? []) push('assistant', { type: 'tool_use', id: call.id, name: call.name, input: parseToolArguments(call.arguments) });
    }
  }
  return { ...(system ? { system } : {}), messages: turns.map((turn) => ({ role: turn.role, content: turn.parts })) };
}

const usageOf = (usage: any, previous?: Usage): Usage => ({
  inputTokens: Number(usage?.input_tokens ?? previous?.inputTokens ?? 0) || 0,
  outputTokens: Number(usage?.output_tokens ?? previous?.outputTokens ?? 0) || 0,
});

export class AnthropicChatModel extends TransportChatModel implements ChatModel {
  private readonly url: string;

  constructor(settings: ChatModelSettings, context: Omit<CallContext, 'module'>) {
    super('anthropic', settings, context);
    this.url = `${(settings.baseUrl ?? ANTHROPIC_BASE_URL).replace(/\/+$/, '')}/v1/messages`;
  }

  private headers(): Record<string, string> {
    return { 'anthropic-version': VERSION, ...(this.settings.apiKey ? { 'x-api-key': this.settings.apiKey } : {}) };
  }

  /** The name of the forced tool that carries a `json_schema` answer, when there is one. */
  private jsonTool(request: CompletionRequest): string | undefined {
    if (!request.json || (request.json.mode ?? this.settings.structuredOutputMode) !== 'json_schema') return undefined;
    return request.json.name || 'answer';
  }

  body(request: CompletionRequest, stream: boolean): Record<string, unknown> {
    const s = this.settings;
    const body: Record<string, unknown> = { model: s.model, max_tokens: request.maxOutputTokens ?? s.maxOutputTokens, ...wire(request.messages) };
    if (s.temperature !== undefined) body.temperature = s.temperature;
    if (s.topP !== undefined) body.top_p = s.topP;
    if (s.topK !== undefined) body.top_k = s.topK;
    if (s.stopSequences?.length) body.stop_sequences = s.stopSequences;
    if (s.thinkingBudgetTokens !== undefined) body.thinking = { type: 'enabled', budget_tokens: s.thinkingBudgetTokens };
    const tools: unknown[] = (request.tools ?? []).map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.parameters }));
    const jsonTool = this.jsonTool(request);
    if (jsonTool) {
      tools.push({ name: jsonTool, description: 'Give the answer as this tool\'s input.', input_schema: request.json!.schema });
      // extended thinking refuses a forced tool
      body.tool_choice = s.thinkingBudgetTokens === undefined ? { type: 'tool', name: jsonTool } : { type: 'any' };
    } else if (request.tools?.length && request.toolChoice) {
      body.tool_choice = { type: request.toolChoice === 'required' ? 'any' : request.toolChoice };
    }
    if (tools.length > 0) body.tools = tools;
    if (stream) body.stream = true;
    return withProviderParams(body, s.providerParams);
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    const body = this.body(request, false);
    const jsonTool = this.jsonTool(request);
    return runCall(this.callContext(request), request.signal, async (signal) => {
      const answer = await readJson(await postJson(this.url, this.headers(), body, signal, 'anthropic'), 'anthropic');
      if (!Array.isArray(answer?.content)) throw badResponse('anthropic', 'content');
      let text = '';
      const toolCalls: ToolCall[] = [];
      for (const block of answer.content) {
        if (block.type === 'text') text += block.text ?? '';
        else if (block.type === 'tool_use') {
          if (jsonTool && block.name === jsonTool) text = JSON.stringify(block.input ?? {});
          else toolCalls.push({ id: String(block.id), name: String(block.name), arguments: JSON.stringify(block.input ?? {}) });
        }
      }
      const usage = usageOf(answer.usage);
      const finishReason = jsonTool && answer.stop_reason === 'tool_use' && toolCalls.length === 0 ? 'stop' : String(answer.stop_reason ?? 'end_turn');
      return { value: { text, toolCalls, usage, finishReason }, usage };
    });
  }

  stream(request: CompletionRequest): AsyncIterable<StreamEvent> {
    const body = this.body(request, true);
    const jsonTool = this.jsonTool(request);
    return runStream(
      this.callContext(request),
      request.signal,
      (signal) => postJson(this.url, this.headers(), body, signal, 'anthropic'),
      (response, touch) => parseAnthropicStream(response, touch, jsonTool),
    );
  }
}

async function* parseAnthropicStream(response: Response, touch: () => void, jsonTool: string | undefined): AsyncGenerator<StreamEvent> {
  if (!response.body) throw badResponse('anthropic', 'a body');
  const blocks = new Map<number, ToolCall>();
  let usage: Usage = { inputTokens: 0, outputTokens: 0 };
  let finishReason = 'end_turn';
  for await (const event of readSse(response.body, touch)) {
    const data = streamedJson('anthropic', event.data);
    switch (data.type) {
      case 'message_start':
        usage = usageOf(data.message?.usage);
        break;
      case 'content_block_start':
        if (data.content_block?.type === 'tool_use') blocks.set(data.index, { id: String(data.content_block.id), name: String(data.content_block.name), arguments: '' });
        break;
      case 'content_block_delta':
        if (data.delta?.type === 'text_delta') yield { type: 'text', text: String(data.delta.text ?? '') };
        else if (data.delta?.type === 'input_json_delta') {
          const block = blocks.get(data.index);
          if (block) block.arguments += String(data.delta.partial_json ?? '');
        }
        break;
      case 'content_block_stop': {
        const block = blocks.get(data.index);
        if (!block) break;
        const args = block.arguments === '' ? '{}' : block.arguments;
        if (jsonTool && block.name === jsonTool) yield { type: 'text', text: args };
        else yield { type: 'tool_call', call: { ...block, arguments: args } };
        break;
      }
      case 'message_delta':
        usage = usageOf(data.usage, usage);
        if (data.delta?.stop_reason) finishReason = String(data.delta.stop_reason);
        break;
      case 'error':
        throw new ModelError(`anthropic stream failed: ${data.error?.message ?? 'unknown error'}`, true, undefined, undefined, { reason: 'server_error' });
      case 'message_stop':
        yield { type: 'done', usage, finishReason };
        return;
    }
  }
}
