import { FINISHED_WORK_COUNTED_MS } from '../domain/queue/queue-status.js';
import { MODEL_USAGE_KEPT_HOURS } from '../domain/model-usage.js';
import type { Store } from '../storage/store.js';

/** Old rows one statement of the cleanup deletes. */
export const CLEANUP_BATCH = 2000;

export interface KeepTimes {
  /** How long a finished job is kept (default a day). */
  keepFinishedMs?: number;
  /** How long a dead-lettered job is kept, with its last error (default 30 days). */
  keepDeadMs?: number;
}

/**
 * Removes the jobs past their keeping time, the finished work's counters of hours past the day
 * queue status counts and the model usage of hours past the 30 days kept, in batches with the
 * event loop free in between (a day's backlog after a pause could be millions of rows), until
 * `stopped()` says to stop. The worker runs it once a minute beside its claims.
 */
export async function removeOldWork(store: Store, now: Date, keep: KeepTimes, stopped: () => boolean): Promise<void> {
  const doneBefore = new Date(now.getTime() - (keep.keepFinishedMs ?? 86_400_000));
  const deadBefore = new Date(now.getTime() - (keep.keepDeadMs ?? 30 * 86_400_000));
  // the finished work's counters of the hours queue status no longer reads
  const countedSince = new Date(now.getTime() - FINISHED_WORK_COUNTED_MS);
  // batch after batch while they come back full
  const inBatches = async (remove: () => Promise<number>) => {
    while (!stopped() && (await remove()) === CLEANUP_BATCH) await new Promise((resolve) => setImmediate(resolve));
  };
  await inBatches(() => store.jobs.purgeFinished(doneBefore, deadBefore, CLEANUP_BATCH));
  await inBatches(() => store.jobs.purgeCounters(countedSince, CLEANUP_BATCH));
  await inBatches(() => store.reasoning.purgeCounters(countedSince, CLEANUP_BATCH));
  // the model usage of the hours past those kept
  const usageSince = new Date(now.getTime() - MODEL_USAGE_KEPT_HOURS * 3_600_000);
  await inBatches(() => store.workspaces.purgeModelUsage(usageSince, CLEANUP_BATCH));
}
