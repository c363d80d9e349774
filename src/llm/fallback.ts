import { ModelError, type ChatModel, type Completion, type CompletionRequest, type StreamEvent, type StructuredOutputMode } from './provider.js';

/** A call to a module's model that failed for good and went to its fallback model. */
export interface FallbackEvent {
  module: string;
  /** `transport/model` of the model that failed, and of the fallback asked instead. */
  model: string;
  fallback: string;
  error: ModelError;
}

/** How strong each structured-output mode is: a fallback is never asked for more than its own setting. */
const STRENGTH: Record<StructuredOutputMode, number> = { none: 0, json_object: 1, json_schema: 2 };

/**
 * A module's model with its FALLBACK__ model behind it. A call goes to the module's model, with
 * that model's retries (http-call.ts); when it fails for good with a ModelError (rate limits or
 * 5xx past the retries, a timeout, a refused key, a model the server does not know), the same
 * request goes to the fallback, with its own retries. A call the caller aborted is not passed
 * on, and neither is a stream that has already handed out part of its answer: the client has
 * it. Structured output is asked of the fallback in its own mode when that is weaker than the
 * request's (a local server without JSON schemas behind a hosted model).
 */
export class FallbackChatModel implements ChatModel {
  readonly name: string;
  readonly structuredOutputMode: StructuredOutputMode;

  constructor(
    private readonly primary: ChatModel,
    private readonly fallback: ChatModel,
    private readonly onFallback?: (event: FallbackEvent) => void,
  ) {
    this.name = primary.name;
    this.structuredOutputMode = primary.structuredOutputMode;
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    try {
      return await this.primary.complete(request);
    } catch (error) {
      if (!this.passesOn(error, request)) throw error;
      this.onFallback?.({ module: request.module, model: this.primary.name, fallback: this.fallback.name, error });
      return this.fallback.complete(this.forFallback(request));
    }
  }

  async *stream(request: CompletionRequest): AsyncGenerator<StreamEvent> {
    let started = false;
    try {
      for await (const event of this.primary.stream(request)) {
        started = true;
        yield event;
      }
      return;
    } catch (error) {
      if (started || !this.passesOn(error, request)) throw error;
      this.onFallback?.({ module: request.module, model: this.primary.name, fallback: this.fallback.name, error });
    }
    yield* this.fallback.stream(this.forFallback(request));
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
