import type { ReasoningSettings } from '../domain/reasoning-settings.js';
import {
  credentialsHint,
  DIALECTIC_LEVELS,
  TRANSPORTS,
  type ChatModelSettings,
  type ChatModule,
  type DialecticLevel,
  type DialecticLevelSettings,
  type EmbeddingSettings,
  type ModelSettings,
  type Transport,
  type TransportCredentials,
} from '../llm/settings.js';
import { settingReader, type Read } from './read-settings.js';
import { CHAT_MODEL_PREFIXES, EMBEDDING_MODEL_PREFIX, LEVEL_DEFAULTS, levelPrefix, MODEL_KEYS, SETTINGS } from './settings.js';

/**
 * The reasoning and model settings, under the reference's environment names (config/settings.ts
 * declares every one) plus Engram's short forms `LLM_MODEL` and `EMBEDDING_MODEL`. Part of
 * `loadConfig`: it reads through the same `read` and reports into the same list of problems.
 */

/** The reference's default model of every chat module. */
export const DEFAULT_CHAT_MODEL = { transport: 'openai' as Transport, model: 'gpt-5.4-mini' };
export const DEFAULT_EMBEDDING_MODELS: Record<Transport, string | undefined> = { openai: 'text-embedding-3-small', gemini: 'gemini-embedding-001', anthropic: undefined };

/** `"openai/gpt-4o-mini"` -> transport and model; a prefix that names no transport stays part of the model. */
export function splitModel(value: string): { transport?: Transport; model: string } {
  const slash = value.indexOf('/');
  if (slash > 0) {
    const prefix = value.slice(0, slash).toLowerCase();
    if ((TRANSPORTS as string[]).includes(prefix) && slash < value.length - 1) return { transport: prefix as Transport, model: value.slice(slash + 1) };
  }
  return { model: value };
}

