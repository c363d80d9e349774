import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { buildModels, type ModelCallEvent } from '../../src/llm/models.js';
import { ModelError, type StreamEvent } from '../../src/llm/provider.js';
import { startFakeModelServer } from '../support/fake-model-server.js';

const fake = await startFakeModelServer();
afterAll(() => fake.close());
beforeEach(() => fake.reset());

const schema = { type: 'object', properties: { explicit: { type: 'array', items: { type: 'object' } } }, required: ['explicit'] };
const tools = [{ name: 'search_memory', description: 'Search memory', parameters: { type: 'object', properties: { query: { type: 'string' } } } }];

function setup(transport: 'anthropic' | 'gemini', env: Record<string, string> = {}) {
  const events: ModelCallEvent[] = [];
  const key = transport.toUpperCase();
  const config = loadConfig(
    { [`LLM_${key}_API_KEY`]: `${transport}-key`, [`LLM_${key}_BASE_URL`]: fake.url, LLM_MODEL: `${transport}/m-1`, LLM_RETRY_BASE_MS: '10', ...env },
    '/nonexistent/.env',
  );
  return { models: buildModels(config.models, { onModelCall: (e) => events.push(e) }), events };
}

async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('anthropic transport: Messages API', () => {
  it('sends the system prompt apart, the key and version headers, and reads text and usage', async () => {
    const { models, events } = setup('anthropic', { DERIVER_MODEL_CONFIG__TEMPERATURE: '0.5', DERIVER_MODEL_CONFIG__TOP_K: '40' });
    fake.script.chat({ text: 'Alice likes tea', usage: { input: 20, output: 5 } });
    const chat = models.chat('deriver')!;
    expect(chat.name).toBe('anthropic/m-1');
    const answer = await chat.complete({ module: 'deriver', messages: [{ role: 'system', content: 'rules' }, { role: 'user', content: 'hi' }], maxOutputTokens: 300 });
    expect(answer).toEqual({ text: 'Alice likes tea', toolCalls: [], usage: { inputTokens: 20, outputTokens: 5 }, finishReason: 'end_turn' });
    const [request] = fake.requests('chat', 'anthropic');
    expect(request.path).toBe('/v1/messages');
    expect(request.headers['x-api-key']).toBe('anthropic-key');
    expect(request.headers['anthropic-version']).toBe('2023-06-01');
    expect(request.body).toEqual({ model: 'm-1', max_tokens: 300, system: 'rules', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], temperature: 0.5, top_k: 40 });
    expect(events).toMatchObject([{ module: 'deriver', model: 'anthropic/m-1', usage: { inputTokens: 20, outputTokens: 5 } }]);
  });

  it('json_schema mode is a forced tool whose input is the answer; json_object relies on the prompt', async () => {
    const { models } = setup('anthropic');
    fake.script.chat({ toolCalls: [{ name: 'facts', arguments: { explicit: [{ content: 'likes tea' }] } }] });
    const answer = await models.chat('deriver')!.complete({ module: 'deriver', messages: [{ role: 'user', content: 'x' }], json: { name: 'facts', schema } });
    expect(JSON.parse(answer.text)).toEqual({ explicit: [{ content: 'likes tea' }] });
    expect(answer.toolCalls).toEqual([]);
    await models.chat('deriver')!.complete({ module: 'deriver', messages: [{ role: 'user', content: 'x' }], json: { name: 'facts', schema, mode: 'json_object' } });
    const [forced, plain] = fake.requests('chat');
    expect(forced.body.tools).toEqual([{ name: 'facts', description: expect.any(String), input_schema: schema }]);
    expect(forced.body.tool_choice).toEqual({ type: 'tool', name: 'facts' });
    expect(plain.body.tools).toBeUndefined();
  });

  it('tools: calls read back, tool turns sent as tool_use / tool_result blocks, thinking budget sent', async () => {
    const { models } = setup('anthropic', { DIALECTIC_LEVELS__low__MODEL_CONFIG__THINKING_BUDGET_TOKENS: '2048' });
    fake.script.chat({ toolCalls: [{ id: 'toolu_1', name: 'search_memory', arguments: { query: 'tea' } }] });
    const chat = models.chat('dialectic')!;
    const first = await chat.complete({ module: 'dialectic', messages: [{ role: 'user', content: 'q' }], tools, toolChoice: 'required' });
    expect(first.toolCalls).toEqual([{ id: 'toolu_1', name: 'search_memory', arguments: '{"query":"tea"}' }]);
    expect(first.finishReason).toBe('tool_use');
    await chat.complete({
      module: 'dialectic',
      messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'looking', toolCalls: first.toolCalls }, { role: 'tool', toolCallId: 'toolu_1', content: 'tea daily' }],
      tools,
    });
    const [one, two] = fake.requests('chat');
    expect(one.body.tools).toEqual([{ name: 'search_memory', description: 'Search memory', input_schema: tools[0].parameters }]);
    expect(one.body.tool_choice).toEqual({ type: 'any' });
    expect(one.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(two.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'q' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'looking' }, { type: 'tool_use', id: 'toolu_1', name: 'search_memory', input: { query: 'tea' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'tea daily' }] },
    ]);
  });

  it('streams text deltas, tool calls and usage from the event stream', async () => {
    const { models } = setup('anthropic');
    fake.script.chat({ text: 'Hello Alice', chunks: ['Hello', ' Alice'], toolCalls: [{ id: 'toolu_2', name: 'search_memory', arguments: { query: 'coffee' } }], usage: { input: 11, output: 6 } });
    const events = await collect(models.chat('dialectic')!.stream({ module: 'dialectic', messages: [{ role: 'user', content: 'hi' }] }));
    expect(events).toEqual([
      { type: 'text', text: 'Hello' },
      { type: 'text', text: ' Alice' },
      { type: 'tool_call', call: { id: 'toolu_2', name: 'search_memory', arguments: '{"query":"coffee"}' } },
      { type: 'done', usage: { inputTokens: 11, outputTokens: 6 }, finishReason: 'tool_use' },
    ]);
    expect(fake.requests('chat')[0].body.stream).toBe(true);
  });

  it('retries an overloaded answer (529) and then succeeds', async () => {
    const { models } = setup('anthropic');
    fake.script.chat({ status: 529, errorBody: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
    expect((await models.chat('deriver')!.complete({ module: 'deriver', messages: [{ role: 'user', content: 'x' }] })).text).toBe('ok');
    expect(fake.requests('chat')).toHaveLength(2);
  });
});

