import { DEFAULT_REASONING_SETTINGS, type ReasoningSettings } from './domain/reasoning/settings.js';
import type { StructuredOutputMode } from './llm/provider.js';
import { settingReaders, type Read } from './setting-readers.js';
import {
  credentialsHint,
  DEFAULT_CALL_SETTINGS,
  DEFAULT_EMBEDDING_CONCURRENCY,
  DIALECTIC_LEVELS,
  EMBEDDING_ENCODINGS,
  TRANSPORTS,
  type ChatModelSettings,
  type ChatModule,
  type DialecticLevel,
  type DialecticLevelSettings,
  type EmbeddingSettings,
  type ModelSettings,
  type Transport,
  type TransportCredentials,
} from './llm/settings.js';

/**
 * The reasoning and model settings, under the reference's environment names (docs/reasoning.md
 * lists every one) plus Engram's short forms `LLM_MODEL` and `EMBEDDING_MODEL`. Part of
 * `loadConfig`: it reads through the same `read` and reports into the same list of problems.
 */

/** The reference's default model of every chat module. */
export const DEFAULT_CHAT_MODEL = { transport: 'openai' as Transport, model: 'gpt-5.4-mini' };
export const DEFAULT_EMBEDDING_MODELS: Record<Transport, string | undefined> = { openai: 'text-embedding-3-small', gemini: 'gemini-embedding-001', anthropic: undefined };

const CHAT_MODULE_PREFIXES: Record<ChatModule, string> = {
  deriver: 'DERIVER_MODEL_CONFIG__',
  summary: 'SUMMARY_MODEL_CONFIG__',
  dream_deduction: 'DREAM_DEDUCTION_MODEL_CONFIG__',
  dream_induction: 'DREAM_INDUCTION_MODEL_CONFIG__',
};

/** The reference's table of dialectic levels. */
const LEVEL_DEFAULTS: Record<DialecticLevel, { maxToolIterations: number; maxOutputTokens: number; toolChoice?: 'auto' }> = {
  minimal: { maxToolIterations: 1, maxOutputTokens: 250, toolChoice: 'auto' },
  low: { maxToolIterations: 5, maxOutputTokens: 8192, toolChoice: 'auto' },
  medium: { maxToolIterations: 2, maxOutputTokens: 8192 },
  high: { maxToolIterations: 4, maxOutputTokens: 8192 },
  max: { maxToolIterations: 10, maxOutputTokens: 8192 },
};

const STRUCTURED_OUTPUT_MODES: StructuredOutputMode[] = ['json_schema', 'json_object', 'none'];
const THINKING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'];
const TOOL_CHOICES = ['auto', 'required', 'none'] as const;

/** The keys of one model's configuration under its prefix (`<PREFIX>MODEL_CONFIG__`), MODEL aside. */
const MODEL_CONFIG_KEYS = [
  'TRANSPORT',
  'TEMPERATURE',
  'TOP_P',
  'TOP_K',
  'FREQUENCY_PENALTY',
  'PRESENCE_PENALTY',
  'SEED',
  'STOP_SEQUENCES',
  'MAX_OUTPUT_TOKENS',
  'STRUCTURED_OUTPUT_MODE',
  'THINKING_EFFORT',
  'REASONING_EFFORT',
  'THINKING_BUDGET_TOKENS',
  'OVERRIDES__API_KEY',
  'OVERRIDES__API_KEY_ENV',
  'OVERRIDES__BASE_URL',
  'OVERRIDES__PROVIDER_PARAMS',
];

/** `"openai/gpt-4o-mini"` -> transport and model; a prefix that names no transport stays part of the model. */
export function splitModel(value: string): { transport?: Transport; model: string } {
  const slash = value.indexOf('/');
  if (slash > 0) {
    const prefix = value.slice(0, slash).toLowerCase();
    if ((TRANSPORTS as string[]).includes(prefix) && slash < value.length - 1) return { transport: prefix as Transport, model: value.slice(slash + 1) };
  }
  return { model: value };
}

/**
 * Reference settings Engram does not read, with what does the job here: a reference `.env` that
 * sets one is told so at start-up rather than silently ignored.
 */
