import type { ModelCallEvent, ModelCallObserver } from '../llm/models.js';
import type { ModelUsageRow, WorkspaceStore } from '../storage/store.js';

/*
 * Model calls and tokens per workspace, kept in the store (GET /v3/workspaces/{w}/statistics):
 * the attempts of calls made for a workspace (domain/model-usage.ts names it in each
 * request) added up here and written in batches.
 */

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
