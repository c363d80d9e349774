import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { completeStructured } from '../../src/domain/reasoning/structured-completion.js';
import { ModelCallMetrics } from '../../src/http/shared/metrics.js';
import { FallbackChatModel } from '../../src/llm/fallback.js';
import { buildModels, describeReasoning, logFailedModelCalls, observeModelCalls, type FallbackEvent, type ModelCallEvent } from '../../src/llm/models.js';
import { ModelError, type ChatModel, type CompletionRequest, type StreamEvent } from '../../src/llm/provider.js';
import { startFakeModelServer, type RecordedRequest } from '../support/fake-model-server.js';
import { buildTestApp, uniqueId, type TestApi } from '../support/test-app.js';
import { configProblems as problems, loadEnv as load } from '../support/config-env.js';

/*
 * A module's FALLBACK__ model (asked when a call to the module's model has failed for good) and
 * OVERRIDES__PROVIDER_PARAMS (fields added to every request body), through the real transports
 * against the fake model server.
 */

const fake = await startFakeModelServer();
afterAll(() => fake.close());
beforeEach(() => fake.reset());

/** The deriver on `fake-chat` (openai transport), with `fake-fallback` behind it on the same server unless told otherwise. */
function setup(env: Record<string, string> = {}) {
  const events: ModelCallEvent[] = [];
  const fallbacks: FallbackEvent[] = [];
  const config = load({ ...fake.env(), LLM_MAX_RETRIES: '1', LLM_RETRY_BASE_MS: '1', DERIVER_MODEL_CONFIG__FALLBACK__MODEL: 'fake-fallback', ...env });
  const models = buildModels(config.models, { onModelCall: (e) => events.push(e), onFallback: (e) => fallbacks.push(e) });
  return { chat: models.chat('deriver')!, events, fallbacks, config };
}

/** The primary (`fake-chat`) answers with `primary`; any other model with a text naming it. */
const byModel = (primary: { status: number; errorBody?: unknown } | { text: string }) => (request: RecordedRequest) =>
  request.body.model === 'fake-chat' ? primary : { text: `answered by ${request.body.model}` };

const ask = (content: string, extra: Partial<CompletionRequest> = {}): CompletionRequest => ({ module: 'deriver', messages: [{ role: 'user', content }], ...extra });
const modelsAsked = () => fake.requests('chat').map((r) => r.body.model ?? r.path);

