import type { JsonObject, NewJob, Store } from '../storage/store.js';
import type { DomainContext } from './context.js';
import { DELIVER_WEBHOOK, newJob, PURGE_SESSION, WEBHOOK_EVENTS_PER_JOB, type DeliverWebhookPayload, type WebhookDelivery, type WebhookEvent } from './job-kinds.js';
import { isoSeconds } from './iso-seconds.js';

/*
 * Background work a change can cause. Each is written as a job row in the same transaction as
 * the change, so a committed change always has its job and a rolled-back one never does.
 */

const purgeQueueKey = (workspaceId: string) => `purge:${workspaceId}`;

/** Queues the removal of a session just marked inactive (contract §7.3: purged asynchronously). */
export async function schedulePurgeSession(ctx: DomainContext, workspaceId: string, sessionId: string, now: Date): Promise<void> {
  const { store } = ctx;
  await store.jobs.enqueue(
    [newJob({ id: ctx.newId(), kind: PURGE_SESSION, workspaceId, queueKey: purgeQueueKey(workspaceId), payload: { sessionId }, maxAttempts: ctx.limits.jobMaxAttempts })],
    now,
  );
}

/** Rows one transaction of a session purge deletes (about 30 ms of SQLite's time for messages). */
const PURGE_BATCH_ROWS = 500;

/**
 * Purges a deleted session: its messages and conclusions in batches, each a short transaction
 * with the event loop free in between (one statement for 100,000 messages would hold the process,
 * and on SQLite the write lock every process waits on, for seconds), then the session row with
 * the rest. What went stays gone if it stops (`signal`); the next try goes on from there.
 * 'absent': the session is gone, or active again.
 */
export async function purgeDeletedSession(store: Store, workspaceId: string, sessionId: string, signal?: AbortSignal): Promise<'purged' | 'absent' | 'stopped'> {
  while ((await store.sessions.purgeInactiveBatch(workspaceId, sessionId, PURGE_BATCH_ROWS)) > 0) {
    if (signal?.aborted) return 'stopped';
    await new Promise((resolve) => setImmediate(resolve));
  }
  return (await store.sessions.purgeInactive(workspaceId, sessionId)) ? 'purged' : 'absent';
}

/** Purges now, batch by batch, every deleted session of the workspace whose purge is still queued. */
export async function purgeQueuedSessions(store: Store, workspaceId: string): Promise<void> {
  for (const job of await store.jobs.openJobs(purgeQueueKey(workspaceId))) {
    if (job.kind === PURGE_SESSION && typeof job.payload.sessionId === 'string') await purgeDeletedSession(store, workspaceId, job.payload.sessionId);
  }
}

/**
 * Queues each event for every webhook endpoint of the workspace, in order; returns how many
 * delivery jobs were queued (webhookEventJobs). A workspace without endpoints costs one indexed lookup.
 */
export async function emitWebhookEvents(
  ctx: DomainContext,
  workspaceId: string,
  events: { type: WebhookEvent['type']; data: JsonObject }[],
  now: Date,
): Promise<number> {
  if (events.length === 0) return 0;
  const jobs = webhookEventJobs(ctx, workspaceId, events, await ctx.store.webhooks.ids(workspaceId), now);
  await ctx.store.jobs.enqueue(jobs, now);
  return jobs.length;
}

/**
 * The deliveries of each event to every endpoint in `endpointIds` (the workspace's,
 * `WebhookStore.ids`), in order: the jobs emitWebhookEvents queues. In order (WEBHOOK_ORDERED), an
 * endpoint's events go in jobs of up to WEBHOOK_EVENTS_PER_JOB, each sending them one request
 * after another: a job row written, claimed and completed costs the database and the worker more
 * than the request it makes (a 100-message write made 100 jobs an endpoint). Side by side, each
 * event is a job of its own, in a queue of its own.
 */
export function webhookEventJobs(
  ctx: DomainContext,
  workspaceId: string,
  events: readonly { type: WebhookEvent['type']; data: JsonObject }[],
  endpointIds: readonly string[],
  now: Date,
): NewJob[] {
  const deliveries: WebhookDelivery[] = events.map(({ type, data }) => ({ eventId: ctx.newId(), event: { type, data, timestamp: isoSeconds(now) } }));
  const inOrder = ctx.limits.webhooksInOrder ?? true;
  const perJob = inOrder ? WEBHOOK_EVENTS_PER_JOB : 1;
  const jobs: NewJob[] = [];
  for (const endpointId of endpointIds) {
    for (let start = 0; start < deliveries.length; start += perJob) {
      const group = deliveries.slice(start, start + perJob);
      const first = group[0].eventId;
      const payload: DeliverWebhookPayload = { endpointId, events: group };
      const queueKey = inOrder ? `webhook:${endpointId}` : `webhook:${endpointId}:${first}`;
      jobs.push(newJob({ id: `${first}:${endpointId}`, kind: DELIVER_WEBHOOK, workspaceId, queueKey, payload, maxAttempts: ctx.limits.jobMaxAttempts }));
    }
  }
  return jobs;
}
