import { ModelError, type StreamEvent, type Usage } from './provider.js';
import type { FallbackEvent } from './fallback.js';
import type { CallSettings } from './settings.js';

/**
 * How every transport talks HTTP: a limit on calls in flight per transport, a timeout per
 * attempt, retries of 429 / 5xx / dropped connections with backoff that honours `Retry-After`,
 * the caller's abort signal, errors as `ModelError`, and one observer event per attempt.
 */

/** One attempt of a model call, as metrics and logs see it. */
export interface ModelCallEvent {
  /** `deriver`, `summary`, `dialectic`, `dream_deduction`, `dream_induction` or `embedding`. */
  module: string;
  /** `transport/model`. */
  model: string;
  durationMs: number;
  /** Tokens, when the attempt succeeded. */
  usage?: Usage;
  /** Why it failed, when it did. */
  error?: ModelError;
  /** Whether another attempt follows this failed one. */
  willRetry: boolean;
  /** 0 for the first attempt. */
  attempt: number;
  /** The workspace the call was made for, when the caller said (CompletionRequest.workspaceId). */
  workspaceId?: string;
}

/** Told of every attempt of every model call (metrics, logs), and of each call passed to a fallback model. */
export interface ModelCallObserver {
  onModelCall(event: ModelCallEvent): void;
  onFallback?(event: FallbackEvent): void;
}

/** A counting semaphore whose waiters leave the queue when their call is aborted. */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly max: number) {}

  get inUse(): number {
    return this.active;
  }

  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) throw abortedError(signal);
    if (this.active < this.max) {
      this.active++;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const wake = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const index = this.waiters.indexOf(wake);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(abortedError(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(wake);
    });
    // the slot was handed over by the releaser: `active` already counts it
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.active--;
    };
  }
}

export interface CallContext {
  calls: CallSettings;
  limiter: Semaphore;
  /** A limit of this model's own calls (EMBEDDING_MAX_CONCURRENT_EMBEDDINGS), taken before the endpoint's. */
  ownLimiter?: Semaphore;
  observer?: ModelCallObserver;
  module: string;
  model: string;
  /** The workspace the call is made for, told to the observer with each attempt. */
  workspaceId?: string;
}

function abortedError(signal: AbortSignal): ModelError {
  return new ModelError('the model call was aborted', false, undefined, undefined, { cause: signal.reason, reason: 'aborted' });
}

/** One attempt: its own abort controller, tied to the caller's signal and to a timer. */
class Attempt {
  readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private timedOut = false;
  private readonly onCallerAbort = () => this.controller.abort(this.caller?.reason);

  constructor(
    private readonly timeoutMs: number,
    private readonly caller: AbortSignal | undefined,
  ) {
    caller?.addEventListener('abort', this.onCallerAbort, { once: true });
    this.touch();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Restarts the timer (a stream calls it on every chunk). */
  readonly touch = (): void => {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort(new Error('timeout'));
    }, this.timeoutMs);
  };

  end(): void {
    clearTimeout(this.timer);
    this.caller?.removeEventListener('abort', this.onCallerAbort);
  }

  failure(error: unknown): ModelError {
    if (this.caller?.aborted) return abortedError(this.caller);
    if (this.timedOut) return new ModelError(`no answer within ${this.timeoutMs} ms (LLM_TIMEOUT_MS)`, true, undefined, undefined, { cause: error, reason: 'timeout' });
    if (error instanceof ModelError) return error;
    if (error instanceof SyntaxError) return new ModelError(`the answer is not valid JSON: ${error.message}`, false, undefined, undefined, { cause: error, reason: 'bad_response' });
    const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
    const detail = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
    return new ModelError(`connection failed: ${detail}`, true, undefined, undefined, { cause: error, reason: 'network' });
  }
}