async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('FALLBACK__ settings', () => {
  it('reads a module fallback with its own transport, credentials and settings, and names it at start-up', () => {
    const config = load({
      LLM_OPENAI_API_KEY: 'sk-x',
      LLM_ANTHROPIC_API_KEY: 'ak',
      DERIVER_MODEL_CONFIG__FALLBACK__MODEL: 'anthropic/claude-haiku-4-5',
      DERIVER_MODEL_CONFIG__FALLBACK__TEMPERATURE: '0.1',
      DERIVER_MODEL_CONFIG__FALLBACK__OVERRIDES__BASE_URL: 'http://proxy.local/anthropic',
      DERIVER_MODEL_CONFIG__MAX_OUTPUT_TOKENS: '900',
      DIALECTIC_LEVELS__low__MODEL_CONFIG__FALLBACK__MODEL: 'gpt-4o-mini',
    });
    expect(config.models.modules.deriver.fallback).toMatchObject({
      transport: 'anthropic',
      model: 'claude-haiku-4-5',
      apiKey: 'ak',
      baseUrl: 'http://proxy.local/anthropic',
      temperature: 0.1,
      // the module's output limit, unless its own is set
      maxOutputTokens: 900,
      configured: true,
      fallback: undefined,
    });
    expect(config.models.modules.summary.fallback).toBeUndefined();
    expect(config.models.dialectic.low.model.fallback).toMatchObject({ transport: 'openai', model: 'gpt-4o-mini', apiKey: 'sk-x', maxOutputTokens: 8192 });
    const models = buildModels(config.models);
    // the module's model keeps its name: errors and metrics of the module name it
    expect(models.chat('deriver')?.name).toBe('openai/gpt-5.4-mini');
    expect(describeReasoning(config.models)).toBe(
      'reasoning on: deriver openai/gpt-5.4-mini (fallback anthropic/claude-haiku-4-5), summary openai/gpt-5.4-mini, dream_deduction openai/gpt-5.4-mini, ' +
        'dream_induction openai/gpt-5.4-mini, dialectic openai/gpt-5.4-mini (fallback openai/gpt-4o-mini), embeddings openai/text-embedding-3-small (size from the first answer)',
    );
  });

  it('refuses FALLBACK__ keys without FALLBACK__MODEL, and a fallback whose transport has no credentials', () => {
    expect(problems({ LLM_OPENAI_API_KEY: 'sk-x', SUMMARY_MODEL_CONFIG__FALLBACK__TRANSPORT: 'anthropic', SUMMARY_MODEL_CONFIG__FALLBACK__TEMPERATURE: '0.2' })).toEqual([
      'SUMMARY_MODEL_CONFIG__FALLBACK__TRANSPORT, SUMMARY_MODEL_CONFIG__FALLBACK__TEMPERATURE are set but SUMMARY_MODEL_CONFIG__FALLBACK__MODEL is not: name the fallback model',
    ]);
    expect(problems({ LLM_OPENAI_API_KEY: 'sk-x', DERIVER_MODEL_CONFIG__FALLBACK__MODEL: 'gemini/gemini-2.5-flash' })).toEqual([
      'DERIVER_MODEL_CONFIG__FALLBACK__MODEL uses gemini, which has no LLM_GEMINI_API_KEY or LLM_GEMINI_BASE_URL (or set DERIVER_MODEL_CONFIG__FALLBACK__OVERRIDES__API_KEY or __BASE_URL)',
    ]);
    // its own key is enough
    expect(load({ LLM_OPENAI_API_KEY: 'sk-x', DERIVER_MODEL_CONFIG__FALLBACK__MODEL: 'gemini/gemini-2.5-flash', DERIVER_MODEL_CONFIG__FALLBACK__OVERRIDES__API_KEY: 'g' }).models.modules.deriver.fallback).toMatchObject({
      transport: 'gemini',
      apiKey: 'g',
    });
  });

  it('reads OVERRIDES__PROVIDER_PARAMS as a JSON object, and refuses anything else', () => {
    const config = load({ LLM_OPENAI_API_KEY: 'sk-x', DERIVER_MODEL_CONFIG__OVERRIDES__PROVIDER_PARAMS: '{"user": "engram", "logprobs": false}' });
    expect(config.models.modules.deriver.providerParams).toEqual({ user: 'engram', logprobs: false });
    expect(config.models.modules.summary.providerParams).toBeUndefined();
    expect(problems({ LLM_OPENAI_API_KEY: 'sk-x', DERIVER_MODEL_CONFIG__OVERRIDES__PROVIDER_PARAMS: '{"user": ' })).toEqual([
      'DERIVER_MODEL_CONFIG__OVERRIDES__PROVIDER_PARAMS must be a JSON object, got "{"user": "',
    ]);
    expect(problems({ LLM_OPENAI_API_KEY: 'sk-x', DREAM_DEDUCTION_MODEL_CONFIG__OVERRIDES__PROVIDER_PARAMS: '[1, 2]' })).toEqual([
      'DREAM_DEDUCTION_MODEL_CONFIG__OVERRIDES__PROVIDER_PARAMS must be a JSON object, got "[1, 2]"',
    ]);
  });
});

