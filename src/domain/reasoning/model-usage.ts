import type { ModelCallEvent, ModelCallObserver } from '../../llm/http-call.js';
import type { ChatModel, Embedder, Models } from '../../llm/provider.js';
import type { ModelUsageRow, WorkspaceStore } from '../../storage/store.js';
import type { DomainContext } from '../context.js';

/*
 * Model calls and tokens per workspace (GET /v3/workspaces/{w}/statistics, docs/inspector.md):
 * the work done for a workspace calls its models through `forWorkspace`, which names the
 * workspace in every request; the transports tell it with each attempt to the observers, and
 * `ModelUsageRecorder` adds the attempts up per workspace, module, model and hour and writes them
 * a moment later, many calls to a statement.
 */

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
  return {
    chat(module, level) {
      const key = `${module} ${level ?? ''}`;
      if (!chats.has(key)) {
        const model = models.chat(module, level);
        chats.set(key, model === undefined ? undefined : tagged(model));
      }
      return chats.get(key);
    },
    embedder:
      embedder === undefined
        ? undefined
        : { name: embedder.name, dimensions: () => embedder.dimensions(), embed: (texts, signal) => embedder.embed(texts, signal, workspaceId) } satisfies Embedder,
  };
}

/** The context with its models' calls counted for `workspaceId` (unchanged without reasoning or a workspace). */
export function forWorkspace(ctx: DomainContext, workspaceId: string | null | undefined): DomainContext {
  const reasoning = ctx.reasoning;
  if (reasoning === undefined || workspaceId === null || workspaceId === undefined) return ctx;
  return { ...ctx, reasoning: { ...reasoning, models: modelsFor(reasoning.models, workspaceId) } };
}

/** The hours of model usage kept (30 days); older ones are purged with the old work (jobs/cleanup.ts). */
export const MODEL_USAGE_KEPT_HOURS = 720;

const COUNTED = ['calls', 'failedCalls', 'inputTokens', 'outputTokens'] as const;

/** How long attempts are added up in memory before they are written (what a crash can lose). */
export const USAGE_WRITE_DELAY_MS = 250;

/**
 * Adds up the attempts of calls made for a workspace (the others are not counted here) and
 * writes them `delayMs` after the first one not yet written: a call costs the hot path one map
 * update, and a burst of calls one statement per workspace, module, model and hour. `flush`
 * writes what is pending at once (a process stopping). A row whose write fails keeps its counts
 * for the next write.
 */
export class ModelUsageRecorder implements ModelCallObserver {
  private pending = new Map<string, ModelUsageRow>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: { readonly workspaces: Pick<WorkspaceStore, 'addModelUsage'> },
    private readonly options: { delayMs?: number; now?: () => number; onError?: (error: unknown) => void } = {},
  ) {}

  onModelCall(event: ModelCallEvent): void {
    if (event.workspaceId === undefined) return;
    const hour = Math.floor((this.options.now?.() ?? Date.now()) / 3_600_000);
    const key = `${event.workspaceId}\u0000${hour}\u0000${event.module}\u0000${event.model}`;
    let row = this.pending.get(key);
    if (row === undefined) {
      row = { workspaceId: event.workspaceId, hour, module: event.module, model: event.model, calls: 0, failedCalls: 0, inputTokens: 0, outputTokens: 0 };
      this.pending.set(key, row);
    }
    row.calls++;
    if (event.error !== undefined) row.failedCalls++;
    if (event.usage !== undefined) {
      row.inputTokens += event.usage.inputTokens;
      row.outputTokens += event.usage.outputTokens;
    }
    this.timer ??= setTimeout(() => void this.flush(), this.options.delayMs ?? USAGE_WRITE_DELAY_MS).unref();
  }

  /** Writes what is pending (after any write under way); resolves when it is written or kept for the next. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const rows = this.pending;
    this.pending = new Map();
    this.writing = this.writing.then(async () => {
      for (const [key, row] of rows) {
        try {
          await this.store.workspaces.addModelUsage([row]);
        } catch (error) {
          // kept for the next write, added to what came since
          this.options.onError?.(error);
          const since = this.pending.get(key);
          if (since === undefined) this.pending.set(key, row);
          else for (const field of COUNTED) since[field] += row[field];
        }
      }
    });
    return this.writing;
  }
}
