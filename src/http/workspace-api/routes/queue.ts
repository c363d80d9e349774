import { getQueueStatus, type QueueStatus, type QueueStatusCounts } from '../../../domain/queue/queue-status.js';
import { JOB_LIST_STATUSES, jobSubject, listWorkspaceJobs, retryDeadJob } from '../../../domain/queue/queue-jobs.js';
import type { JobListing } from '../../../storage/store.js';
import { paged } from '../../shared/fields.js';
import { isoTime, presentPage } from '../../shared/present.js';
import { choice, model, optional, required, str } from '../../shared/validate.js';
import type { WorkspaceApi } from '../define-route.js';

/** A job of the workspace's list (an addition of this server: docs/compatibility.md). */
function presentJob(job: JobListing) {
  const subject = jobSubject(job);
  return {
    id: job.id,
    kind: job.kind,
    // a pending job whose last attempt failed is listed as failing
    status: job.status === 'pending' && job.lastError !== null ? 'failed' : job.status,
    attempts: job.attempts,
    max_attempts: job.maxAttempts,
    last_error: job.lastError,
    session_id: subject.sessionId,
    observer: subject.observerId,
    observed: subject.observedId,
    created_at: isoTime(job.createdAt),
    run_after: isoTime(job.runAfter),
    finished_at: job.finishedAt === null ? null : isoTime(job.finishedAt),
  };
}

const countsJson = (c: QueueStatusCounts) =>
  `"total_work_units":${c.total},"completed_work_units":${c.completed},"in_progress_work_units":${c.inProgress},"pending_work_units":${c.pending}`;

/**
 * The queue status as the contract's JSON (§7.9): the counts, and `sessions` keyed by public
 * session id (the reference keys them by its private row ids), null when filtered by session or
 * empty. Written out as text: a workspace's answer lists every session with work in the last day,
 * and for 4,000 of them objects built and then stringified took 4.3 ms of the event loop a call
 * against 0.49 (bench/README.md, "Queue status with a long history").
 */
export function queueStatusJson(status: QueueStatus): string {
  let sessions = '';
  for (const [id, counts] of status.sessions ?? []) {
    const key = JSON.stringify(id);
    sessions += `${sessions === '' ? '' : ','}${key}:{"session_id":${key},${countsJson(counts)}}`;
  }
  return `{${countsJson(status)},"sessions":${sessions === '' ? 'null' : `{${sessions}}`}}`;
}

const JobListRequest = model({ status: required(choice(JOB_LIST_STATUSES, 'enum')) }, { title: 'JobList' });

export function mountQueueRoutes({ route, g, deps: { ctx } }: WorkspaceApi): void {
  route({
    method: 'GET',
    url: `/workspaces/:workspace_id/${g.queueStatusPath}`,
    scope: { kind: 'workspace' },
    summary: 'Counts of queued background work in the workspace',
    tags: ['queue'],
    query: { observer_id: optional(str()), sender_id: optional(str()), session_id: optional(str()) },
    async handler({ params, query }) {
      const status = await getQueueStatus(ctx, params.workspace_id, { observerId: query.observer_id, senderId: query.sender_id, sessionId: query.session_id });
      return { status: 200, json: queueStatusJson(status) };
    },
  });

  route({
    method: 'POST',
    url: '/workspaces/:workspace_id/queue/jobs/list',
    generations: ['v3'],
    scope: { kind: 'workspace' },
    summary:
      'List the background jobs of the workspace in one state, newest first: `pending`, `running`, `failed` (pending again after a failed attempt) or `dead` (dead-lettered after its last attempt), each with its last error',
    tags: ['queue'],
    query: paged,
    body: { schema: JobListRequest, required: true },
    async handler({ params, query, body }) {
      const page = await listWorkspaceJobs(ctx, params.workspace_id, body.status, query.page, query.size);
      return { status: 200, body: presentPage(page, query.page, query.size, presentJob) };
    },
  });

  route({
    method: 'POST',
    url: '/workspaces/:workspace_id/queue/jobs/:job_id/retry',
    generations: ['v3'],
    scope: { kind: 'workspace' },
    summary: 'Queue a dead-lettered job of the workspace again, with a fresh set of attempts',
    tags: ['queue'],
    async handler({ params }) {
      return { status: 200, body: presentJob(await retryDeadJob(ctx, params.workspace_id, params.job_id)) };
    },
  });
}
