import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { openDatabase } from '../../src/runtime/database.js';
import { loadConfig } from '../../src/config/config.js';
import { buildModels, type ModelCallEvent } from '../../src/llm/models.js';
import { ModelError, type CompletionRequest, type StreamEvent } from '../../src/llm/provider.js';
import { parseRetryAfter } from '../../src/llm/http-call.js';
import { startFakeModelServer } from '../support/fake-model-server.js';
import { TEST_DATABASE_URL } from '../support/test-app.js';

const fake = await startFakeModelServer();
afterAll(() => fake.close());
beforeEach(() => fake.reset());

function setup(env: Record<string, string> = {}) {
  const events: ModelCallEvent[] = [];
  const config = loadConfig({ ...fake.env(), ...env }, '/nonexistent/.env');
  return { models: buildModels(config.models, { onModelCall: (e) => events.push(e) }), events, config };
}

const ask = (content: string, extra: Partial<CompletionRequest> = {}): CompletionRequest => ({ module: 'deriver', messages: [{ role: 'user', content }], ...extra });

async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

async function failure(promise: Promise<unknown>): Promise<ModelError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ModelError);
    return error as ModelError;
  }
  throw new Error('expected the call to fail');
}

describe('openai transport: Chat Completions', () => {
  it('completes through /chat/completions with the model, messages, key and usage', async () => {
    const { models, events } = setup();
    fake.script.chat({ text: 'Alice likes tea', usage: { input: 12, output: 4 } });
    const chat = models.chat('deriver')!;
    expect(chat.name).toBe('openai/fake-chat');
    const answer = await chat.complete({ module: 'deriver', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'who?' }], maxOutputTokens: 77 });
    expect(answer).toEqual({ text: 'Alice likes tea', toolCalls: [], usage: { inputTokens: 12, outputTokens: 4 }, finishReason: 'stop' });
    const [request] = fake.requests('chat');
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe('Bearer test');
    expect(request.body).toMatchObject({ model: 'fake-chat', max_tokens: 77, messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'who?' }] });
    expect(request.body.response_format).toBeUndefined();
    expect(events).toMatchObject([{ module: 'deriver', model: 'openai/fake-chat', usage: { inputTokens: 12, outputTokens: 4 }, willRetry: false, attempt: 0 }]);
  });

  it('works with a base URL and no key (Ollama): no Authorization header, any model name', async () => {
    const config = loadConfig({ LLM_OPENAI_BASE_URL: `${fake.url}/v1/`, LLM_MODEL: 'openai/llama3.1:8b-instruct-q4' }, '/nonexistent/.env');
    const chat = buildModels(config.models).chat('summary')!;
    fake.script.chat({ text: 'fine' });
    expect((await chat.complete(ask('hi'))).text).toBe('fine');
    const [request] = fake.requests('chat');
    expect(request.headers.authorization).toBeUndefined();
    expect(request.body.model).toBe('llama3.1:8b-instruct-q4');
  });

  it('sends the module settings: temperature, sampling, stop, reasoning effort', async () => {
    const { models } = setup({
      DERIVER_MODEL_CONFIG__TEMPERATURE: '0.2',
      DERIVER_MODEL_CONFIG__TOP_P: '0.9',
      DERIVER_MODEL_CONFIG__SEED: '7',
      DERIVER_MODEL_CONFIG__STOP_SEQUENCES: '["END"]',
      DERIVER_MODEL_CONFIG__THINKING_EFFORT: 'low',
      DERIVER_MODEL_CONFIG__MAX_OUTPUT_TOKENS: '900',
    });
    await models.chat('deriver')!.complete(ask('x'));
    expect(fake.requests('chat')[0].body).toMatchObject({ temperature: 0.2, top_p: 0.9, seed: 7, stop: ['END'], reasoning_effort: 'low', max_tokens: 900 });
  });

  it('asks for JSON in the configured mode, or the mode of the request', async () => {
    const schema = { type: 'object', properties: { explicit: { type: 'array' } }, required: ['explicit'] };
    const { models } = setup({ SUMMARY_MODEL_CONFIG__STRUCTURED_OUTPUT_MODE: 'json_object' });
    fake.script.defaultChat({ json: { explicit: [] } });
    const deriver = models.chat('deriver')!;
    expect(deriver.structuredOutputMode).toBe('json_schema');
    const answer = await deriver.complete(ask('x', { json: { name: 'facts', schema } }));
    expect(JSON.parse(answer.text)).toEqual({ explicit: [] });
    await deriver.complete(ask('x', { json: { name: 'facts', schema, mode: 'json_object' } }));
    await deriver.complete(ask('x', { json: { name: 'facts', schema, mode: 'none' } }));
    const summary = models.chat('summary')!;
    expect(summary.structuredOutputMode).toBe('json_object');
    await summary.complete(ask('x', { module: 'summary', json: { name: 'facts', schema } }));
    const formats = fake.requests('chat').map((r) => r.body.response_format);
    expect(formats).toEqual([
      { type: 'json_schema', json_schema: { name: 'facts', schema, strict: false } },
      { type: 'json_object' },
      undefined,
      { type: 'json_object' },
    ]);
  });

  it('sends tools and reads tool calls; replays tool turns in the wire shape', async () => {
    const { models } = setup();
    fake.script.chat({ toolCalls: [{ id: 'call_a', name: 'search_memory', arguments: { query: 'tea' } }] });
    const chat = models.chat('dialectic')!;
    const tools = [{ name: 'search_memory', description: 'Search', parameters: { type: 'object', properties: { query: { type: 'string' } } } }];
    const first = await chat.complete({ module: 'dialectic', messages: [{ role: 'user', content: 'q' }], tools, toolChoice: 'auto' });
    expect(first.toolCalls).toEqual([{ id: 'call_a', name: 'search_memory', arguments: '{"query":"tea"}' }]);
    expect(first.finishReason).toBe('tool_calls');
    expect(first.text).toBe('');
    fake.script.chat({ text: 'Alice likes tea' });
    const second = await chat.complete({
      module: 'dialectic',
      messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: '', toolCalls: first.toolCalls }, { role: 'tool', toolCallId: 'call_a', content: 'tea, daily' }],
      tools,
    });
    expect(second.text).toBe('Alice likes tea');
    const [one, two] = fake.requests('chat');
    expect(one.body.tools).toEqual([{ type: 'function', function: tools[0] }]);
    expect(one.body.tool_choice).toBe('auto');
    expect(two.body.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'search_memory', arguments: '{"query":"tea"}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: 'tea, daily' },
    ]);
  });

  it('streams text chunks, assembled tool calls and usage (stream_options.include_usage)', async () => {
    const { models, events } = setup();
    fake.script.chat({ text: 'Hello there, Alice', chunks: ['Hello', ' there,', ' Alice'], toolCalls: [{ id: 'c1', name: 'grep', arguments: { text: 'tea' } }], usage: { input: 30, output: 9 } });
    const streamed = await collect(models.chat('dialectic')!.stream({ module: 'dialectic', messages: [{ role: 'user', content: 'hi' }] }));
    expect(streamed).toEqual([
      { type: 'text', text: 'Hello' },
      { type: 'text', text: ' there,' },
      { type: 'text', text: ' Alice' },
      { type: 'tool_call', call: { id: 'c1', name: 'grep', arguments: '{"text":"tea"}' } },
      { type: 'done', usage: { inputTokens: 30, outputTokens: 9 }, finishReason: 'tool_calls' },
    ]);
    const [request] = fake.requests('chat');
    expect(request.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(events).toMatchObject([{ module: 'dialectic', usage: { inputTokens: 30, outputTokens: 9 } }]);
  });

  it('a stream left early frees its slot for the next call', async () => {
    const { models } = setup({ LLM_MAX_CONCURRENT_CALLS: '1' });
    fake.script.chat({ text: 'abcdef', chunks: ['a', 'b', 'c', 'd', 'e', 'f'], chunkDelayMs: 20 });
    for await (const event of models.chat('deriver')!.stream(ask('x'))) {
      expect(event).toEqual({ type: 'text', text: 'a' });
      break;
    }
    expect((await models.chat('deriver')!.complete(ask('y'))).text).toBe('ok');
  });
});

