import type { DomainContext } from '../context.js';

/** Kinds of work the queue status reports (contract §7.9); webhook deliveries are not among them. */
export const REPORTED_WORK_KINDS = ['representation', 'summary', 'dream'];

export interface QueueStatus {
  total: number;
  completed: number;
  inProgress: number;
  pending: number;
}

/** Counts of the workspace's queued work, from the job table. */
export async function getQueueStatus(ctx: DomainContext, workspaceId: string): Promise<QueueStatus> {
  const counts = await ctx.store.jobs.counts(workspaceId, REPORTED_WORK_KINDS, ctx.now());
  return { total: counts.total, completed: counts.completed, inProgress: counts.inProgress, pending: counts.pending };
}
