import { describe, expect, it } from 'vitest';
import { splitModel } from '../../src/config/reasoning.js';
import { DEFAULT_REASONING_SETTINGS } from '../../src/domain/reasoning-settings.js';
import { buildModels, describeReasoning } from '../../src/llm/models.js';
import { configProblems as problems, loadEnv as load } from '../support/config-env.js';

describe('model settings', () => {
  it('with nothing set, no module has a model and the start-up line says why', () => {
    const config = load({});
    const models = buildModels(config.models);
    expect(models.chat('deriver')).toBeUndefined();
    expect(models.chat('dialectic', 'max')).toBeUndefined();
    expect(models.embedder).toBeUndefined();
    expect(config.reasoning).toEqual(DEFAULT_REASONING_SETTINGS);
    expect(describeReasoning(config.models)).toMatch(/^reasoning off: no model configured \(set LLM_OPENAI_API_KEY, or LLM_OPENAI_BASE_URL/);
  });

  it('LLM_OPENAI_API_KEY alone turns every module on with the reference defaults', () => {
    const config = load({ LLM_OPENAI_API_KEY: 'sk-x' });
    const models = buildModels(config.models);
    for (const module of ['deriver', 'summary', 'dream_deduction', 'dream_induction', 'dialectic'] as const) expect(models.chat(module)?.name).toBe('openai/gpt-5.4-mini');
    expect(models.embedder?.name).toBe('openai/text-embedding-3-small');
    expect(models.embedder?.dimensions()).toBeUndefined();
    expect(config.models.modules.deriver).toMatchObject({ maxOutputTokens: 2500, structuredOutputMode: 'json_schema', apiKey: 'sk-x', baseUrl: undefined, configured: true });
    expect(describeReasoning(config.models)).toBe(
      'reasoning on: deriver openai/gpt-5.4-mini, dialectic openai/gpt-5.4-mini, embeddings openai/text-embedding-3-small (size from the first answer)',
    );
  });

  it('LLM_MODEL and EMBEDDING_MODEL set every module; a base URL without a key is enough (Ollama)', () => {
    const config = load({ LLM_OPENAI_BASE_URL: 'http://localhost:11434/v1', LLM_MODEL: 'openai/llama3.1', EMBEDDING_MODEL: 'nomic-embed-text' });
    const models = buildModels(config.models);
    expect(models.chat('summary')?.name).toBe('openai/llama3.1');
    expect(models.chat('dialectic', 'minimal')?.name).toBe('openai/llama3.1');
    expect(models.embedder?.name).toBe('openai/nomic-embed-text');
    expect(config.models.modules.deriver).toMatchObject({ apiKey: undefined, baseUrl: 'http://localhost:11434/v1', configured: true });
    expect(describeReasoning(config.models)).toMatch(/^reasoning on: deriver openai\/llama3.1, dialectic openai\/llama3.1, embeddings openai\/nomic-embed-text/);
  });

  it('reads the reference names of a module: model with transport, sampling, output, thinking, overrides', () => {
    const config = load({
      LLM_OPENAI_API_KEY: 'sk-x',
      LLM_MODEL: 'gpt-4o-mini',
      LLM_ANTHROPIC_API_KEY: 'ak',
      DERIVER_MODEL_CONFIG__MODEL: 'anthropic/claude-haiku-4-5',
      DERIVER_MODEL_CONFIG__TEMPERATURE: '0.3',
      DERIVER_MODEL_CONFIG__MAX_OUTPUT_TOKENS: '4000',
      DERIVER_MODEL_CONFIG__STRUCTURED_OUTPUT_MODE: 'json_object',
      DERIVER_MODEL_CONFIG__THINKING_BUDGET_TOKENS: '2048',
      SUMMARY_MODEL_CONFIG__TRANSPORT: 'gemini',
      SUMMARY_MODEL_CONFIG__MODEL: 'gemini-2.5-flash',
      SUMMARY_MODEL_CONFIG__OVERRIDES__API_KEY: 'gk',
      SUMMARY_MODEL_CONFIG__REASONING_EFFORT: 'low',
      DREAM_DEDUCTION_MODEL_CONFIG__OVERRIDES__BASE_URL: 'https://openrouter.example/api/v1/',
      DREAM_INDUCTION_MODEL_CONFIG__STOP_SEQUENCES: 'END, STOP',
    });
    const m = config.models.modules;
    expect(m.deriver).toMatchObject({ transport: 'anthropic', model: 'claude-haiku-4-5', apiKey: 'ak', temperature: 0.3, maxOutputTokens: 4000, structuredOutputMode: 'json_object', thinkingBudgetTokens: 2048, configured: true });
    expect(m.summary).toMatchObject({ transport: 'gemini', model: 'gemini-2.5-flash', apiKey: 'gk', thinkingEffort: 'low', configured: true });
    expect(m.dream_deduction).toMatchObject({ transport: 'openai', model: 'gpt-4o-mini', apiKey: 'sk-x', baseUrl: 'https://openrouter.example/api/v1' });
    expect(m.dream_induction.stopSequences).toEqual(['END', 'STOP']);
    const models = buildModels(config.models);
    expect(models.chat('deriver')?.name).toBe('anthropic/claude-haiku-4-5');
    expect(models.chat('summary')?.name).toBe('gemini/gemini-2.5-flash');
    expect(describeReasoning(config.models)).toContain('reasoning on: deriver anthropic/claude-haiku-4-5, summary gemini/gemini-2.5-flash, dream_deduction openai/gpt-4o-mini');
  });

  it('a module whose transport has no credentials is off, and the line says so', () => {
    const config = load({ LLM_ANTHROPIC_API_KEY: 'ak' });
    expect(buildModels(config.models).chat('deriver')).toBeUndefined();
    expect(describeReasoning(config.models)).toMatch(/^reasoning off: the deriver uses openai, which has no LLM_OPENAI_API_KEY or LLM_OPENAI_BASE_URL/);
    const on = load({ LLM_ANTHROPIC_API_KEY: 'ak', LLM_MODEL: 'anthropic/claude-sonnet-4-5' });
    expect(buildModels(on.models).chat('deriver')?.name).toBe('anthropic/claude-sonnet-4-5');
    expect(buildModels(on.models).embedder).toBeUndefined();
    expect(describeReasoning(on.models)).toContain('embeddings off');
  });

  it('dialectic levels: the reference table, per-level overrides, in lower or upper case', () => {
    const defaults = load({ LLM_OPENAI_API_KEY: 'k' }).models.dialectic;
    expect(Object.fromEntries(Object.entries(defaults).map(([level, s]) => [level, [s.maxToolIterations, s.maxOutputTokens, s.toolChoice]]))).toEqual({
      minimal: [1, 250, 'auto'],
      low: [5, 8192, 'auto'],
      medium: [2, 8192, undefined],
      high: [4, 8192, undefined],
      max: [10, 8192, undefined],
    });
    expect(defaults.minimal.model.maxOutputTokens).toBe(250);
    const config = load({
      LLM_OPENAI_API_KEY: 'k',
      DIALECTIC_LEVELS__high__MODEL_CONFIG__MODEL: 'openai/o4-mini',
      DIALECTIC_LEVELS__high__MAX_TOOL_ITERATIONS: '8',
      DIALECTIC_LEVELS__HIGH__TOOL_CHOICE: 'required',
      DIALECTIC_LEVELS__MAX__MAX_OUTPUT_TOKENS: '16000',
    });
    expect(config.models.dialectic.high).toMatchObject({ maxToolIterations: 8, toolChoice: 'required', model: { model: 'o4-mini' } });
    expect(config.models.dialectic.max).toMatchObject({ maxOutputTokens: 16000, model: { maxOutputTokens: 16000 } });
    const models = buildModels(config.models);
    expect(models.chat('dialectic', 'high')?.name).toBe('openai/o4-mini');
    expect(models.chat('dialectic')?.name).toBe('openai/gpt-5.4-mini');
  });

  it('embeddings: reference names, gemini default model, fixed size', () => {
    const config = load({ LLM_GEMINI_API_KEY: 'g', EMBEDDING_MODEL_CONFIG__TRANSPORT: 'gemini', EMBEDDING_VECTOR_DIMENSIONS: '768', EMBEDDING_MAX_INPUT_TOKENS: '2048' });
    expect(config.models.embedding).toMatchObject({ transport: 'gemini', model: 'gemini-embedding-001', dimensions: 768, configured: true });
    expect(config.reasoning.embeddingMaxInputTokens).toBe(2048);
    const embedder = buildModels(config.models).embedder!;
    expect(embedder.name).toBe('gemini/gemini-embedding-001');
    expect(embedder.dimensions()).toBe(768);
    expect(load({ LLM_OPENAI_API_KEY: 'k', EMBEDDING_MODEL: 'text-embedding-3-large', EMBEDDING_MODEL_CONFIG__MODEL: 'openai/text-embedding-3-small' }).models.embedding.model).toBe('text-embedding-3-small');
  });

  it('splits transport/model strings only on a known transport', () => {
    expect(splitModel('openai/gpt-4o-mini')).toEqual({ transport: 'openai', model: 'gpt-4o-mini' });
    expect(splitModel('Gemini/gemini-2.5-pro')).toEqual({ transport: 'gemini', model: 'gemini-2.5-pro' });
    expect(splitModel('meta-llama/llama-3.1-8b-instruct')).toEqual({ model: 'meta-llama/llama-3.1-8b-instruct' });
    expect(splitModel('openai/openai/gpt-4o')).toEqual({ transport: 'openai', model: 'openai/gpt-4o' });
    expect(splitModel('gpt-4o')).toEqual({ model: 'gpt-4o' });
  });

  it('reads the deriver, summary, dream, peer card, embedding and chat settings of the reference', () => {
    const config = load({
      DERIVER_ENABLED: 'false',
      DERIVER_DEDUPLICATE: 'false',
      DERIVER_MAX_INPUT_TOKENS: '10000',
      DERIVER_MAX_CUSTOM_INSTRUCTIONS_TOKENS: '500',
      DERIVER_REPRESENTATION_BATCH_WORK_UNIT_TARGET_TOKENS: '0',
      DERIVER_REPRESENTATION_BATCH_TARGET_INPUT_TOKENS: '2048',
      DERIVER_REPRESENTATION_BATCH_MAX_AGE_SECONDS: '60',
      DERIVER_FLUSH_ENABLED: 'true',
      SUMMARY_ENABLED: 'no',
      SUMMARY_MESSAGES_PER_SHORT_SUMMARY: '10',
      SUMMARY_MESSAGES_PER_LONG_SUMMARY: '30',
      SUMMARY_MAX_TOKENS_SHORT: '500',
      SUMMARY_MAX_TOKENS_LONG: '2000',
      PEER_CARD_ENABLED: 'false',
      DREAM_ENABLED: 'false',
      DREAM_DOCUMENT_THRESHOLD: '20',
      DREAM_IDLE_TIMEOUT_MINUTES: '5',
      DREAM_MIN_HOURS_BETWEEN_DREAMS: '1',
      DREAM_ENABLED_TYPES: '["omni", "card_refresh"]',
      DREAM_MAX_TOOL_ITERATIONS: '4',
      DREAM_HISTORY_TOKEN_LIMIT: '8000',
      EMBED_MESSAGES: 'false',
      DIALECTIC_MAX_INPUT_TOKENS: '16000',
      DIALECTIC_SESSION_HISTORY_MAX_TOKENS: '1024',
      LLM_MAX_TOOL_OUTPUT_CHARS: '4000',
      LLM_MAX_MESSAGE_CONTENT_CHARS: '500',
      EMBEDDING_MAX_TOKENS_PER_REQUEST: '20000',
    });
    expect(config.reasoning).toEqual({
      deriver: { enabled: false, deduplicate: false, maxInputTokens: 10000, maxCustomInstructionsTokens: 500, workUnitTargetTokens: 0, batchTargetInputTokens: 2048, batchMaxAgeSeconds: 60, flushEnabled: true },
      summary: { enabled: false, messagesPerShortSummary: 10, messagesPerLongSummary: 30, maxTokensShort: 500, maxTokensLong: 2000 },
      peerCardEnabled: false,
      dream: { enabled: false, documentThreshold: 20, idleTimeoutMinutes: 5, minHoursBetweenDreams: 1, enabledTypes: ['omni', 'card_refresh'], maxToolIterations: 4, historyTokenLimit: 8000 },
      embedMessages: false,
      embeddingMaxInputTokens: 8192,
      embeddingMaxTokensPerRequest: 20000,
      chat: { maxInputTokens: 16000, sessionHistoryMaxTokens: 1024, maxToolOutputChars: 4000, maxMessageChars: 500 },
      dialectic: DEFAULT_REASONING_SETTINGS.dialectic,
    });
    expect(problems({ DIALECTIC_MAX_INPUT_TOKENS: '500', LLM_MAX_MESSAGE_CONTENT_CHARS: 'lots' })).toEqual([
      'DIALECTIC_MAX_INPUT_TOKENS must be an integer from 1000 to 10000000, got "500"',
      'LLM_MAX_MESSAGE_CONTENT_CHARS must be an integer from 50 to 10000000, got "lots"',
    ]);
  });

  it('DIALECTIC_MAX_OUTPUT_TOKENS is the default output limit of the levels; minimal keeps its lower one; a level\'s own wins', () => {
    const output = (env: Record<string, string>) => {
      const config = load({ LLM_OPENAI_API_KEY: 'sk-x', ...env });
      return Object.fromEntries(Object.entries(config.reasoning.dialectic!).map(([level, limits]) => [level, [limits.maxOutputTokens, config.models.dialectic[level as 'low'].model.maxOutputTokens]]));
    };
    expect(output({})).toEqual({ minimal: [250, 250], low: [8192, 8192], medium: [8192, 8192], high: [8192, 8192], max: [8192, 8192] });
    expect(output({ DIALECTIC_MAX_OUTPUT_TOKENS: '2000', DIALECTIC_LEVELS__max__MAX_OUTPUT_TOKENS: '16000' })).toEqual({
      minimal: [250, 250],
      low: [2000, 2000],
      medium: [2000, 2000],
      high: [2000, 2000],
      max: [16000, 16000],
    });
    expect(output({ DIALECTIC_MAX_OUTPUT_TOKENS: '100' })).toMatchObject({ minimal: [100, 100], low: [100, 100] });
  });

  it('names the reference settings it does not read, when they are set', () => {
    expect(load({ LLM_OPENAI_API_KEY: 'sk-x' }).settingNotices).toEqual([]);
    expect(load({ EMBEDDING_MODEL_CONFIG__TIMEOUT: '30', GET_CONTEXT_MAX_TOKENS: '50000' }).settingNotices).toEqual([
      'EMBEDDING_MODEL_CONFIG__TIMEOUT is a reference setting Engram does not read: LLM_TIMEOUT_MS bounds every model call',
      'GET_CONTEXT_MAX_TOKENS is a reference setting Engram does not read: the context routes take tokens up to 100,000, as their interface documents',
    ]);
  });

  it('dream types: the reference default, a comma list, and unknown types named', () => {
    expect(load({}).reasoning.dream).toMatchObject({ enabledTypes: ['omni'], maxToolIterations: 20, historyTokenLimit: 16_384 });
    expect(load({ DREAM_ENABLED_TYPES: 'card_refresh' }).reasoning.dream.enabledTypes).toEqual(['card_refresh']);
    expect(load({ DREAM_ENABLED_TYPES: '[]' }).reasoning.dream.enabledTypes).toEqual([]);
    const found = problems({ DREAM_ENABLED_TYPES: 'omni,nap', DREAM_MAX_TOOL_ITERATIONS: '0' });
    expect(found).toContain('DREAM_ENABLED_TYPES may list omni and card_refresh, got "nap"');
    expect(found.some((problem) => problem.startsWith('DREAM_MAX_TOOL_ITERATIONS'))).toBe(true);
  });

  it('call settings: timeout, concurrency and retries', () => {
    expect(load({}).models.calls).toEqual({ timeoutMs: 120_000, maxConcurrentCalls: 8, maxRetries: 3, retryBaseMs: 1000, retryMaxMs: 30_000, fallbackRestMs: 60_000 });
    expect(load({ LLM_TIMEOUT_MS: '5000', LLM_MAX_CONCURRENT_CALLS: '2', LLM_MAX_RETRIES: '0', LLM_FALLBACK_REST_MS: '0' }).models.calls).toMatchObject({
      timeoutMs: 5000,
      maxConcurrentCalls: 2,
      maxRetries: 0,
      fallbackRestMs: 0,
    });
  });

  it('names every bad setting at once', () => {
    const found = problems({
      LLM_OPENAI_BASE_URL: 'localhost:11434',
      DERIVER_MODEL_CONFIG__TEMPERATURE: 'hot',
      DERIVER_MODEL_CONFIG__STRUCTURED_OUTPUT_MODE: 'xml',
      SUMMARY_MODEL_CONFIG__TRANSPORT: 'azure',
      DREAM_DEDUCTION_MODEL_CONFIG__MODEL: 'gemini/gemini-2.5-pro',
      DREAM_DEDUCTION_MODEL_CONFIG__TRANSPORT: 'openai',
      DREAM_INDUCTION_MODEL_CONFIG__TRANSPORT: 'anthropic',
      DREAM_INDUCTION_MODEL_CONFIG__THINKING_BUDGET_TOKENS: '500',
      DIALECTIC_LEVELS__low__MAX_TOOL_ITERATIONS: '0',
      DIALECTIC_LEVELS__low__TOOL_CHOICE: 'sometimes',
      EMBEDDING_VECTOR_DIMENSIONS: '0',
      EMBEDDING_MODEL_CONFIG__TRANSPORT: 'anthropic',
      SUMMARY_MESSAGES_PER_SHORT_SUMMARY: '40',
      SUMMARY_MESSAGES_PER_LONG_SUMMARY: '30',
      DERIVER_FLUSH_ENABLED: 'maybe',
      LLM_TIMEOUT_MS: '-1',
      PORT: 'eighty',
      JOB_DEAD_RETENTION_DAYS: '0',
    });
    const expected = [
      'LLM_OPENAI_BASE_URL must be an http:// or https:// URL, got "localhost:11434"',
      'DERIVER_MODEL_CONFIG__TEMPERATURE must be a number from 0 to 2, got "hot"',
      'DERIVER_MODEL_CONFIG__STRUCTURED_OUTPUT_MODE must be one of json_schema, json_object, none, got "xml"',
      'SUMMARY_MODEL_CONFIG__TRANSPORT must be one of openai, anthropic, gemini, got "azure"',
      'DREAM_DEDUCTION_MODEL_CONFIG__MODEL names transport "gemini" but DREAM_DEDUCTION_MODEL_CONFIG__TRANSPORT is "openai"',
      'DREAM_INDUCTION_MODEL_CONFIG__THINKING_BUDGET_TOKENS must be at least 1024 for the anthropic transport (or 0 for no thinking), got "500"',
      'DIALECTIC_LEVELS__low__MAX_TOOL_ITERATIONS must be an integer from 1 to 100, got "0"',
      'DIALECTIC_LEVELS__low__TOOL_CHOICE must be one of auto, required, none, got "sometimes"',
      'EMBEDDING_VECTOR_DIMENSIONS must be an integer from 1 to 65536, got "0"',
      'EMBEDDING_MODEL_CONFIG__TRANSPORT names anthropic, which has no embeddings: use openai or gemini',
      'SUMMARY_MESSAGES_PER_LONG_SUMMARY (30) must be greater than SUMMARY_MESSAGES_PER_SHORT_SUMMARY (40)',
      'DERIVER_FLUSH_ENABLED must be true or false, got "maybe"',
      'LLM_TIMEOUT_MS must be an integer from 1 to 3600000, got "-1"',
      'PORT must be an integer from 0 to 65535, got "eighty"',
      'JOB_DEAD_RETENTION_DAYS must be an integer from 1 to 3650, got "0"',
    ];
    for (const problem of expected) expect(found).toContain(problem);
  });
});