describe('openai transport: Embeddings', () => {
  it('learns the size from the first answer and refuses a later answer of another size', async () => {
    const { models, events } = setup();
    const embedder = models.embedder!;
    expect(embedder.name).toBe('openai/fake-embed');
    expect(embedder.dimensions()).toBeUndefined();
    const vectors = await embedder.embed(['Alice likes tea', 'Bob likes coffee']);
    expect(vectors).toEqual([fake.vector('Alice likes tea'), fake.vector('Bob likes coffee')]);
    expect(embedder.dimensions()).toBe(8);
    const [request] = fake.requests('embeddings');
    expect(request.path).toBe('/v1/embeddings');
    expect(request.body).toEqual({ model: 'fake-embed', input: ['Alice likes tea', 'Bob likes coffee'] });
    expect(events[0]).toMatchObject({ module: 'embedding', model: 'openai/fake-embed' });
    expect(events[0].usage!.inputTokens).toBeGreaterThan(0);

    fake.script.embeddings({ dimensions: 4 });
    const error = await failure(embedder.embed(['again']));
    expect(error.message).toContain('EMBEDDING_VECTOR_DIMENSIONS');
    expect(error.retryable).toBe(false);
    expect(error.reason).toBe('bad_response');
  });

  it('uses EMBEDDING_VECTOR_DIMENSIONS: sent to text-embedding-3 models, checked on every answer', async () => {
    const { models } = setup({ EMBEDDING_MODEL: 'text-embedding-3-small', EMBEDDING_VECTOR_DIMENSIONS: '1536' });
    const embedder = models.embedder!;
    expect(embedder.dimensions()).toBe(1536);
    const [vector] = await embedder.embed(['hello']);
    expect(vector).toHaveLength(1536);
    expect(Math.hypot(...vector)).toBeCloseTo(1, 6);
    expect(fake.requests('embeddings')[0].body.dimensions).toBe(1536);
  });

  it('asks for base64 vectors from OpenAI\'s own API (or with EMBEDDING_ENCODING_FORMAT=base64) and reads their float32 values', async () => {
    // the default: base64 from OpenAI's API, float from any other server (the fake is one)
    expect(loadConfig({ LLM_OPENAI_API_KEY: 'k' }, '/nonexistent/.env').models.embedding.encodingFormat).toBe('base64');
    expect(setup().config.models.embedding.encodingFormat).toBe('float');
    expect(() => loadConfig({ ...fake.env(), EMBEDDING_ENCODING_FORMAT: 'binary' }, '/nonexistent/.env')).toThrow(/EMBEDDING_ENCODING_FORMAT/);

    const { models } = setup({ EMBEDDING_ENCODING_FORMAT: 'base64' });
    const texts = ['Alice likes tea', 'Bob likes coffee'];
    const vectors = await models.embedder!.embed(texts);
    expect(fake.requests('embeddings')[0].body).toEqual({ model: 'fake-embed', input: texts, encoding_format: 'base64' });
    expect(vectors).toEqual(texts.map((text) => Array.from(Float32Array.from(fake.vector(text)))));
    // a server that answers numbers anyway is read too
    fake.script.embeddings({ raw: '{"data":[{"index":0,"embedding":[0.5,0.25,0,0,0,0,0,1]}]}' });
    expect(await models.embedder!.embed(['x'])).toEqual([[0.5, 0.25, 0, 0, 0, 0, 0, 1]]);
    // bytes that are no whole number of float32 values, or values that are not finite: a bad response
    for (const embedding of ['AAAA/w==', Buffer.from(Float32Array.from([0.5, NaN, 0, 0, 0, 0, 0, 1]).buffer).toString('base64')]) {
      fake.script.embeddings({ raw: JSON.stringify({ data: [{ index: 0, embedding }] }) });
      expect(await failure(models.embedder!.embed(['y']))).toMatchObject({ reason: 'bad_response', retryable: false });
    }
  });

  it('splits many texts into batches and keeps their order', async () => {
    const { models } = setup();
    const texts = Array.from({ length: 300 }, (_, i) => `text ${i}`);
    const vectors = await models.embedder!.embed(texts);
    expect(fake.requests('embeddings').map((r) => r.body.input.length)).toEqual([256, 44]);
    expect(vectors[299]).toEqual(fake.vector('text 299'));
  });
});