export function parseReasoningConfig(readExact: Read, problems: string[]): { reasoning: ReasoningSettings; models: ModelSettings; settingNotices: string[] } {
  // the reference reads names without regard to case: DIALECTIC_LEVELS__low__ and __LOW__ both work
  const read: Read = (key) => readExact(key) ?? (key.startsWith('DIALECTIC_LEVELS__') ? readExact(key.toUpperCase()) : undefined);
  const { get, model: modelKey, level: levelKey } = settingReader(read, problems);

  const transports: Record<Transport, TransportCredentials> = {
    openai: { apiKey: get('LLM_OPENAI_API_KEY'), baseUrl: get('LLM_OPENAI_BASE_URL') },
    anthropic: { apiKey: get('LLM_ANTHROPIC_API_KEY'), baseUrl: get('LLM_ANTHROPIC_BASE_URL') },
    gemini: { apiKey: get('LLM_GEMINI_API_KEY'), baseUrl: get('LLM_GEMINI_BASE_URL') },
  };
  const defaultMaxTokens = get('LLM_DEFAULT_MAX_TOKENS');

  const llmModel = get('LLM_MODEL');
  const defaultModel = llmModel === undefined ? DEFAULT_CHAT_MODEL : { transport: splitModel(llmModel).transport ?? 'openai', model: splitModel(llmModel).model };

  /** Transport and model of one module: its MODEL (maybe `transport/model`) and TRANSPORT, else LLM_MODEL, else the default. */
  const modelOf = (prefix: string, fallback: { transport: Transport; model: string }, defaultModelFor?: (t: Transport) => string | undefined) => {
    const raw = modelKey(prefix, 'MODEL');
    const explicit = modelKey(prefix, 'TRANSPORT');
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

  /**
   * A module's FALLBACK__* model, named by FALLBACK__MODEL (other FALLBACK__ keys without it are
   * a mistake); its output limit defaults to the module's. It needs credentials of its own
   * transport: a fallback that can never be called would be found out only when the module's
   * model fails.
   */
  const fallbackOf = (prefix: string, maxOutputTokens: number): ChatModelSettings | undefined => {
    const fallbackPrefix = `${prefix}FALLBACK__`;
    if (read(`${fallbackPrefix}MODEL`) === undefined) {
      const stray = Object.keys(MODEL_KEYS)
        .filter((key) => key !== 'MODEL')
        .map((key) => `${fallbackPrefix}${key}`)
        .filter((key) => read(key) !== undefined);
      if (stray.length > 0) problems.push(`${stray.join(', ')} ${stray.length === 1 ? 'is' : 'are'} set but ${fallbackPrefix}MODEL is not: name the fallback model`);
      return undefined;
    }
    const fallback = chatModel(fallbackPrefix, maxOutputTokens, false);
    if (!fallback.configured) problems.push(`${fallbackPrefix}MODEL uses ${fallback.transport}, which has no ${credentialsHint(fallback.transport)} (or set ${fallbackPrefix}OVERRIDES__API_KEY or __BASE_URL)`);
    return fallback.configured ? fallback : undefined;
  };

  const chatModel = (prefix: string, maxOutputTokens: number, withFallback = true): ChatModelSettings => {
    const { transport, model } = modelOf(prefix, defaultModel);
    const keyVariable = modelKey(prefix, 'OVERRIDES__API_KEY_ENV');
    const apiKey = modelKey(prefix, 'OVERRIDES__API_KEY') ?? (keyVariable !== undefined ? read(keyVariable) : undefined) ?? transports[transport].apiKey;
    const baseUrl = modelKey(prefix, 'OVERRIDES__BASE_URL') ?? transports[transport].baseUrl;
    let thinkingBudgetTokens = modelKey(prefix, 'THINKING_BUDGET_TOKENS');
    if (thinkingBudgetTokens === 0) thinkingBudgetTokens = undefined;
    const outputLimit = modelKey(prefix, 'MAX_OUTPUT_TOKENS') ?? maxOutputTokens;
    if (transport === 'anthropic' && thinkingBudgetTokens !== undefined && thinkingBudgetTokens < 1024) {
      problems.push(`${prefix}THINKING_BUDGET_TOKENS must be at least 1024 for the anthropic transport (or 0 for no thinking), got "${thinkingBudgetTokens}"`);
    }
    return {
      transport,
      model,
      configured: apiKey !== undefined || baseUrl !== undefined,
      apiKey,
      baseUrl,
      temperature: modelKey(prefix, 'TEMPERATURE'),
      topP: modelKey(prefix, 'TOP_P'),
      topK: modelKey(prefix, 'TOP_K'),
      frequencyPenalty: modelKey(prefix, 'FREQUENCY_PENALTY'),
      presencePenalty: modelKey(prefix, 'PRESENCE_PENALTY'),
      seed: modelKey(prefix, 'SEED'),
      stopSequences: modelKey(prefix, 'STOP_SEQUENCES'),
      maxOutputTokens: outputLimit,
      structuredOutputMode: modelKey(prefix, 'STRUCTURED_OUTPUT_MODE'),
      thinkingEffort: modelKey(prefix, 'THINKING_EFFORT') ?? modelKey(prefix, 'REASONING_EFFORT'),
      thinkingBudgetTokens,
      providerParams: modelKey(prefix, 'OVERRIDES__PROVIDER_PARAMS'),
      fallback: withFallback ? fallbackOf(prefix, outputLimit) : undefined,
    };
  };

  const modules = Object.fromEntries(
    Object.entries(CHAT_MODEL_PREFIXES).map(([module, prefix]) => [module, chatModel(prefix, defaultMaxTokens)]),
  ) as Record<ChatModule, ChatModelSettings>;

  const dialecticMaxOutputTokens = get('DIALECTIC_MAX_OUTPUT_TOKENS');
  const dialectic = Object.fromEntries(
    DIALECTIC_LEVELS.map((level) => {
      const prefix = levelPrefix(level);
      const defaults: { MAX_TOOL_ITERATIONS: number; MAX_OUTPUT_TOKENS: number; TOOL_CHOICE?: 'auto' } = LEVEL_DEFAULTS[level];
      // DIALECTIC_MAX_OUTPUT_TOKENS is the levels' default; minimal keeps its lower one
      const levelDefault = level === 'minimal' ? Math.min(defaults.MAX_OUTPUT_TOKENS, dialecticMaxOutputTokens) : dialecticMaxOutputTokens;
      const maxOutputTokens = levelKey(prefix, 'MAX_OUTPUT_TOKENS') ?? levelDefault;
      const settings: DialecticLevelSettings = {
        model: chatModel(`${prefix}MODEL_CONFIG__`, maxOutputTokens),
        maxToolIterations: levelKey(prefix, 'MAX_TOOL_ITERATIONS') ?? defaults.MAX_TOOL_ITERATIONS,
        maxOutputTokens,
        toolChoice: levelKey(prefix, 'TOOL_CHOICE') ?? defaults.TOOL_CHOICE,
      };
      return [level, settings];
    }),
  ) as Record<DialecticLevel, DialecticLevelSettings>;

  const embedding = ((): EmbeddingSettings => {
    const prefix = EMBEDDING_MODEL_PREFIX;
    const short = get('EMBEDDING_MODEL');
    const fallback = short === undefined ? { transport: 'openai' as Transport, model: DEFAULT_EMBEDDING_MODELS.openai! } : { transport: splitModel(short).transport ?? 'openai', model: splitModel(short).model };
    const { transport, model } = modelOf(prefix, fallback, (t) => DEFAULT_EMBEDDING_MODELS[t]);
    if (transport === 'anthropic') problems.push(`${read(`${prefix}TRANSPORT`) !== undefined ? `${prefix}TRANSPORT` : read(`${prefix}MODEL`) !== undefined ? `${prefix}MODEL` : 'EMBEDDING_MODEL'} names anthropic, which has no embeddings: use openai or gemini`);
    const apiKey = modelKey(prefix, 'OVERRIDES__API_KEY') ?? transports[transport].apiKey;
    const baseUrl = modelKey(prefix, 'OVERRIDES__BASE_URL') ?? transports[transport].baseUrl;
    return {
      transport,
      model,
      configured: transport !== 'anthropic' && (apiKey !== undefined || baseUrl !== undefined),
      apiKey,
      baseUrl,
      dimensions: get('EMBEDDING_VECTOR_DIMENSIONS'),
      maxInputTokens: get('EMBEDDING_MAX_INPUT_TOKENS'),
      maxConcurrentCalls: get('EMBEDDING_MAX_CONCURRENT_EMBEDDINGS'),
      encodingFormat: get('EMBEDDING_ENCODING_FORMAT') ?? (baseUrl === undefined ? 'base64' : 'float'),
    };
  })();

  const calls = {
    timeoutMs: get('LLM_TIMEOUT_MS'),
    maxConcurrentCalls: get('LLM_MAX_CONCURRENT_CALLS'),
    maxRetries: get('LLM_MAX_RETRIES'),
    retryBaseMs: get('LLM_RETRY_BASE_MS'),
    retryMaxMs: get('LLM_RETRY_MAX_MS'),
    fallbackRestMs: get('LLM_FALLBACK_REST_MS'),
  };

  const messagesPerShortSummary = get('SUMMARY_MESSAGES_PER_SHORT_SUMMARY');
  const messagesPerLongSummary = get('SUMMARY_MESSAGES_PER_LONG_SUMMARY');
  if (messagesPerLongSummary <= messagesPerShortSummary) {
    problems.push(`SUMMARY_MESSAGES_PER_LONG_SUMMARY (${messagesPerLongSummary}) must be greater than SUMMARY_MESSAGES_PER_SHORT_SUMMARY (${messagesPerShortSummary})`);
  }
  const reasoning: ReasoningSettings = {
    deriver: {
      enabled: get('DERIVER_ENABLED'),
      deduplicate: get('DERIVER_DEDUPLICATE'),
      maxInputTokens: get('DERIVER_MAX_INPUT_TOKENS'),
      maxCustomInstructionsTokens: get('DERIVER_MAX_CUSTOM_INSTRUCTIONS_TOKENS'),
      workUnitTargetTokens: get('DERIVER_REPRESENTATION_BATCH_WORK_UNIT_TARGET_TOKENS'),
      batchTargetInputTokens: get('DERIVER_REPRESENTATION_BATCH_TARGET_INPUT_TOKENS'),
      batchMaxAgeSeconds: get('DERIVER_REPRESENTATION_BATCH_MAX_AGE_SECONDS'),
      flushEnabled: get('DERIVER_FLUSH_ENABLED'),
    },
    summary: {
      enabled: get('SUMMARY_ENABLED'),
      messagesPerShortSummary,
      messagesPerLongSummary,
      maxTokensShort: get('SUMMARY_MAX_TOKENS_SHORT'),
      maxTokensLong: get('SUMMARY_MAX_TOKENS_LONG'),
    },
    peerCardEnabled: get('PEER_CARD_ENABLED'),
    dream: {
      enabled: get('DREAM_ENABLED'),
      documentThreshold: get('DREAM_DOCUMENT_THRESHOLD'),
      idleTimeoutMinutes: get('DREAM_IDLE_TIMEOUT_MINUTES'),
      minHoursBetweenDreams: get('DREAM_MIN_HOURS_BETWEEN_DREAMS'),
      enabledTypes: get('DREAM_ENABLED_TYPES') as ('omni' | 'card_refresh')[],
      maxToolIterations: get('DREAM_MAX_TOOL_ITERATIONS'),
      historyTokenLimit: get('DREAM_HISTORY_TOKEN_LIMIT'),
    },
    chat: {
      maxInputTokens: get('DIALECTIC_MAX_INPUT_TOKENS'),
      sessionHistoryMaxTokens: get('DIALECTIC_SESSION_HISTORY_MAX_TOKENS'),
      maxToolOutputChars: get('LLM_MAX_TOOL_OUTPUT_CHARS'),
      maxMessageChars: get('LLM_MAX_MESSAGE_CONTENT_CHARS'),
    },
    embedMessages: get('EMBED_MESSAGES'),
    embeddingMaxInputTokens: embedding.maxInputTokens,
    embeddingMaxTokensPerRequest: get('EMBEDDING_MAX_TOKENS_PER_REQUEST'),
  };

  reasoning.dialectic = Object.fromEntries(
    DIALECTIC_LEVELS.map((level) => [level, { maxToolIterations: dialectic[level].maxToolIterations, maxOutputTokens: dialectic[level].maxOutputTokens, toolChoice: dialectic[level].toolChoice }]),
  ) as ReasoningSettings['dialectic'];
  // reference settings Engram does not read, named at start-up with what does their job here
  const settingNotices = Object.entries(SETTINGS)
    .filter(([name, spec]) => spec.kind === 'not read' && read(name) !== undefined)
    .map(([name, spec]) => `${name} is a reference setting Engram does not read: ${spec.help}`);
  return { reasoning, models: { transports, modules, dialectic, embedding, calls }, settingNotices };
}