describe('a call to the fallback model', () => {
  it('is made once the module model has failed for good (its retries spent), and answers', async () => {
    const { chat, events, fallbacks } = setup();
    fake.script.defaultChat(byModel({ status: 503, errorBody: { error: { message: 'overloaded' } } }));
    const answer = await chat.complete(ask('hi'));
    expect(answer.text).toBe('answered by fake-fallback');
    // one try and one retry of the module's model, then the fallback
    expect(modelsAsked()).toEqual(['fake-chat', 'fake-chat', 'fake-fallback']);
    expect(events.map((e) => [e.model, e.error?.reason ?? 'ok', e.willRetry])).toEqual([
      ['openai/fake-chat', 'server_error', true],
      ['openai/fake-chat', 'server_error', false],
      ['openai/fake-fallback', 'ok', false],
    ]);
    expect(fallbacks).toHaveLength(1);
    expect(fallbacks[0]).toMatchObject({ module: 'deriver', model: 'openai/fake-chat', fallback: 'openai/fake-fallback', reason: 'server_error' });
    expect(fallbacks[0].error?.status).toBe(503);
  });

  it('is not made when the module model answers', async () => {
    const { chat, fallbacks } = setup();
    fake.script.defaultChat(byModel({ text: 'primary answer' }));
    expect((await chat.complete(ask('hi'))).text).toBe('primary answer');
    expect(modelsAsked()).toEqual(['fake-chat']);
    expect(fallbacks).toEqual([]);
  });

  it('is made for errors that retrying cannot mend (a refused key, an unknown model), without retries of the module model', async () => {
    const { chat, fallbacks } = setup();
    fake.script.defaultChat(byModel({ status: 404, errorBody: { error: { message: 'model not found' } } }));
    expect((await chat.complete(ask('hi'))).text).toBe('answered by fake-fallback');
    expect(modelsAsked()).toEqual(['fake-chat', 'fake-fallback']);
    expect(fallbacks[0].reason).toBe('client_error');
  });

  it('goes to another transport: a hosted model behind a local one', async () => {
    const { chat } = setup({ DERIVER_MODEL_CONFIG__FALLBACK__MODEL: 'anthropic/claude-x', LLM_ANTHROPIC_API_KEY: 'ak', LLM_ANTHROPIC_BASE_URL: fake.url });
    fake.script.defaultChat((request) => (request.api === 'openai' ? { status: 500 } : { text: `anthropic answered ${request.body.model}` }));
    expect((await chat.complete(ask('hi'))).text).toBe('anthropic answered claude-x');
    expect(fake.requests('chat').map((r) => r.api)).toEqual(['openai', 'openai', 'anthropic']);
    expect(fake.requests('chat', 'anthropic')[0].headers['x-api-key']).toBe('ak');
  });

  it('fails with the fallback error when both fail, the module model told first', async () => {
    const { chat, events } = setup({ LLM_MAX_RETRIES: '0' });
    fake.script.defaultChat((request) => ({ status: request.body.model === 'fake-chat' ? 500 : 400, errorBody: { error: { message: `no from ${request.body.model}` } } }));
    const failed = await chat.complete(ask('hi')).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(ModelError);
    expect((failed as ModelError).message).toContain('no from fake-fallback');
    expect(events.map((e) => [e.model, e.error?.reason])).toEqual([
      ['openai/fake-chat', 'server_error'],
      ['openai/fake-fallback', 'client_error'],
    ]);
  });

  it('is not made for a call its caller aborted', async () => {
    const { chat, fallbacks } = setup();
    fake.script.defaultChat((request) => (request.body.model === 'fake-chat' ? { text: 'late', delayMs: 2_000 } : { text: 'fallback' }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('client went away')), 50);
    const failed = await chat.complete(ask('hi', { signal: controller.signal })).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(ModelError);
    expect((failed as ModelError).reason).toBe('aborted');
    expect(modelsAsked()).toEqual(['fake-chat']);
    expect(fallbacks).toEqual([]);
  });

  it('streams from the fallback when the module model fails before its first chunk', async () => {
    const { chat, fallbacks } = setup();
    fake.script.defaultChat(byModel({ status: 429, errorBody: { error: { message: 'slow down' } } }));
    const events = await collect(chat.stream(ask('hi')));
    expect(events.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text).join('')).toBe('answered by fake-fallback');
    expect(events.at(-1)?.type).toBe('done');
    expect(fake.requests('chat').map((r) => [r.body.model, r.stream])).toEqual([
      ['fake-chat', true],
      ['fake-chat', true],
      ['fake-fallback', true],
    ]);
    expect(fallbacks[0].reason).toBe('rate_limited');
  });

  it('is not made for a stream that already handed out part of its answer', async () => {
    const fallbackStreams: CompletionRequest[] = [];
    const failing: ChatModel = {
      name: 'openai/primary',
      structuredOutputMode: 'json_schema',
      complete: () => Promise.reject(new Error('unused')),
      async *stream() {
        yield { type: 'text', text: 'Alice ' };
        throw new ModelError('the stream ended before the answer was complete', true, undefined, undefined, { reason: 'network' });
      },
    };
    const fallback: ChatModel = {
      name: 'openai/fallback',
      structuredOutputMode: 'json_schema',
      complete: () => Promise.reject(new Error('unused')),
      async *stream(request) {
        fallbackStreams.push(request);
        yield { type: 'done', usage: { inputTokens: 0, outputTokens: 0 }, finishReason: 'stop' };
      },
    };
    const seen: StreamEvent[] = [];
    const model = new FallbackChatModel(failing, fallback, 60_000);
    await expect(
      (async () => {
        for await (const event of model.stream(ask('hi'))) seen.push(event);
      })(),
    ).rejects.toThrow('the stream ended before the answer was complete');
    expect(seen).toEqual([{ type: 'text', text: 'Alice ' }]);
    expect(fallbackStreams).toEqual([]);
  });

  it('asks the fallback for structured output in its own mode when that is weaker than the request', async () => {
    const { chat } = setup({ DERIVER_MODEL_CONFIG__FALLBACK__STRUCTURED_OUTPUT_MODE: 'json_object' });
    fake.script.defaultChat((request) => (request.body.model === 'fake-chat' ? { status: 500 } : { json: { explicit: [{ content: 'Alice likes tea' }] } }));
    const schema = { type: 'object', properties: { explicit: { type: 'array' } }, required: ['explicit'] };
    const answer = await completeStructured(chat, { ...ask('facts?'), json: { name: 'facts', schema } }, (text) => ({ ok: true, value: JSON.parse(text) }));
    expect(answer.value).toEqual({ explicit: [{ content: 'Alice likes tea' }] });
    const [first, , fallback] = fake.requests('chat');
    expect(first.body.response_format).toMatchObject({ type: 'json_schema' });
    expect(fallback.body.model).toBe('fake-fallback');
    expect(fallback.body.response_format).toEqual({ type: 'json_object' });
  });

  it('is where calls go for LLM_FALLBACK_REST_MS after the module model failed; then the module model is tried again', async () => {
    // a rest long enough that the calls below surely fall within it on a busy machine
    const { chat, fallbacks } = setup({ LLM_FALLBACK_REST_MS: '1500' });
    let primaryUp = false;
    fake.script.defaultChat((request) => (request.body.model !== 'fake-chat' ? { text: 'from the fallback' } : primaryUp ? { text: 'from the module model' } : { status: 500 }));
    expect((await chat.complete(ask('one'))).text).toBe('from the fallback');
    const restStarted = Date.now();
    expect(modelsAsked()).toEqual(['fake-chat', 'fake-chat', 'fake-fallback']);
    primaryUp = true;
    // resting: straight to the fallback, streams too, though the module model would answer now
    expect((await chat.complete(ask('two'))).text).toBe('from the fallback');
    const streamed = await collect(chat.stream(ask('three')));
    expect(streamed.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text).join('')).toBe('from the fallback');
    expect(Date.now() - restStarted).toBeLessThan(1500);
    expect(modelsAsked()).toEqual(['fake-chat', 'fake-chat', 'fake-fallback', 'fake-fallback', 'fake-fallback']);
    expect(fallbacks.map((e) => e.reason)).toEqual(['server_error', 'resting', 'resting']);
    await new Promise((resolve) => setTimeout(resolve, 1550 - (Date.now() - restStarted)));
    expect((await chat.complete(ask('four'))).text).toBe('from the module model');
    expect(modelsAsked().at(-1)).toBe('fake-chat');
    expect(fallbacks).toHaveLength(3);
  });

  it('does not rest the module model after a failure of one request (a 400)', async () => {
    const { chat, fallbacks } = setup();
    fake.script.defaultChat(byModel({ status: 400, errorBody: { error: { message: 'context length exceeded' } } }));
    await chat.complete(ask('a very long one'));
    await chat.complete(ask('another'));
    expect(modelsAsked()).toEqual(['fake-chat', 'fake-fallback', 'fake-chat', 'fake-fallback']);
    expect(fallbacks.map((e) => e.reason)).toEqual(['client_error', 'client_error']);
  });

  it('with LLM_FALLBACK_REST_MS=0, every call tries the module model first', async () => {
    const { chat, fallbacks } = setup({ LLM_FALLBACK_REST_MS: '0', LLM_MAX_RETRIES: '0' });
    fake.script.defaultChat(byModel({ status: 500 }));
    await chat.complete(ask('one'));
    await chat.complete(ask('two'));
    expect(modelsAsked()).toEqual(['fake-chat', 'fake-fallback', 'fake-chat', 'fake-fallback']);
    expect(fallbacks.map((e) => e.reason)).toEqual(['server_error', 'server_error']);
  });

  it('is counted in /metrics and logged', async () => {
    const metrics = new ModelCallMetrics();
    const lines: Array<{ fields: Record<string, unknown>; message: string }> = [];
    const config = load({ ...fake.env(), LLM_MAX_RETRIES: '0', DERIVER_MODEL_CONFIG__FALLBACK__MODEL: 'fake-fallback' });
    const models = buildModels(config.models, observeModelCalls([metrics, logFailedModelCalls({ warn: (fields, message) => lines.push({ fields, message }) })]));
    fake.script.defaultChat(byModel({ status: 502 }));
    await models.chat('deriver')!.complete(ask('hi'));
    // the next call goes straight to the fallback (the module model rests): counted, not logged again
    await models.chat('deriver')!.complete(ask('again'));
    const text = await metrics.registry.metrics();
    expect(text).toContain('engram_model_fallbacks_total{module="deriver",model="openai/fake-chat",fallback="openai/fake-fallback",reason="server_error"} 1');
    expect(text).toContain('engram_model_fallbacks_total{module="deriver",model="openai/fake-chat",fallback="openai/fake-fallback",reason="resting"} 1');
    expect(text).toContain('engram_model_calls_total{module="deriver",model="openai/fake-fallback",outcome="ok"} 2');
    expect(lines.map((l) => l.message)).toEqual(['model call failed', 'model call failed for good; asking the fallback model']);
    expect(lines[1].fields).toMatchObject({ module: 'deriver', model: 'openai/fake-chat', fallback: 'openai/fake-fallback', reason: 'server_error', status: 502 });
  });
});