describe('openai transport: failures', () => {
  it('retries a 429 after the Retry-After seconds', async () => {
    const { models, events } = setup();
    fake.script.chat({ status: 429, headers: { 'retry-after': '1' } });
    fake.script.chat({ text: 'after the wait' });
    const started = Date.now();
    expect((await models.chat('deriver')!.complete(ask('x'))).text).toBe('after the wait');
    const [first, second] = fake.requests('chat');
    expect(second.at - first.at).toBeGreaterThanOrEqual(950);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(events.map((e) => [e.error?.reason, e.willRetry])).toEqual([['rate_limited', true], [undefined, false]]);
  });

  it('honours retry-after-ms and Retry-After as an HTTP date', async () => {
    const { models } = setup({ LLM_RETRY_BASE_MS: '5000' });
    fake.script.chat({ status: 429, headers: { 'retry-after-ms': '120' } });
    // whole seconds, set now but read a few hundred ms later: far enough ahead to leave a wait of >= 400 ms
    fake.script.chat({ status: 503, headers: { 'retry-after': new Date(Date.now() + 2500).toUTCString() } });
    const answer = await models.chat('deriver')!.complete(ask('x'));
    expect(answer.text).toBe('ok');
    const [a, b, c] = fake.requests('chat').map((r) => r.at);
    expect(b - a).toBeGreaterThanOrEqual(100);
    expect(b - a).toBeLessThan(1000); // not the 5 s backoff
    expect(c - b).toBeGreaterThanOrEqual(400); // HTTP dates have whole seconds
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' }), Date.parse('Wed, 21 Oct 2015 07:27:58 GMT'))).toBe(2000);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
  });

  it('a Retry-After longer than LLM_RETRY_MAX_MS fails the call at once as retryable, with the hint', async () => {
    const { models } = setup({ LLM_RETRY_MAX_MS: '1000' });
    fake.script.chat({ status: 429, headers: { 'retry-after': '120' } });
    const started = Date.now();
    const error = await failure(models.chat('deriver')!.complete(ask('x')));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(error).toMatchObject({ retryable: true, status: 429, retryAfterMs: 120_000, reason: 'rate_limited' });
    expect(fake.requests('chat')).toHaveLength(1);
  });

  it('retries 500s with backoff, then fails with a retryable ModelError carrying the provider message', async () => {
    const { models, events } = setup({ LLM_MAX_RETRIES: '2' });
    fake.script.chat({ status: 500, errorBody: { error: { message: 'the GPU caught fire' } } }, 3);
    const error = await failure(models.chat('deriver')!.complete(ask('x')));
    expect(error).toMatchObject({ retryable: true, status: 500, reason: 'server_error' });
    expect(error.message).toContain('the GPU caught fire');
    expect(fake.requests('chat')).toHaveLength(3);
    expect(events.map((e) => e.willRetry)).toEqual([true, true, false]);
  });

  it('does not retry a 400 and says it cannot help', async () => {
    const { models } = setup();
    fake.script.chat({ status: 400, errorBody: { error: { message: "model 'nope' not found" } } });
    const error = await failure(models.chat('deriver')!.complete(ask('x')));
    expect(error).toMatchObject({ retryable: false, status: 400, reason: 'client_error' });
    expect(error.message).toContain("model 'nope' not found");
    expect(fake.requests('chat')).toHaveLength(1);
  });

  it('retries a dropped connection', async () => {
    const { models } = setup();
    fake.script.chat({ hangUp: true });
    fake.script.chat({ text: 'second try' });
    expect((await models.chat('deriver')!.complete(ask('x'))).text).toBe('second try');
    expect(fake.requests('chat')).toHaveLength(2);
  });

  it('an answer that is not the API shape is a bad response, not retried', async () => {
    const { models } = setup();
    fake.script.chat({ raw: '{"object":"chat.completion","choices":[]}' });
    const error = await failure(models.chat('deriver')!.complete(ask('x')));
    expect(error).toMatchObject({ reason: 'bad_response', retryable: false });
    expect(error.message).toContain('choices[0].message');
    fake.script.chat({ raw: '<html>proxy error</html>' });
    expect((await failure(models.chat('deriver')!.complete(ask('x')))).message).toContain('not JSON');
    fake.script.embeddings({ raw: '{"data":[{"index":0,"embedding":[0.1,0.2]}]}' });
    expect((await failure(models.embedder!.embed(['a', 'b']))).message).toContain('2 embeddings (got 1)');
    expect(fake.requests()).toHaveLength(3);
  });

  it('times out an attempt after LLM_TIMEOUT_MS (retryable, not retried inside the call)', async () => {
    const { models, events } = setup({ LLM_TIMEOUT_MS: '150' });
    fake.script.chat({ text: 'too late', delayMs: 1000 });
    const started = Date.now();
    const error = await failure(models.chat('deriver')!.complete(ask('x')));
    expect(Date.now() - started).toBeLessThan(800);
    expect(error).toMatchObject({ retryable: true, reason: 'timeout' });
    expect(error.message).toContain('LLM_TIMEOUT_MS');
    expect(events).toMatchObject([{ error: { reason: 'timeout' }, willRetry: false }]);
  });

  it('a stream times out when no chunk comes within LLM_TIMEOUT_MS', async () => {
    const { models } = setup({ LLM_TIMEOUT_MS: '200' });
    fake.script.chat({ text: 'abc', chunks: ['a', 'b', 'c'], chunkDelayMs: 600 });
    const seen: string[] = [];
    const error = await failure(
      (async () => {
        for await (const event of models.chat('deriver')!.stream(ask('x'))) if (event.type === 'text') seen.push(event.text);
      })(),
    );
    expect(error.reason).toBe('timeout');
    expect(seen).toEqual(['a']);
  });

  it('honours the abort signal, also while waiting to retry', async () => {
    const { models } = setup();
    fake.script.chat({ text: 'slow', delayMs: 2000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    const error = await failure(models.chat('deriver')!.complete(ask('x', { signal: controller.signal })));
    expect(error).toMatchObject({ retryable: false, reason: 'aborted' });
    expect(Date.now() - started).toBeLessThan(1000);

    fake.script.chat({ status: 429, headers: { 'retry-after': '5' } });
    const second = new AbortController();
    setTimeout(() => second.abort(), 100);
    const again = await failure(models.chat('deriver')!.complete(ask('x', { signal: second.signal })));
    expect(again.reason).toBe('aborted');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('keeps at most LLM_MAX_CONCURRENT_CALLS calls in flight per endpoint', async () => {
    const { models } = setup({ LLM_MAX_CONCURRENT_CALLS: '2' });
    fake.script.defaultChat({ text: 'ok', delayMs: 80 });
    fake.script.defaultEmbeddings({ delayMs: 80 });
    const deriver = models.chat('deriver')!;
    const summary = models.chat('summary')!;
    await Promise.all([
      ...Array.from({ length: 3 }, () => deriver.complete(ask('x'))),
      ...Array.from({ length: 3 }, () => summary.complete(ask('y', { module: 'summary' }))),
      models.embedder!.embed(['z']),
    ]);
    expect(fake.requests()).toHaveLength(7);
    expect(fake.maxInFlight).toBe(2);
  });

  it('keeps at most EMBEDDING_MAX_CONCURRENT_EMBEDDINGS embedding calls in flight, within the endpoint\'s limit', async () => {
    // long enough that every call is sent while the first is answered, on a loaded machine too
    // (at 80 ms a CI run saw 6 of 8 in flight)
    const DELAY_MS = 300;
    const { models } = setup({ EMBEDDING_MAX_CONCURRENT_EMBEDDINGS: '1' });
    fake.script.defaultChat({ text: 'ok', delayMs: DELAY_MS });
    fake.script.defaultEmbeddings({ delayMs: DELAY_MS });
    await Promise.all(Array.from({ length: 4 }, (_, i) => models.embedder!.embed([`text ${i}`])));
    expect(fake.maxInFlight).toBe(1);
    // chat calls on the same endpoint are not held by it
    fake.reset();
    fake.script.defaultChat({ text: 'ok', delayMs: DELAY_MS });
    fake.script.defaultEmbeddings({ delayMs: DELAY_MS });
    await Promise.all([...Array.from({ length: 3 }, (_, i) => models.embedder!.embed([`again ${i}`])), models.chat('deriver')!.complete(ask('x'))]);
    expect(fake.maxInFlight).toBe(2);
    // the default, 10, within LLM_MAX_CONCURRENT_CALLS (8)
    fake.reset();
    fake.script.defaultEmbeddings({ delayMs: DELAY_MS });
    const defaults = setup().models;
    await Promise.all(Array.from({ length: 12 }, (_, i) => defaults.embedder!.embed([`more ${i}`])));
    expect(fake.maxInFlight).toBe(8);
  });
});

describe('model call metrics', () => {
  it('counts tokens, latency and failures per module and model at /metrics, and logs failed calls', async () => {
    const config = loadConfig({ ...fake.env({ LLM_MAX_RETRIES: '0' }), DATABASE_URL: TEST_DATABASE_URL, METRICS_ENABLED: 'true', LOG_LEVEL: 'warn' }, '/nonexistent/.env');
    const database = await openDatabase(config.databaseUrl);
    const lines: string[] = [];
    const { app, models } = await buildApp({ config, database, logger: { level: 'warn', stream: { write: (line: string) => lines.push(line) } } });
    try {
      fake.script.chat({ text: 'a', usage: { input: 100, output: 7 } });
      fake.script.chat({ text: 'b', usage: { input: 50, output: 3 } });
      await models.chat('deriver')!.complete(ask('x'));
      await models.chat('deriver')!.complete(ask('y'));
      fake.script.chat({ status: 429 });
      await failure(models.chat('summary')!.complete(ask('z', { module: 'summary' })));
      await models.embedder!.embed(['hello world']);

      const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(text).toContain('engram_model_input_tokens_total{module="deriver",model="openai/fake-chat"} 150');
      expect(text).toContain('engram_model_output_tokens_total{module="deriver",model="openai/fake-chat"} 10');
      expect(text).toContain('engram_model_call_duration_seconds_count{module="deriver",model="openai/fake-chat"} 2');
      expect(text).toContain('engram_model_call_failures_total{module="summary",model="openai/fake-chat",reason="rate_limited"} 1');
      expect(text).toContain('engram_model_calls_total{module="summary",model="openai/fake-chat",outcome="rate_limited"} 1');
      expect(text).toMatch(/engram_model_input_tokens_total\{module="embedding",model="openai\/fake-embed"\} [1-9]/);
      expect(text).toContain('engram_http_requests_total');
      const failed = lines.map((line) => JSON.parse(line)).filter((line) => line.msg === 'model call failed');
      expect(failed).toMatchObject([{ module: 'summary', model: 'openai/fake-chat', reason: 'rate_limited', status: 429, willRetry: false }]);
    } finally {
      await app.close();
      await database.driver.close();
    }
  });
});

