import { ModelError, type ChatModel, type Completion, type CompletionRequest, type ModelFailureReason, type StreamEvent, type StructuredOutputMode } from './provider.js';

/** A call that went to a module's fallback model instead of the module's model. */
export interface FallbackEvent {
  module: string;
  /** `transport/model` of the module's model, and of the fallback asked instead. */
  model: string;
  fallback: string;
  /**
   * Why: the reason the module's model failed (`error` then says how), or `resting` when the
   * call went straight to the fallback because the module's model failed shortly before.
   */
  reason: ModelFailureReason | 'resting';
  error?: ModelError;
}

/**
 * Whether a failure says the model is down for other calls too: an outage (rate limits, 5xx,
 * timeouts, dropped connections) or a refused key or unknown model (401, 403, 404). A 400 or a
 * malformed answer belongs to the one request.
 */
function restsAfter(error: ModelError): boolean {
  return error.retryable || error.status === 401 || error.status === 403 || error.status === 404;
}

/** How strong each structured-output mode is: a fallback is never asked for more than its own setting. */
const STRENGTH: Record<StructuredOutputMode, number> = { none: 0, json_object: 1, json_schema: 2 };

/**
 * A module's model with its FALLBACK__ model behind it. A call goes to the module's model, with
 * that model's retries (http-call.ts); when it fails for good with a ModelError (rate limits or
 * 5xx past the retries, a timeout, a refused key, a model the server does not know), the same
 * request goes to the fallback, with its own retries. For `restMs` after a failure that says
 * the model is down (restsAfter) calls go straight to the fallback, so that an outage does not
 * cost every call the module model's retries or timeout first; the first call after that tries
 * the module's model again. A call the
 * caller aborted is not passed on, and neither is a stream that has already handed out part of
 * its answer: the client has it. Structured output is asked of the fallback in its own mode
 * when that is weaker than the request's (a local server without JSON schemas behind a hosted
 * model).
 */
export class FallbackChatModel implements ChatModel {
  readonly name: string;
  readonly structuredOutputMode: StructuredOutputMode;
  /** Until when (ms since the epoch) calls skip the module's model. */
  private restingUntil = 0;

  constructor(
    private readonly primary: ChatModel,
    private readonly fallback: ChatModel,
    private readonly restMs: number,
    private readonly onFallback?: (event: FallbackEvent) => void,
  ) {
    this.name = primary.name;
    this.structuredOutputMode = primary.structuredOutputMode;
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    if (this.resting(request)) return this.fallback.complete(this.forFallback(request));
    try {
      return await this.primary.complete(request);
    } catch (error) {
      if (!this.passesOn(error, request)) throw error;
      this.failed(request, error);
      return this.fallback.complete(this.forFallback(request));
    }
  }

  async *stream(request: CompletionRequest): AsyncGenerator<StreamEvent> {
    if (!this.resting(request)) {
      let started = false;
      try {
        for await (const event of this.primary.stream(request)) {
          started = true;
          yield event;
        }
        return;
      } catch (error) {
        if (started || !this.passesOn(error, request)) throw error;
        this.failed(request, error);
      }
    }
    yield* this.fallback.stream(this.forFallback(request));
  }

  /** Whether the module's model is resting after a failure: the call is told to go to the fallback. */
  private resting(request: CompletionRequest): boolean {
    if (Date.now() >= this.restingUntil) return false;
    this.onFallback?.({ module: request.module, model: this.primary.name, fallback: this.fallback.name, reason: 'resting' });
    return true;
  }

  private failed(request: CompletionRequest, error: ModelError): void {
    if (restsAfter(error)) this.restingUntil = Date.now() + this.restMs;
    this.onFallback?.({ module: request.module, model: this.primary.name, fallback: this.fallback.name, reason: error.reason, error });
  }

  private passesOn(error: unknown, request: CompletionRequest): error is ModelError {
    return error instanceof ModelError && error.reason !== 'aborted' && request.signal?.aborted !== true;
  }

  private forFallback(request: CompletionRequest): CompletionRequest {
    // without a mode in the request each model uses its own
    const asked = request.json?.mode;
    const own = this.fallback.structuredOutputMode;
    if (request.json === undefined || asked === undefined || STRENGTH[asked] <= STRENGTH[own]) return request;
    return { ...request, json: { ...request.json, mode: own } };
  }
}
