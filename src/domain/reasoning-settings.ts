import { LEVEL_DEFAULTS, SETTINGS } from '../config/settings.js';

/**
 * The reasoning layer's settings, as the domain sees them (parsed from the environment in
 * config.ts with the reference's names; docs/reasoning.md lists every one).
 */
export interface ReasoningSettings {
  deriver: {
    /** DERIVER_ENABLED (true): queue representation work when messages are created. */
    enabled: boolean;
    /** DERIVER_DEDUPLICATE (true): semantic deduplication of new conclusions. */
    deduplicate: boolean;
    /** DERIVER_MAX_INPUT_TOKENS (25000). */
    maxInputTokens: number;
    /** DERIVER_MAX_CUSTOM_INSTRUCTIONS_TOKENS (2000). */
    maxCustomInstructionsTokens: number;
    /** DERIVER_REPRESENTATION_BATCH_WORK_UNIT_TARGET_TOKENS (512; 0 = no token gate). */
    workUnitTargetTokens: number;
    /** DERIVER_REPRESENTATION_BATCH_TARGET_INPUT_TOKENS (1024). */
    batchTargetInputTokens: number;
    /** DERIVER_REPRESENTATION_BATCH_MAX_AGE_SECONDS (1800). */
    batchMaxAgeSeconds: number;
    /** DERIVER_FLUSH_ENABLED (false): take every unit at once, whatever its size and age. */
    flushEnabled: boolean;
  };
  summary: {
    /** SUMMARY_ENABLED (true). */
    enabled: boolean;
    /** SUMMARY_MESSAGES_PER_SHORT_SUMMARY (20). */
    messagesPerShortSummary: number;
    /** SUMMARY_MESSAGES_PER_LONG_SUMMARY (60). */
    messagesPerLongSummary: number;
    /** SUMMARY_MAX_TOKENS_SHORT (1000), SUMMARY_MAX_TOKENS_LONG (4000). */
    maxTokensShort: number;
    maxTokensLong: number;
  };
  /** PEER_CARD_ENABLED (true): default of peer_card.use and peer_card.create. */
  peerCardEnabled: boolean;
  dream: {
    /** DREAM_ENABLED (true), DREAM_DOCUMENT_THRESHOLD (50), DREAM_IDLE_TIMEOUT_MINUTES (60), DREAM_MIN_HOURS_BETWEEN_DREAMS (8). */
    enabled: boolean;
    documentThreshold: number;
    idleTimeoutMinutes: number;
    minHoursBetweenDreams: number;
    /** DREAM_ENABLED_TYPES (["omni"]): the types run automatically (a requested dream of any type runs). */
    enabledTypes: readonly ('omni' | 'card_refresh')[];
    /** DREAM_MAX_TOOL_ITERATIONS (20): most tool turns of any one specialist (each has its own lower default). */
    maxToolIterations: number;
    /** DREAM_HISTORY_TOKEN_LIMIT (16384): a specialist's input over this drops its oldest tool turns. */
    historyTokenLimit: number;
  };
  /** EMBED_MESSAGES (true): embed messages in the background. */
  embedMessages: boolean;
  /** EMBEDDING_MAX_INPUT_TOKENS (8192): longer texts are embedded in overlapping chunks. */
  embeddingMaxInputTokens: number;
  /** EMBEDDING_MAX_TOKENS_PER_REQUEST (300000): most tokens sent in one embedding request; the default when absent. */
  embeddingMaxTokensPerRequest?: number;
  /**
   * Peer chat: DIALECTIC_MAX_INPUT_TOKENS (100000: input over this drops the oldest tool turns),
   * DIALECTIC_SESSION_HISTORY_MAX_TOKENS (4096: the newest session messages in the prompt),
   * LLM_MAX_TOOL_OUTPUT_CHARS (10000: of one tool result) and LLM_MAX_MESSAGE_CONTENT_CHARS
   * (2000: of one message a tool or the prompt shows). The defaults when absent.
   */
  chat?: { maxInputTokens: number; sessionHistoryMaxTokens: number; maxToolOutputChars: number; maxMessageChars: number };
  /** DIALECTIC_LEVELS__<level>__{MAX_TOOL_ITERATIONS,MAX_OUTPUT_TOKENS,TOOL_CHOICE}; the reference's table when absent. */
  dialectic?: Record<'minimal' | 'low' | 'medium' | 'high' | 'max', { maxToolIterations: number; maxOutputTokens: number; toolChoice?: 'auto' | 'required' | 'none' }>;
}

