import { DIALECTIC_LEVEL_NAMES, SETTINGS, TRANSPORT_NAMES } from '../config/settings.js';
import type { ModelModule, StructuredOutputMode } from './provider.js';

/** The model settings of this process, parsed in config.ts (docs/reasoning.md lists them). */

export type Transport = (typeof TRANSPORT_NAMES)[number];
export const TRANSPORTS: readonly Transport[] = TRANSPORT_NAMES;

/** The settings that give a transport its credentials, as messages name them. */
export const credentialsHint = (transport: Transport) => `LLM_${transport.toUpperCase()}_API_KEY or LLM_${transport.toUpperCase()}_BASE_URL`;

export type DialecticLevel = (typeof DIALECTIC_LEVEL_NAMES)[number];
export const DIALECTIC_LEVELS: readonly DialecticLevel[] = DIALECTIC_LEVEL_NAMES;

/** LLM_<TRANSPORT>_API_KEY and LLM_<TRANSPORT>_BASE_URL. */
export interface TransportCredentials {
  apiKey?: string;
  baseUrl?: string;
}

/** One module's model: `<PREFIX>MODEL_CONFIG__*`. */
export interface ChatModelSettings {
  transport: Transport;
  model: string;
  /** Whether the transport (or the module's override) has a key or a base URL. */
  configured: boolean;
  /** OVERRIDES__API_KEY / OVERRIDES__BASE_URL, else the transport's. */
  apiKey?: string;
  baseUrl?: string;
  temperature?: number;
  topP?: number;
  topK?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  seed?: number;
  stopSequences?: string[];
  /** MAX_OUTPUT_TOKENS, else LLM_DEFAULT_MAX_TOKENS (2500). */
  maxOutputTokens: number;
  structuredOutputMode: StructuredOutputMode;
  /** THINKING_EFFORT (alias REASONING_EFFORT): openai `reasoning_effort`, gemini thinking level. */
  thinkingEffort?: string;
  /** THINKING_BUDGET_TOKENS: anthropic extended thinking (>= 1024), gemini thinking budget. */
  thinkingBudgetTokens?: number;
  /**
   * OVERRIDES__PROVIDER_PARAMS: fields added to every request body of this model (gemini: its
   * `generationConfig` merged too); a field Engram sets itself keeps Engram's value.
   */
  providerParams?: Record<string, unknown>;
  /** FALLBACK__*: the model asked when a call to this one has failed for good (llm/fallback.ts). */
  fallback?: ChatModelSettings;
}

export interface DialecticLevelSettings {
  model: ChatModelSettings;
  maxToolIterations: number;
  maxOutputTokens: number;
  /** Undefined: the model's default. */
  toolChoice?: 'auto' | 'required' | 'none';
}

export interface EmbeddingSettings {
  transport: Transport;
  model: string;
  configured: boolean;
  apiKey?: string;
  baseUrl?: string;
  /** EMBEDDING_VECTOR_DIMENSIONS; undefined: learnt from the first answer. */
  dimensions?: number;
  /** EMBEDDING_MAX_INPUT_TOKENS (8192). */
  maxInputTokens: number;
  /** EMBEDDING_MAX_CONCURRENT_EMBEDDINGS (10): embedding calls in flight at once, within the endpoint's LLM_MAX_CONCURRENT_CALLS. */
  maxConcurrentCalls: number;
  /**
   * EMBEDDING_ENCODING_FORMAT, openai transport: how vectors come back, `float` (JSON numbers) or
   * `base64` (little-endian float32, a quarter of the size and no number parsing). Default:
   * base64 from OpenAI's own API, float from any other server (not every compatible one has it).
   */
  encodingFormat: EmbeddingEncoding;
}

export type EmbeddingEncoding = (typeof SETTINGS.EMBEDDING_ENCODING_FORMAT.values)[number];

/** How calls are made: the same for every transport. */
export interface CallSettings {
  /** LLM_TIMEOUT_MS (120000): one attempt's limit (a stream's: the wait for each chunk). */
  timeoutMs: number;
  /** LLM_MAX_CONCURRENT_CALLS (8): calls in flight at once per transport. */
  maxConcurrentCalls: number;
  /** LLM_MAX_RETRIES (3): further attempts after a 429, a 5xx or a dropped connection. */
  maxRetries: number;
  /** LLM_RETRY_BASE_MS (1000): first backoff, doubling with jitter. */
  retryBaseMs: number;
  /** LLM_RETRY_MAX_MS (30000): the longest wait inside a call; a longer Retry-After fails the call as retryable. */
  retryMaxMs: number;
  /** LLM_FALLBACK_REST_MS (60000): after a call passed to a FALLBACK__ model, how long calls go straight to it. */
  fallbackRestMs: number;
}

export type ChatModule = Exclude<ModelModule, 'dialectic'>;

export interface ModelSettings {
  transports: Record<Transport, TransportCredentials>;
  modules: Record<ChatModule, ChatModelSettings>;
  dialectic: Record<DialecticLevel, DialecticLevelSettings>;
  embedding: EmbeddingSettings;
  calls: CallSettings;
}

/** EMBEDDING_MAX_CONCURRENT_EMBEDDINGS's default. */
export const DEFAULT_EMBEDDING_CONCURRENCY: number = SETTINGS.EMBEDDING_MAX_CONCURRENT_EMBEDDINGS.default;

export const DEFAULT_CALL_SETTINGS: CallSettings = {
  timeoutMs: SETTINGS.LLM_TIMEOUT_MS.default,
  maxConcurrentCalls: SETTINGS.LLM_MAX_CONCURRENT_CALLS.default,
  maxRetries: SETTINGS.LLM_MAX_RETRIES.default,
  retryBaseMs: SETTINGS.LLM_RETRY_BASE_MS.default,
  retryMaxMs: SETTINGS.LLM_RETRY_MAX_MS.default,
  fallbackRestMs: SETTINGS.LLM_FALLBACK_REST_MS.default,
};
