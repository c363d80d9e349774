import { describe, expect, it } from 'vitest';
import type { ModelCallEvent } from '../../src/llm/models.js';
import { ModelError } from '../../src/llm/provider.js';
import { ModelUsageRecorder } from '../../src/runtime/model-usage.js';
import type { ModelUsageRow } from '../../src/storage/store.js';

/*
 * The recorder of each workspace's model usage (runtime/model-usage.ts) without a database: what it
 * adds up from the transports' attempt events, and that a failed write loses nothing.
 */

const HOUR = 3_600_000;
const event = (workspaceId: string | undefined, extra: Partial<ModelCallEvent> = {}): ModelCallEvent => ({
  module: 'deriver',
  model: 'openai/m',
  durationMs: 5,
  willRetry: false,
  attempt: 0,
  workspaceId,
  ...extra,
});

describe('ModelUsageRecorder', () => {
  it('adds attempts up per workspace, module, model and hour, skips calls made for no workspace, and keeps what a failed write held', async () => {
    const written: ModelUsageRow[][] = [];
    let failNext = true;
    let now = 10 * HOUR + 5;
    const store = {
      workspaces: {
        async addModelUsage(rows: readonly ModelUsageRow[]) {
          if (failNext) {
            failNext = false;
            throw new Error('database away');
          }
          written.push(rows.map((r) => ({ ...r })));
        },
      },
    };
    const errors: unknown[] = [];
    const recorder = new ModelUsageRecorder(store, { delayMs: 60_000, now: () => now, onError: (error) => errors.push(error) });
    recorder.onModelCall(event('w1', { usage: { inputTokens: 10, outputTokens: 2 } }));
    recorder.onModelCall(event('w1', { error: new ModelError('answered 500', true), willRetry: true }));
    recorder.onModelCall(event(undefined, { usage: { inputTokens: 99, outputTokens: 99 } }));
    await recorder.flush();
    expect(errors).toHaveLength(1);
    expect(written).toEqual([]);

    // kept, and added to what came since
    recorder.onModelCall(event('w1', { usage: { inputTokens: 5, outputTokens: 1 } }));
    now += HOUR;
    recorder.onModelCall(event('w1', { module: 'embedding', model: 'openai/e', usage: { inputTokens: 7, outputTokens: 0 } }));
    await recorder.flush();
    expect(written.flat()).toEqual([
      { workspaceId: 'w1', hour: 10, module: 'deriver', model: 'openai/m', calls: 3, failedCalls: 1, inputTokens: 15, outputTokens: 3 },
      { workspaceId: 'w1', hour: 11, module: 'embedding', model: 'openai/e', calls: 1, failedCalls: 0, inputTokens: 7, outputTokens: 0 },
    ]);
    // nothing pending: nothing written
    await recorder.flush();
    expect(written.flat()).toHaveLength(2);
  });
});