const NOT_READ: Record<string, string> = {
  DERIVER_WORKERS: 'each server process runs WORKER_CONCURRENCY background jobs at a time, reasoning work at most half of them',
  DERIVER_WORKING_REPRESENTATION_MAX_OBSERVATIONS: "the deriver's prompt holds the batch's messages only, not the stored conclusions",
  DIALECTIC_HISTORY_TOKEN_LIMIT: "a chat's input is bounded by DIALECTIC_MAX_INPUT_TOKENS and DIALECTIC_SESSION_HISTORY_MAX_TOKENS",
  EMBEDDING_MODEL_CONFIG__ENCODING_FORMAT_MODE: 'set EMBEDDING_ENCODING_FORMAT (float or base64)',
  EMBEDDING_MODEL_CONFIG__TIMEOUT: 'LLM_TIMEOUT_MS bounds every model call',
  GET_CONTEXT_MAX_TOKENS: 'the context routes take tokens up to 100,000, as their interface documents',
};

export function parseReasoningConfig(readExact: Read, problems: string[]): { reasoning: ReasoningSettings; models: ModelSettings; settingNotices: string[] } {
  // the reference reads names without regard to case: DIALECTIC_LEVELS__low__ and __LOW__ both work
  const read: Read = (key) => readExact(key) ?? (key.startsWith('DIALECTIC_LEVELS__') ? readExact(key.toUpperCase()) : undefined);
  const { number, integer, boolean, oneOf, url, list } = settingReaders(read, problems);

  const dreamTypes = (): ReasoningSettings['dream']['enabledTypes'] => {
    const types = list('DREAM_ENABLED_TYPES');
    if (types === undefined) return d.dream.enabledTypes;
    const unknown = types.filter((type) => type !== 'omni' && type !== 'card_refresh');
    if (unknown.length > 0) problems.push(`DREAM_ENABLED_TYPES may list omni and card_refresh, got ${unknown.map((type) => `"${type}"`).join(', ')}`);
    return types.filter((type): type is 'omni' | 'card_refresh' => type === 'omni' || type === 'card_refresh');
  };

  const transports = Object.fromEntries(
    TRANSPORTS.map((t) => [t, { apiKey: read(`LLM_${t.toUpperCase()}_API_KEY`), baseUrl: url(`LLM_${t.toUpperCase()}_BASE_URL`) } satisfies TransportCredentials]),
  ) as Record<Transport, TransportCredentials>;
  const defaultMaxTokens = integer('LLM_DEFAULT_MAX_TOKENS', 2500, 1, 1_000_000);

  const llmModel = read('LLM_MODEL');
  const defaultModel = llmModel === undefined ? DEFAULT_CHAT_MODEL : { transport: splitModel(llmModel).transport ?? 'openai', model: splitModel(llmModel).model };

  /** Transport and model of one module: its MODEL (maybe `transport/model`) and TRANSPORT, else LLM_MODEL, else the default. */
  const modelOf = (prefix: string, fallback: { transport: Transport; model: string }, defaultModelFor?: (t: Transport) => string | undefined) => {
    const raw = read(`${prefix}MODEL`);
    const explicit = oneOf(`${prefix}TRANSPORT`, TRANSPORTS);
    if (raw === undefined) {
      const transport = explicit ?? fallback.transport;
      // a transport named without a model gets that transport's default model, when it has one
      const model = explicit !== undefined && explicit !== fallback.transport && defaultModelFor ? (defaultModelFor(explicit) ?? fallback.model) : fallback.model;
      return { transport, model };
    }
    const split = splitModel(raw);
    if (split.transport !== undefined && explicit !== undefined && split.transport !== explicit) {
      problems.push(`${prefix}MODEL names transport "${split.transport}" but ${prefix}TRANSPORT is "${explicit}"`);
    }
    return { transport: explicit ?? split.transport ?? 'openai', model: split.model };
  };

  /** A JSON object (OVERRIDES__PROVIDER_PARAMS). */
  const jsonObject = (key: string): Record<string, unknown> | undefined => {
    const raw = read(key);
    if (raw === undefined) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      value = undefined;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.push(`${key} must be a JSON object, got "${raw}"`);
      return undefined;
    }
    return value as Record<string, unknown>;
  };

  /**
   * A module's FALLBACK__* model, named by FALLBACK__MODEL (other FALLBACK__ keys without it are
   * a mistake); its output limit defaults to the module's. It needs credentials of its own
   * transport: a fallback that can never be called would be found out only when the module's
   * model fails.
   */
  const fallbackOf = (prefix: string, maxOutputTokens: number): ChatModelSettings | undefined => {
    const fallbackPrefix = `${prefix}FALLBACK__`;
    if (read(`${fallbackPrefix}MODEL`) === undefined) {
      const stray = MODEL_CONFIG_KEYS.map((key) => `${fallbackPrefix}${key}`).filter((key) => read(key) !== undefined);
      if (stray.length > 0) problems.push(`${stray.join(', ')} ${stray.length === 1 ? 'is' : 'are'} set but ${fallbackPrefix}MODEL is not: name the fallback model`);
      return undefined;
    }
    const fallback = chatModel(fallbackPrefix, maxOutputTokens, false);
    if (!fallback.configured) problems.push(`${fallbackPrefix}MODEL uses ${fallback.transport}, which has no ${credentialsHint(fallback.transport)} (or set ${fallbackPrefix}OVERRIDES__API_KEY or __BASE_URL)`);
    return fallback.configured ? fallback : undefined;
  };

  const chatModel = (prefix: string, maxOutputTokens: number, withFallback = true): ChatModelSettings => {
    const { transport, model } = modelOf(prefix, defaultModel);
    const apiKey = read(`${prefix}OVERRIDES__API_KEY`) ?? (read(`${prefix}OVERRIDES__API_KEY_ENV`) !== undefined ? read(read(`${prefix}OVERRIDES__API_KEY_ENV`)!) : undefined) ?? transports[transport].apiKey;
    const baseUrl = url(`${prefix}OVERRIDES__BASE_URL`) ?? transports[transport].baseUrl;
    let thinkingBudgetTokens = number(`${prefix}THINKING_BUDGET_TOKENS`, 0, 1_000_000, true);
    if (thinkingBudgetTokens === 0) thinkingBudgetTokens = undefined;
    const outputLimit = integer(`${prefix}MAX_OUTPUT_TOKENS`, maxOutputTokens, 1, 1_000_000);
    if (transport === 'anthropic' && thinkingBudgetTokens !== undefined && thinkingBudgetTokens < 1024) {
      problems.push(`${prefix}THINKING_BUDGET_TOKENS must be at least 1024 for the anthropic transport (or 0 for no thinking), got "${thinkingBudgetTokens}"`);
    }
    return {
      transport,
      model,
      configured: apiKey !== undefined || baseUrl !== undefined,
      apiKey,
      baseUrl,
      temperature: number(`${prefix}TEMPERATURE`, 0, 2, false),
      topP: number(`${prefix}TOP_P`, 0, 1, false),
      topK: number(`${prefix}TOP_K`, 1, 1_000_000, true),
      frequencyPenalty: number(`${prefix}FREQUENCY_PENALTY`, -2, 2, false),
      presencePenalty: number(`${prefix}PRESENCE_PENALTY`, -2, 2, false),
      seed: number(`${prefix}SEED`, -(2 ** 53 - 1), 2 ** 53 - 1, true),
      stopSequences: list(`${prefix}STOP_SEQUENCES`),
      maxOutputTokens: outputLimit,
      structuredOutputMode: oneOf(`${prefix}STRUCTURED_OUTPUT_MODE`, STRUCTURED_OUTPUT_MODES) ?? 'json_schema',
      thinkingEffort: oneOf(`${prefix}THINKING_EFFORT`, THINKING_EFFORTS) ?? oneOf(`${prefix}REASONING_EFFORT`, THINKING_EFFORTS),
      thinkingBudgetTokens,
      providerParams: jsonObject(`${prefix}OVERRIDES__PROVIDER_PARAMS`),
      fallback: withFallback ? fallbackOf(prefix, outputLimit) : undefined,
    };
  };

  const modules = Object.fromEntries(
    Object.entries(CHAT_MODULE_PREFIXES).map(([module, prefix]) => [module, chatModel(prefix, defaultMaxTokens)]),
  ) as Record<ChatModule, ChatModelSettings>;

  const dialecticMaxOutputTokens = integer('DIALECTIC_MAX_OUTPUT_TOKENS', LEVEL_DEFAULTS.low.maxOutputTokens, 1, 1_000_000);
  const dialectic = Object.fromEntries(
    DIALECTIC_LEVELS.map((level) => {
      const prefix = `DIALECTIC_LEVELS__${level}__`;
      const defaults = LEVEL_DEFAULTS[level];
      // DIALECTIC_MAX_OUTPUT_TOKENS is the levels' default; minimal keeps its lower one
      const levelDefault = level === 'minimal' ? Math.min(defaults.maxOutputTokens, dialecticMaxOutputTokens) : dialecticMaxOutputTokens;
      const maxOutputTokens = integer(`${prefix}MAX_OUTPUT_TOKENS`, levelDefault, 1, 1_000_000);
      const settings: DialecticLevelSettings = {
        model: chatModel(`${prefix}MODEL_CONFIG__`, maxOutputTokens),
        maxToolIterations: integer(`${prefix}MAX_TOOL_ITERATIONS`, defaults.maxToolIterations, 1, 100),
        maxOutputTokens,
        toolChoice: oneOf(`${prefix}TOOL_CHOICE`, TOOL_CHOICES) ?? defaults.toolChoice,
      };
      return [level, settings];
    }),
  ) as Record<DialecticLevel, DialecticLevelSettings>;

  const embedding = ((): EmbeddingSettings => {
    const prefix = 'EMBEDDING_MODEL_CONFIG__';
    const short = read('EMBEDDING_MODEL');
    const fallback = short === undefined ? { transport: 'openai' as Transport, model: DEFAULT_EMBEDDING_MODELS.openai! } : { transport: splitModel(short).transport ?? 'openai', model: splitModel(short).model };
    const { transport, model } = modelOf(prefix, fallback, (t) => DEFAULT_EMBEDDING_MODELS[t]);
    if (transport === 'anthropic') problems.push(`${read(`${prefix}TRANSPORT`) !== undefined ? `${prefix}TRANSPORT` : read(`${prefix}MODEL`) !== undefined ? `${prefix}MODEL` : 'EMBEDDING_MODEL'} names anthropic, which has no embeddings: use openai or gemini`);
    const apiKey = read(`${prefix}OVERRIDES__API_KEY`) ?? transports[transport].apiKey;
    const baseUrl = url(`${prefix}OVERRIDES__BASE_URL`) ?? transports[transport].baseUrl;
    return {
      transport,
      model,
      configured: transport !== 'anthropic' && (apiKey !== undefined || baseUrl !== undefined),
      apiKey,
      baseUrl,
      dimensions: number('EMBEDDING_VECTOR_DIMENSIONS', 1, 65_536, true),
      maxInputTokens: integer('EMBEDDING_MAX_INPUT_TOKENS', DEFAULT_REASONING_SETTINGS.embeddingMaxInputTokens, 16, 1_000_000),
      maxConcurrentCalls: integer('EMBEDDING_MAX_CONCURRENT_EMBEDDINGS', DEFAULT_EMBEDDING_CONCURRENCY, 1, 1000),
      encodingFormat: oneOf('EMBEDDING_ENCODING_FORMAT', EMBEDDING_ENCODINGS) ?? (baseUrl === undefined ? 'base64' : 'float'),
    };
  })();

  const calls = {
    timeoutMs: integer('LLM_TIMEOUT_MS', DEFAULT_CALL_SETTINGS.timeoutMs, 1, 3_600_000),
    maxConcurrentCalls: integer('LLM_MAX_CONCURRENT_CALLS', DEFAULT_CALL_SETTINGS.maxConcurrentCalls, 1, 1000),
    maxRetries: integer('LLM_MAX_RETRIES', DEFAULT_CALL_SETTINGS.maxRetries, 0, 20),
    retryBaseMs: integer('LLM_RETRY_BASE_MS', DEFAULT_CALL_SETTINGS.retryBaseMs, 1, 600_000),
    retryMaxMs: integer('LLM_RETRY_MAX_MS', DEFAULT_CALL_SETTINGS.retryMaxMs, 1, 3_600_000),
    fallbackRestMs: integer('LLM_FALLBACK_REST_MS', DEFAULT_CALL_SETTINGS.fallbackRestMs, 0, 86_400_000),
  };

  const d = DEFAULT_REASONING_SETTINGS;
  const messagesPerShortSummary = integer('SUMMARY_MESSAGES_PER_SHORT_SUMMARY', d.summary.messagesPerShortSummary, 10, 1_000_000);
  const messagesPerLongSummary = integer('SUMMARY_MESSAGES_PER_LONG_SUMMARY', d.summary.messagesPerLongSummary, 20, 1_000_000);
  if (messagesPerLongSummary <= messagesPerShortSummary) {
    problems.push(`SUMMARY_MESSAGES_PER_LONG_SUMMARY (${messagesPerLongSummary}) must be greater than SUMMARY_MESSAGES_PER_SHORT_SUMMARY (${messagesPerShortSummary})`);
  }
  const reasoning: ReasoningSettings = {
    deriver: {
      enabled: boolean('DERIVER_ENABLED', d.deriver.enabled),
      deduplicate: boolean('DERIVER_DEDUPLICATE', d.deriver.deduplicate),
      maxInputTokens: integer('DERIVER_MAX_INPUT_TOKENS', d.deriver.maxInputTokens, 1, 10_000_000),
      maxCustomInstructionsTokens: integer('DERIVER_MAX_CUSTOM_INSTRUCTIONS_TOKENS', d.deriver.maxCustomInstructionsTokens, 0, 1_000_000),
      workUnitTargetTokens: integer('DERIVER_REPRESENTATION_BATCH_WORK_UNIT_TARGET_TOKENS', d.deriver.workUnitTargetTokens, 0, 10_000_000),
      batchTargetInputTokens: integer('DERIVER_REPRESENTATION_BATCH_TARGET_INPUT_TOKENS', d.deriver.batchTargetInputTokens, 1, 10_000_000),
      batchMaxAgeSeconds: integer('DERIVER_REPRESENTATION_BATCH_MAX_AGE_SECONDS', d.deriver.batchMaxAgeSeconds, 0, 31_536_000),
      flushEnabled: boolean('DERIVER_FLUSH_ENABLED', d.deriver.flushEnabled),
    },
    summary: {
      enabled: boolean('SUMMARY_ENABLED', d.summary.enabled),
      messagesPerShortSummary,
      messagesPerLongSummary,
      maxTokensShort: integer('SUMMARY_MAX_TOKENS_SHORT', d.summary.maxTokensShort, 1, 1_000_000),
      maxTokensLong: integer('SUMMARY_MAX_TOKENS_LONG', d.summary.maxTokensLong, 1, 1_000_000),
    },
    peerCardEnabled: boolean('PEER_CARD_ENABLED', d.peerCardEnabled),
    dream: {
      enabled: boolean('DREAM_ENABLED', d.dream.enabled),
      documentThreshold: integer('DREAM_DOCUMENT_THRESHOLD', d.dream.documentThreshold, 1, 10_000_000),
      idleTimeoutMinutes: integer('DREAM_IDLE_TIMEOUT_MINUTES', d.dream.idleTimeoutMinutes, 0, 525_600),
      minHoursBetweenDreams: integer('DREAM_MIN_HOURS_BETWEEN_DREAMS', d.dream.minHoursBetweenDreams, 0, 87_600),
      enabledTypes: dreamTypes(),
      maxToolIterations: integer('DREAM_MAX_TOOL_ITERATIONS', d.dream.maxToolIterations, 1, 1_000),
      historyTokenLimit: integer('DREAM_HISTORY_TOKEN_LIMIT', d.dream.historyTokenLimit, 256, 10_000_000),
    },
    chat: {
      maxInputTokens: integer('DIALECTIC_MAX_INPUT_TOKENS', d.chat!.maxInputTokens, 1_000, 10_000_000),
      sessionHistoryMaxTokens: integer('DIALECTIC_SESSION_HISTORY_MAX_TOKENS', d.chat!.sessionHistoryMaxTokens, 0, 10_000_000),
      maxToolOutputChars: integer('LLM_MAX_TOOL_OUTPUT_CHARS', d.chat!.maxToolOutputChars, 100, 10_000_000),
      maxMessageChars: integer('LLM_MAX_MESSAGE_CONTENT_CHARS', d.chat!.maxMessageChars, 50, 10_000_000),
    },
    embedMessages: boolean('EMBED_MESSAGES', d.embedMessages),
    embeddingMaxInputTokens: embedding.maxInputTokens,
    embeddingMaxTokensPerRequest: integer('EMBEDDING_MAX_TOKENS_PER_REQUEST', d.embeddingMaxTokensPerRequest!, 16, 100_000_000),
  };

  reasoning.dialectic = Object.fromEntries(
    DIALECTIC_LEVELS.map((level) => [level, { maxToolIterations: dialectic[level].maxToolIterations, maxOutputTokens: dialectic[level].maxOutputTokens, toolChoice: dialectic[level].toolChoice }]),
  ) as ReasoningSettings['dialectic'];
  const settingNotices = Object.entries(NOT_READ)
    .filter(([name]) => read(name) !== undefined)
    .map(([name, instead]) => `${name} is a reference setting Engram does not read: ${instead}`);
  return { reasoning, models: { transports, modules, dialectic, embedding, calls }, settingNotices };
}
