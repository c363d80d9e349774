/**
 * What the reasoning layer asks of a language model and of an embedding model. The domain
 * imports only this file; the transports (`openai`, `anthropic`, `gemini`) implement it and
 * `main.ts` / `app.ts` pick them from the settings, as they pick the store.
 */

/** The parts of Engram that call models; each has its own model settings and metrics label. */
export type ModelModule = 'deriver' | 'summary' | 'dialectic' | 'dream_deduction' | 'dream_induction';

export type JsonSchema = { [key: string]: unknown };

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: JsonSchema;
}

export interface ToolCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them (JSON text); parse and validate before use. */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

/**
 * How to ask for JSON: `json_schema` (structured output with the schema), `json_object` (any
 * JSON object; the schema must be in the prompt), or `none` (plain text; the prompt asks for JSON).
 */
export type StructuredOutputMode = 'json_schema' | 'json_object' | 'none';

export interface CompletionRequest {
  module: ModelModule;
  messages: ChatMessage[];
  maxOutputTokens?: number;
  /** Ask for a JSON answer matching `schema` in the given mode (default: the module's setting). */
  json?: {
    name: string;
    schema: JsonSchema;
    mode?: StructuredOutputMode;
    /** `json_schema` mode: ask the provider to enforce the schema strictly (default false: many servers refuse strict schemas with optional fields). */
    strict?: boolean;
  };
  tools?: ToolSpec[];
  toolChoice?: 'auto' | 'required' | 'none';
  /** Aborts the call (a client that went away, a job past its lease). */
  signal?: AbortSignal;
  /** The workspace the call is made for: its calls and tokens are counted there (model_usage). */
  workspaceId?: string;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

export interface Completion {
  /** The answer's text ('' when the model only called tools). */
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  /** As the provider reports it: 'stop', 'length', 'tool_calls' ... */
  finishReason: string;
}

/** One event of a streamed completion; the last one is always `done`. */
export type StreamEvent =
  | { type: 'text'; text: string }
  | { type: 'tool_call'; call: ToolCall }
  | { type: 'done'; usage: Usage; finishReason: string };

export interface ChatModel {
  /** `transport/model`, for logs and metrics. */
  readonly name: string;
  /** The structured-output mode this model is configured for. */
  readonly structuredOutputMode: StructuredOutputMode;
  complete(request: CompletionRequest): Promise<Completion>;
  stream(request: CompletionRequest): AsyncIterable<StreamEvent>;
}

export interface Embedder {
  /** `transport/model`. */
  readonly name: string;
  /** The vector size: configured, or learnt from the first answer (undefined until then). */
  dimensions(): number | undefined;
  /** One vector per text, in order; `workspaceId`: the workspace the call is made for (its usage is counted there). */
  embed(texts: string[], signal?: AbortSignal, workspaceId?: string): Promise<number[][]>;
}

/** The models of this process; a module without a model has reasoning off. */
export interface Models {
  /** `dialectic` takes a reasoning level (default `low`); the other modules ignore it. */
  chat(module: ModelModule, level?: 'minimal' | 'low' | 'medium' | 'high' | 'max'): ChatModel | undefined;
  embedder: Embedder | undefined;
}

/** Why a model call failed, as metrics and logs name it. */
export type ModelFailureReason =
  | 'rate_limited'
  | 'server_error'
  | 'timeout'
  | 'network'
  | 'aborted'
  | 'client_error'
  | 'bad_response';

/**
 * A model call that failed. `retryable` says whether trying again later can help (rate limits,
 * 5xx, timeouts, connection errors); `retryAfterMs` is the provider's own hint when it gave one.
 */
export class ModelError extends Error {
  readonly reason: ModelFailureReason;

  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown; reason?: ModelFailureReason },
  ) {
    super(message, options);
    this.name = 'ModelError';
    this.reason =
      options?.reason ?? (status === 429 ? 'rate_limited' : status !== undefined && status >= 500 ? 'server_error' : status !== undefined ? 'client_error' : retryable ? 'network' : 'bad_response');
  }
}