describe('gemini transport: generateContent and batchEmbedContents', () => {
  it('sends contents, system instruction, generation config and the key header; reads text and usage', async () => {
    const { models } = setup('gemini', { SUMMARY_MODEL_CONFIG__TEMPERATURE: '0.1', SUMMARY_MODEL_CONFIG__THINKING_BUDGET_TOKENS: '512' });
    fake.script.chat({ text: 'A summary', usage: { input: 40, output: 8 } });
    const answer = await models.chat('summary')!.complete({ module: 'summary', messages: [{ role: 'system', content: 'summarise' }, { role: 'user', content: 'text' }], maxOutputTokens: 1000 });
    expect(answer).toEqual({ text: 'A summary', toolCalls: [], usage: { inputTokens: 40, outputTokens: 8 }, finishReason: 'STOP' });
    const [request] = fake.requests('chat', 'gemini');
    expect(request.path).toBe('/v1beta/models/m-1:generateContent');
    expect(request.headers['x-goog-api-key']).toBe('gemini-key');
    expect(request.body).toEqual({
      systemInstruction: { parts: [{ text: 'summarise' }] },
      contents: [{ role: 'user', parts: [{ text: 'text' }] }],
      generationConfig: { maxOutputTokens: 1000, temperature: 0.1, thinkingConfig: { thinkingBudget: 512 } },
    });
  });

  it('JSON modes: responseJsonSchema for json_schema, the JSON mime type alone for json_object', async () => {
    const { models } = setup('gemini');
    fake.script.defaultChat({ json: { explicit: [] } });
    const chat = models.chat('deriver')!;
    expect(JSON.parse((await chat.complete({ module: 'deriver', messages: [{ role: 'user', content: 'x' }], json: { name: 'facts', schema } })).text)).toEqual({ explicit: [] });
    await chat.complete({ module: 'deriver', messages: [{ role: 'user', content: 'x' }], json: { name: 'facts', schema, mode: 'json_object' } });
    const [a, b] = fake.requests('chat').map((r) => r.body.generationConfig);
    expect(a).toMatchObject({ responseMimeType: 'application/json', responseJsonSchema: schema });
    expect(b.responseMimeType).toBe('application/json');
    expect(b.responseJsonSchema).toBeUndefined();
  });

  it('tools: function declarations, calls with made-up ids, tool results mapped back to names', async () => {
    const { models } = setup('gemini');
    fake.script.chat({ toolCalls: [{ name: 'search_memory', arguments: { query: 'tea' } }] });
    const chat = models.chat('dialectic')!;
    const first = await chat.complete({ module: 'dialectic', messages: [{ role: 'user', content: 'q' }], tools, toolChoice: 'auto' });
    expect(first.toolCalls).toHaveLength(1);
    expect(first.toolCalls[0]).toMatchObject({ name: 'search_memory', arguments: '{"query":"tea"}' });
    const id = first.toolCalls[0].id;
    await chat.complete({ module: 'dialectic', messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: '', toolCalls: first.toolCalls }, { role: 'tool', toolCallId: id, content: 'tea daily' }] });
    const [one, two] = fake.requests('chat');
    expect(one.body.tools).toEqual([{ functionDeclarations: [{ name: 'search_memory', description: 'Search memory', parametersJsonSchema: tools[0].parameters }] }]);
    expect(one.body.toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });
    expect(two.body.contents).toEqual([
      { role: 'user', parts: [{ text: 'q' }] },
      { role: 'model', parts: [{ functionCall: { name: 'search_memory', args: { query: 'tea' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'search_memory', response: { content: 'tea daily' } } }] },
    ]);
  });

  it('streams through streamGenerateContent?alt=sse', async () => {
    const { models } = setup('gemini');
    fake.script.chat({ text: 'one two three', chunks: ['one', ' two', ' three'], usage: { input: 5, output: 3 } });
    const events = await collect(models.chat('dialectic')!.stream({ module: 'dialectic', messages: [{ role: 'user', content: 'count' }] }));
    expect(events).toEqual([
      { type: 'text', text: 'one' },
      { type: 'text', text: ' two' },
      { type: 'text', text: ' three' },
      { type: 'done', usage: { inputTokens: 5, outputTokens: 3 }, finishReason: 'STOP' },
    ]);
    expect(fake.requests('chat')[0].path).toBe('/v1beta/models/m-1:streamGenerateContent?alt=sse');
  });

  it('embeds in batches with the size configured or learnt', async () => {
    const { models } = setup('gemini', { EMBEDDING_MODEL: 'gemini/gemini-embedding-001', EMBEDDING_VECTOR_DIMENSIONS: '16' });
    const embedder = models.embedder!;
    expect(embedder.name).toBe('gemini/gemini-embedding-001');
    const vectors = await embedder.embed(['Alice', 'Bob']);
    expect(vectors).toEqual([fake.vector('Alice', 16), fake.vector('Bob', 16)]);
    const [request] = fake.requests('embeddings', 'gemini');
    expect(request.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
    expect(request.body.requests[0]).toEqual({ model: 'models/gemini-embedding-001', content: { parts: [{ text: 'Alice' }] }, outputDimensionality: 16 });
    fake.script.embeddings({ dimensions: 8 });
    await expect(embedder.embed(['Carol'])).rejects.toBeInstanceOf(ModelError);
  });
});
