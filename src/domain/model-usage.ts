import type { ChatModel, Embedder, Models } from '../llm/provider.js';
import type { DomainContext } from './context.js';

/*
 * Model calls and tokens per workspace (GET /v3/workspaces/{w}/statistics, docs/inspector.md):
 * the work done for a workspace calls its models through `forWorkspace`, which names the
 * workspace in every request; the transports tell it with each attempt to the observers, and
 * `ModelUsageRecorder` (runtime/model-usage.ts) adds the attempts up per workspace, module, model
 * and hour and writes them a moment later, many calls to a statement.
 */

const UNTAGGED = Symbol('the embedder without the workspace');
type Tagged = { [UNTAGGED]: Embedder };

/** The same models, each call naming `workspaceId` (its usage is counted there). */
export function modelsFor(models: Models, workspaceId: string): Models {
  const chats = new Map<string, ChatModel | undefined>();
  const tagged = (model: ChatModel): ChatModel => ({
    name: model.name,
    structuredOutputMode: model.structuredOutputMode,
    complete: (request) => model.complete({ ...request, workspaceId }),
    stream: (request) => model.stream({ ...request, workspaceId }),
  });
  const embedder = models.embedder;
  const taggedEmbedder: (Embedder & Tagged) | undefined = embedder && {
    name: embedder.name,
    dimensions: () => embedder.dimensions(),
    embed: (texts: string[], signal?: AbortSignal) => embedder.embed(texts, signal, workspaceId),
    [UNTAGGED]: processEmbedder(embedder),
  };
  return {
    chat(module, level) {
      const key = `${module} ${level ?? ''}`;
      if (!chats.has(key)) {
        const model = models.chat(module, level);
        chats.set(key, model === undefined ? undefined : tagged(model));
      }
      return chats.get(key);
    },
    embedder: taggedEmbedder,
  };
}

/** The process's embedder behind one `modelsFor` made (itself when it is the process's). */
export function processEmbedder(embedder: Embedder): Embedder {
  return (embedder as Partial<Tagged>)[UNTAGGED] ?? embedder;
}

/** The context with its models' calls counted for `workspaceId` (unchanged without reasoning or a workspace). */
export function forWorkspace(ctx: DomainContext, workspaceId: string | null | undefined): DomainContext {
  const reasoning = ctx.reasoning;
  if (reasoning === undefined || workspaceId === null || workspaceId === undefined) return ctx;
  return { ...ctx, reasoning: { ...reasoning, models: modelsFor(reasoning.models, workspaceId) } };
}

/** The hours of model usage kept (30 days); older ones are purged with the old work (jobs/cleanup.ts). */
export const MODEL_USAGE_KEPT_HOURS = 720;