/** `Retry-After` in seconds or as an HTTP date, or `retry-after-ms` (OpenAI), in milliseconds. */
export function parseRetryAfter(headers: Headers, now = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Math.ceil(Number(ms));
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.ceil(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The error a non-2xx answer stands for, with the provider's own message. */
export async function httpError(response: Response, transport: string): Promise<ModelError> {
  let detail = '';
  try {
    const text = await response.text();
    try {
      const body = JSON.parse(text);
      const error = Array.isArray(body) ? body[0]?.error : body?.error;
      detail = typeof error === 'string' ? error : error?.message ?? body?.message ?? text;
    } catch {
      detail = text;
    }
  } catch {
    // the body could not be read; the status says enough
  }
  detail = String(detail).slice(0, 500);
  const status = response.status;
  const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
  return new ModelError(
    `${transport} answered ${status}${detail ? `: ${detail}` : ''}`,
    retryable,
    status,
    retryable ? parseRetryAfter(response.headers) : undefined,
    { reason: status === 429 ? 'rate_limited' : status >= 500 ? 'server_error' : status === 408 ? 'timeout' : 'client_error' },
  );
}

/** The wait before the next attempt, or undefined when the error is final. */
function retryDelay(error: ModelError, attempt: number, calls: CallSettings): number | undefined {
  if (!error.retryable || attempt >= calls.maxRetries) return undefined;
  // a timeout already spent a whole attempt's budget: the job's own retry decides what next
  if (error.reason === 'timeout') return undefined;
  if (error.retryAfterMs !== undefined) return error.retryAfterMs <= calls.retryMaxMs ? error.retryAfterMs : undefined;
  const backoff = calls.retryBaseMs * 2 ** attempt;
  return Math.min(calls.retryMaxMs, Math.round(backoff * (0.75 + Math.random() * 0.5)));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortedError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The slots an attempt holds: the model's own limit, if any, then its endpoint's; one release for both. */
async function acquireSlots(context: CallContext, signal: AbortSignal | undefined): Promise<() => void> {
  const releaseOwn = await context.ownLimiter?.acquire(signal);
  try {
    const release = await context.limiter.acquire(signal);
    return () => {
      release();
      releaseOwn?.();
    };
  } catch (error) {
    releaseOwn?.();
    throw error;
  }
}

/**
 * Runs `op` (one HTTP exchange, answer read and mapped) under the transport's limit, with the
 * timeout and retries. `op` throws `httpError(...)` for non-2xx answers.
 */
export async function runCall<T>(
  context: CallContext,
  signal: AbortSignal | undefined,
  op: (signal: AbortSignal) => Promise<{ value: T; usage?: Usage }>,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const release = await acquireSlots(context, signal);
    const started = performance.now();
    const current = new Attempt(context.calls.timeoutMs, signal);
    let wait: number | undefined;
    try {
      const { value, usage } = await op(current.signal);
      context.observer?.onModelCall({ module: context.module, model: context.model, workspaceId: context.workspaceId, durationMs: performance.now() - started, usage: usage ?? { inputTokens: 0, outputTokens: 0 }, willRetry: false, attempt });
      return value;
    } catch (caught) {
      const error = current.failure(caught);
      wait = retryDelay(error, attempt, context.calls);
      context.observer?.onModelCall({ module: context.module, model: context.model, workspaceId: context.workspaceId, durationMs: performance.now() - started, error, willRetry: wait !== undefined, attempt });
      if (wait === undefined) throw error;
    } finally {
      current.end();
      release();
    }
    await sleep(wait, signal);
  }
}

/** One server-sent event. */
export interface SseEvent {
  event?: string;
  data: string;
}

/** Server-sent events of a response body; `touch` is called on every chunk received. */
export async function* readSse(body: ReadableStream<Uint8Array>, touch: () => void): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event: string | undefined;
  let data: string[] = [];
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      touch();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.search(/\r?\n|\r/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer[newline] === '\r' && buffer[newline + 1] === '\n' ? 2 : 1));
        if (line === '') {
          if (data.length > 0) yield { event, data: data.join('\n') };
          event = undefined;
          data = [];
        } else if (line.startsWith('data:')) {
          data.push(line.slice(5).replace(/^ /, ''));
        } else if (line.startsWith('event:')) {
          event = line.slice(6).trim();
        }
      }
      if (done) {
        if (buffer.startsWith('data:')) data.push(buffer.slice(5).replace(/^ /, ''));
        if (data.length > 0) yield { event, data: data.join('\n') };
        return;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Opens a stream with the same limit, timeout (per chunk) and retries as `runCall` (only the
 * opening is retried: once events have been handed out a failure ends the stream), then yields
 * what `parse` makes of the response. The slot is held until the stream ends or is left.
 */
export async function* runStream(
  context: CallContext,
  signal: AbortSignal | undefined,
  open: (signal: AbortSignal) => Promise<Response>,
  parse: (response: Response, touch: () => void) => AsyncIterable<StreamEvent>,
): AsyncGenerator<StreamEvent> {
  for (let attempt = 0; ; attempt++) {
    const release = await acquireSlots(context, signal);
    const started = performance.now();
    const current = new Attempt(context.calls.timeoutMs, signal);
    let response: Response;
    try {
      response = await open(current.signal);
    } catch (caught) {
      current.end();
      release();
      const error = current.failure(caught);
      const wait = retryDelay(error, attempt, context.calls);
      context.observer?.onModelCall({ module: context.module, model: context.model, workspaceId: context.workspaceId, durationMs: performance.now() - started, error, willRetry: wait !== undefined, attempt });
      if (wait === undefined) throw error;
      await sleep(wait, signal);
      continue;
    }
    let finished = false;
    try {
      for await (const event of parse(response, current.touch)) {
        if (event.type === 'done') {
          finished = true;
          context.observer?.onModelCall({ module: context.module, model: context.model, workspaceId: context.workspaceId, durationMs: performance.now() - started, usage: event.usage, willRetry: false, attempt });
        }
        yield event;
      }
      if (!finished) throw new ModelError('the stream ended before the answer was complete', true, undefined, undefined, { reason: 'network' });
      return;
    } catch (caught) {
      const error = current.failure(caught);
      context.observer?.onModelCall({ module: context.module, model: context.model, workspaceId: context.workspaceId, durationMs: performance.now() - started, error, willRetry: false, attempt });
      throw error;
    } finally {
      // a consumer that stops early closes the connection
      if (!current.signal.aborted) current.controller.abort(new Error('stream closed'));
      current.end();
      release();
    }
  }
}

const STREAM_FIELDS = ['stream', 'stream_options'];

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A request body with a model's OVERRIDES__PROVIDER_PARAMS added: a field Engram sets keeps
 * Engram's value; the object fields named in `nested` (gemini's generationConfig) are merged one
 * level down the same way; the stream fields are left to the call. Built by spreading, so a
 * `__proto__` key stays a plain field.
 */