const S = SETTINGS;

/** The peer chat's limits when no setting gives them (also the defaults of the tools that apply them). */
export const DEFAULT_CHAT_LIMITS: Readonly<NonNullable<ReasoningSettings['chat']>> = {
  maxInputTokens: S.DIALECTIC_MAX_INPUT_TOKENS.default,
  sessionHistoryMaxTokens: S.DIALECTIC_SESSION_HISTORY_MAX_TOKENS.default,
  maxToolOutputChars: S.LLM_MAX_TOOL_OUTPUT_CHARS.default,
  maxMessageChars: S.LLM_MAX_MESSAGE_CONTENT_CHARS.default,
};

/** EMBEDDING_MAX_TOKENS_PER_REQUEST's default: the most input tokens one embeddings request carries. */
export const DEFAULT_EMBEDDING_TOKENS_PER_REQUEST: number = S.EMBEDDING_MAX_TOKENS_PER_REQUEST.default;

/** The settings' defaults (config/settings.ts), for code and tests that build settings without a configuration. */
export const DEFAULT_REASONING_SETTINGS: ReasoningSettings = {
  deriver: {
    enabled: S.DERIVER_ENABLED.default,
    deduplicate: S.DERIVER_DEDUPLICATE.default,
    maxInputTokens: S.DERIVER_MAX_INPUT_TOKENS.default,
    maxCustomInstructionsTokens: S.DERIVER_MAX_CUSTOM_INSTRUCTIONS_TOKENS.default,
    workUnitTargetTokens: S.DERIVER_REPRESENTATION_BATCH_WORK_UNIT_TARGET_TOKENS.default,
    batchTargetInputTokens: S.DERIVER_REPRESENTATION_BATCH_TARGET_INPUT_TOKENS.default,
    batchMaxAgeSeconds: S.DERIVER_REPRESENTATION_BATCH_MAX_AGE_SECONDS.default,
    flushEnabled: S.DERIVER_FLUSH_ENABLED.default,
  },
  summary: {
    enabled: S.SUMMARY_ENABLED.default,
    messagesPerShortSummary: S.SUMMARY_MESSAGES_PER_SHORT_SUMMARY.default,
    messagesPerLongSummary: S.SUMMARY_MESSAGES_PER_LONG_SUMMARY.default,
    maxTokensShort: S.SUMMARY_MAX_TOKENS_SHORT.default,
    maxTokensLong: S.SUMMARY_MAX_TOKENS_LONG.default,
  },
  peerCardEnabled: S.PEER_CARD_ENABLED.default,
  dream: {
    enabled: S.DREAM_ENABLED.default,
    documentThreshold: S.DREAM_DOCUMENT_THRESHOLD.default,
    idleTimeoutMinutes: S.DREAM_IDLE_TIMEOUT_MINUTES.default,
    minHoursBetweenDreams: S.DREAM_MIN_HOURS_BETWEEN_DREAMS.default,
    enabledTypes: S.DREAM_ENABLED_TYPES.default,
    maxToolIterations: S.DREAM_MAX_TOOL_ITERATIONS.default,
    historyTokenLimit: S.DREAM_HISTORY_TOKEN_LIMIT.default,
  },
  embedMessages: S.EMBED_MESSAGES.default,
  embeddingMaxInputTokens: S.EMBEDDING_MAX_INPUT_TOKENS.default,
  embeddingMaxTokensPerRequest: DEFAULT_EMBEDDING_TOKENS_PER_REQUEST,
  chat: { ...DEFAULT_CHAT_LIMITS },
  // the reference's level table (reasoning.md R1)
  dialectic: Object.fromEntries(
    Object.entries(LEVEL_DEFAULTS).map(([level, d]) => [level, { maxToolIterations: d.MAX_TOOL_ITERATIONS, maxOutputTokens: d.MAX_OUTPUT_TOKENS, ...('TOOL_CHOICE' in d ? { toolChoice: d.TOOL_CHOICE } : {}) }]),
  ) as ReasoningSettings['dialectic'],
};
