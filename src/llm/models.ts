import { AnthropicChatModel } from './anthropic/anthropic-provider.js';
import { GeminiChatModel, GeminiEmbedder } from './gemini/gemini-provider.js';
import { FallbackChatModel } from './fallback.js';
import { Semaphore, type ModelCallObserver } from './http-call.js';
import { OpenAiChatModel, OpenAiEmbedder } from './openai/openai-provider.js';
import type { ChatModel, Embedder, Models } from './provider.js';
import type { ChatModelSettings, ChatModule, DialecticLevel, ModelSettings, Transport } from './settings.js';
import { credentialsHint, DIALECTIC_LEVELS } from './settings.js';

export type { ModelCallEvent, ModelCallObserver } from './http-call.js';
export type { FallbackEvent } from './fallback.js';

const CHAT_MODULES: ChatModule[] = ['deriver', 'summary', 'dream_deduction', 'dream_induction'];

/**
 * The models of this process, one per module as configured; a module whose transport has no
 * key and no base URL gets none (its reasoning is off). Calls to one endpoint share one limit.
 */
export function buildModels(settings: ModelSettings, observer?: ModelCallObserver): Models {
  const limiters = new Map<string, Semaphore>();
  const limiterFor = (transport: Transport, baseUrl: string | undefined) => {
    const key = `${transport} ${baseUrl ?? ''}`;
    let limiter = limiters.get(key);
    if (!limiter) limiters.set(key, (limiter = new Semaphore(settings.calls.maxConcurrentCalls)));
    return limiter;
  };
  const chatModel = (model: ChatModelSettings): ChatModel | undefined => {
    const primary = transportModel(model);
    const fallback = model.fallback && transportModel(model.fallback);
    if (primary === undefined || fallback === undefined) return primary;
    return new FallbackChatModel(primary, fallback, settings.calls.fallbackRestMs, (event) => observer?.onFallback?.(event));
  };
  const transportModel = (model: ChatModelSettings): ChatModel | undefined => {
    if (!model.configured) return undefined;
    const context = { calls: settings.calls, limiter: limiterFor(model.transport, model.baseUrl), observer, model: `${model.transport}/${model.model}` };
    switch (model.transport) {
      case 'openai':
        return new OpenAiChatModel(model, context);
      case 'anthropic':
        return new AnthropicChatModel(model, context);
      case 'gemini':
        return new GeminiChatModel(model, context);
    }
  };
  const modules = new Map<ChatModule, ChatModel | undefined>(CHAT_MODULES.map((module) => [module, chatModel(settings.modules[module])]));
  const levels = new Map<DialecticLevel, ChatModel | undefined>(DIALECTIC_LEVELS.map((level) => [level, chatModel(settings.dialectic[level].model)]));

  const e = settings.embedding;
  let embedder: Embedder | undefined;
  if (e.configured) {
    const context = {
      calls: settings.calls,
      limiter: limiterFor(e.transport, e.baseUrl),
      ownLimiter: new Semaphore(e.maxConcurrentCalls),
      observer,
      module: 'embedding',
      model: `${e.transport}/${e.model}`,
    };
    embedder = e.transport === 'gemini' ? new GeminiEmbedder(e, context) : new OpenAiEmbedder(e, context);
  }

  return {
    chat: (module, level = 'low') => (module === 'dialectic' ? levels.get(level) : modules.get(module)),
    embedder,
  };
}


/** The start-up line that says whether reasoning is on, with which models, and if not why. */
export function describeReasoning(settings: ModelSettings): string {
  const deriver = settings.modules.deriver;
  const e = settings.embedding;
  const embedding = e.configured
    ? `embeddings ${e.transport}/${e.model} (${e.dimensions !== undefined ? `${e.dimensions} dimensions` : 'size from the first answer'})`
    : `embeddings off (no ${credentialsHint(e.transport)}: semantic search falls back to full text)`;
  if (!deriver.configured) {
    const anyCredentials = Object.values(settings.transports).some((c) => c.apiKey !== undefined || c.baseUrl !== undefined);
    const why = anyCredentials
      ? `the deriver uses ${deriver.transport}, which has no ${credentialsHint(deriver.transport)} (set DERIVER_MODEL_CONFIG__TRANSPORT or LLM_MODEL=<transport>/<model>)`
      : 'no model configured (set LLM_OPENAI_API_KEY, or LLM_OPENAI_BASE_URL with LLM_MODEL and EMBEDDING_MODEL for an OpenAI-compatible server such as Ollama)';
    return `reasoning off: ${why}; ${embedding}`;
  }
  const named = (model: ChatModelSettings) => `${model.transport}/${model.model}${model.fallback ? ` (fallback ${model.fallback.transport}/${model.fallback.model})` : ''}`;
  const others = CHAT_MODULES.filter((m) => m !== 'deriver')
    .map((m) => [m, settings.modules[m]] as const)
    .filter(([, model]) => named(model) !== named(deriver) || !model.configured)
    .map(([m, model]) => `${m} ${model.configured ? named(model) : 'off'}`);
  const chat = settings.dialectic.low.model;
  const chatPart = `dialectic ${chat.configured ? named(chat) : 'off'}`;
  return `reasoning on: deriver ${named(deriver)}${others.length ? `, ${others.join(', ')}` : ''}, ${chatPart}, ${embedding}`;
}

/** Tells every observer of each call. */
export function observeModelCalls(observers: Array<ModelCallObserver | undefined>): ModelCallObserver {
  const present = observers.filter((o): o is ModelCallObserver => o !== undefined);
  return {
    onModelCall: (event) => present.forEach((o) => o.onModelCall(event)),
    onFallback: (event) => present.forEach((o) => o.onFallback?.(event)),
  };
}

/** The part of a pino logger failed calls are written to. */
export interface ModelCallLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** One log line per failed model call attempt, and one per failed call passed to a fallback model. */
export function logFailedModelCalls(logger: ModelCallLogger): ModelCallObserver {
  return {
    onModelCall(event) {
      if (!event.error) return;
      logger.warn(
        {
          module: event.module,
          model: event.model,
          reason: event.error.reason,
          status: event.error.status,
          attempt: event.attempt + 1,
          willRetry: event.willRetry,
          ms: Math.round(event.durationMs),
          error: event.error.message,
        },
        'model call failed',
      );
    },
    onFallback(event) {
      // a call sent straight to the fallback while the module's model rests was logged when it began
      if (!event.error) return;
      logger.warn(
        { module: event.module, model: event.model, fallback: event.fallback, reason: event.reason, status: event.error.status, error: event.error.message },
        'model call failed for good; asking the fallback model',
      );
    },
  };
}