describe('a fallback behind peer chat, over HTTP', () => {
  let api: TestApi | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  it('answers the chat from the fallback model while the dialectic model is down', async () => {
    api = await buildTestApp(
      fake.env({ DERIVER_ENABLED: 'false', EMBED_MESSAGES: 'false', LLM_MAX_RETRIES: '0', DIALECTIC_LEVELS__minimal__MODEL_CONFIG__FALLBACK__MODEL: 'fake-fallback' }),
    );
    const ws = uniqueId();
    expect((await api.post('/v3/workspaces', { id: ws })).status).toBe(201);
    expect((await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' })).status).toBe(201);
    fake.script.defaultChat(byModel({ status: 500 }));
    const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'Who is Alice?', reasoning_level: 'minimal' });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ content: 'answered by fake-fallback' });
    expect(modelsAsked()).toEqual(['fake-chat', 'fake-fallback']);
    // another level has no fallback: its failure stays the chat's error
    const other = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'Who is Alice?', reasoning_level: 'low' });
    expect(other.status).toBeGreaterThanOrEqual(500);
    expect(modelsAsked()).toEqual(['fake-chat', 'fake-fallback', 'fake-chat']);
  });
});

describe('OVERRIDES__PROVIDER_PARAMS', () => {
  it('adds its fields to the openai body; fields Engram sets and the stream fields stay Engram\'s', async () => {
    const { chat } = setup({
      DERIVER_MODEL_CONFIG__TEMPERATURE: '0.2',
      DERIVER_MODEL_CONFIG__OVERRIDES__PROVIDER_PARAMS: JSON.stringify({ temperature: 1.5, top_k: 40, options: { num_ctx: 8192 }, stream: true, model: 'other' }),
    });
    fake.script.defaultChat({ text: 'ok' });
    await chat.complete(ask('hi'));
    await collect(chat.stream(ask('hi')));
    const [plain, streamed] = fake.requests('chat');
    expect(plain.body).toMatchObject({ model: 'fake-chat', temperature: 0.2, top_k: 40, options: { num_ctx: 8192 } });
    expect(plain.body.stream).toBeUndefined();
    expect(plain.stream).toBe(false);
    expect(streamed.body).toMatchObject({ stream: true, stream_options: { include_usage: true }, top_k: 40 });
  });

  it('adds its fields to the anthropic body and merges gemini generationConfig one level down', async () => {
    const config = load({
      LLM_ANTHROPIC_API_KEY: 'ak',
      LLM_ANTHROPIC_BASE_URL: fake.url,
      LLM_GEMINI_API_KEY: 'gk',
      LLM_GEMINI_BASE_URL: fake.url,
      DERIVER_MODEL_CONFIG__MODEL: 'anthropic/claude-x',
      DERIVER_MODEL_CONFIG__OVERRIDES__PROVIDER_PARAMS: '{"metadata": {"user_id": "u-1"}, "max_tokens": 5}',
      SUMMARY_MODEL_CONFIG__MODEL: 'gemini/gemini-x',
      SUMMARY_MODEL_CONFIG__TEMPERATURE: '0.3',
      SUMMARY_MODEL_CONFIG__OVERRIDES__PROVIDER_PARAMS: '{"safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}], "generationConfig": {"temperature": 1, "candidateCount": 1}}',
    });
    const models = buildModels(config.models);
    fake.script.defaultChat({ text: 'ok' });
    await models.chat('deriver')!.complete(ask('hi', { maxOutputTokens: 300 }));
    await models.chat('summary')!.complete(ask('hi', { module: 'summary', maxOutputTokens: 300 }));
    const [anthropic] = fake.requests('chat', 'anthropic');
    expect(anthropic.body).toMatchObject({ model: 'claude-x', max_tokens: 300, metadata: { user_id: 'u-1' } });
    const [gemini] = fake.requests('chat', 'gemini');
    expect(gemini.body.safetySettings).toEqual([{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }]);
    expect(gemini.body.generationConfig).toEqual({ maxOutputTokens: 300, temperature: 0.3, candidateCount: 1 });
  });
});