export function withProviderParams(body: Record<string, unknown>, params: Record<string, unknown> | undefined, nested: readonly string[] = []): Record<string, unknown> {
  if (params === undefined) return body;
  const merged: Record<string, unknown> = { ...params, ...body };
  for (const key of nested) {
    if (isObject(params[key]) && isObject(body[key])) merged[key] = { ...params[key], ...body[key] };
  }
  // whether a call streams is the call's own
  for (const key of STREAM_FIELDS) if (!(key in body)) delete merged[key];
  return merged;
}

/** POSTs JSON; a non-2xx answer becomes a ModelError. */
export async function postJson(url: string, headers: Record<string, string>, body: unknown, signal: AbortSignal, transport: string): Promise<Response> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal });
  if (!response.ok) throw await httpError(response, transport);
  return response;
}

/** Reads a JSON answer; anything else is a bad response. */
export async function readJson(response: Response, transport: string): Promise<any> {
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new ModelError(`${transport} answered something that is not JSON: ${text.slice(0, 200)}`, false, response.status, undefined, { reason: 'bad_response' });
  }
}

/** The arguments of a tool call sent back to a model: text that is no JSON (or none) is `{}`. */
export function parseToolArguments(text: string): unknown {
  try {
    return JSON.parse(text || '{}');
  } catch {
    return {};
  }
}

/** The data of one streamed event as JSON; anything else is a bad response. */
export function streamedJson(transport: string, data: string): any {
  try {
    return JSON.parse(data);
  } catch {
    throw new ModelError(`${transport} streamed something that is not JSON: ${data.slice(0, 200)}`, false, undefined, undefined, { reason: 'bad_response' });
  }
}

export function badResponse(transport: string, what: string): ModelError {
  return new ModelError(`${transport} answered without ${what}`, false, undefined, undefined, { reason: 'bad_response' });
}
