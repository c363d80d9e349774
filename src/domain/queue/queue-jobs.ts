import type { JobListing, JobListStatus, Page } from '../../storage/store.js';
import { inTransaction, type DomainContext } from '../context.js';
import { notFound } from '../errors.js';
import { REPRESENT } from '../job-kinds.js';

/*
 * A workspace's background work job by job: what waits, what runs, what failed and will be tried
 * again, and what was dead-lettered after its last attempt, each with its error; and the retry of
 * dead work. The queue status (queue-status.ts) counts the same work; this lists it.
 */

export const JOB_LIST_STATUSES: readonly JobListStatus[] = ['pending', 'running', 'failed', 'dead'];

/** What a job is about, from its payload: the fields its kinds name them by, when they are text. */
export interface JobSubject {
  sessionId: string | null;
  observerId: string | null;
  observedId: string | null;
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

export function jobSubject(job: JobListing): JobSubject {
  const p = job.payload;
  return {
    sessionId: text(p.sessionId),
    observerId: text(p.observerId) ?? text(p.observer),
    observedId: text(p.observedId) ?? text(p.observed),
  };
}

/** One page (1-based) of the workspace's jobs in `status`, newest first. */
export function listWorkspaceJobs(ctx: DomainContext, workspaceId: string, status: JobListStatus, page: number, size: number): Promise<Page<JobListing>> {
  return ctx.store.jobs.listOfWorkspace(workspaceId, status, (page - 1) * size, size);
}

/**
 * Queues the workspace's dead job again with a fresh set of attempts; 404 when it has no such dead
 * job. A representation unit's job, on its last attempt, closed the message it failed on with the
 * error and went on with the rest (deriver.ts): that message's items are opened again with it, so
 * the retry derives what was given up on.
 */
export async function retryDeadJob(ctx: DomainContext, workspaceId: string, jobId: string): Promise<JobListing> {
  return inTransaction(ctx, async (ctx) => {
    const reopened = await ctx.store.jobs.reopenDead(workspaceId, jobId, ctx.now());
    if (reopened === undefined) throw notFound(`Dead job ${jobId} not found in workspace ${workspaceId}`);
    const { sessionId, observedId } = jobSubject(reopened);
    if (reopened.kind === REPRESENT && sessionId !== null && observedId !== null) await ctx.store.reasoning.reopenFailedItems(workspaceId, sessionId, observedId);
    return reopened;
  });
}
