import type { ModelUsageTotal, WorkspaceCounts } from '../../storage/store.js';
import type { DomainContext } from '../context.js';
import { notFound } from '../errors.js';
import { getQueueStatus } from '../queue/queue-status.js';
import { MODEL_USAGE_KEPT_HOURS } from '../model-usage.js';

/*
 * What a workspace holds and what its work used, in one read (GET /v3/workspaces/{w}/statistics):
 * the counts kept as it is written (never a count of its rows), its queued reasoning work as
 * queue status counts it, and its model calls and tokens of the last hours per module and model.
 */

export interface WorkspaceStatistics {
  counts: WorkspaceCounts;
  pendingWorkUnits: number;
  inProgressWorkUnits: number;
  /** The first hour counted (the current one and the `hours - 1` before it). */
  usageSince: Date;
  modelUsage: ModelUsageTotal[];
}

/** The hours of model usage a request may ask for: from the current hour back to the oldest kept. */
export const USAGE_HOURS = { min: 1, max: MODEL_USAGE_KEPT_HOURS, default: 24 } as const;

/** The workspace's statistics, its model usage over the last `hours` hours; 404 when there is no such workspace. */
export async function getWorkspaceStatistics(ctx: DomainContext, workspaceId: string, hours: number = USAGE_HOURS.default): Promise<WorkspaceStatistics> {
  const counts = await ctx.store.workspaces.counts(workspaceId);
  if (counts === undefined) throw notFound(`Workspace ${workspaceId} not found`);
  const sinceHour = Math.floor(ctx.now().getTime() / 3_600_000) - hours + 1;
  const [queue, modelUsage] = await Promise.all([getQueueStatus(ctx, workspaceId), ctx.store.workspaces.modelUsage(workspaceId, sinceHour)]);
  return {
    counts,
    pendingWorkUnits: queue.pending,
    inProgressWorkUnits: queue.inProgress,
    usageSince: new Date(sinceHour * 3_600_000),
    modelUsage,
  };
}
