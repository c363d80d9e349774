import type { WorkCounts } from '../../storage/store.js';
import type { DomainContext } from '../context.js';
import { DREAM_KINDS, SCOPE_BACKFILL, SCOPE_REMOVAL, SUMMARIZE } from '../job-kinds.js';
import { summaryQueueKey } from '../scheduling/queue-reasoning.js';
import { collectionOfDreamKey } from '../scheduling/dream-schedule.js';
import { scopeWorkOfKey } from '../scopes/scope-work.js';

/*
 * Queue status (contract §7.9, reasoning.md R8), counting the work itself rather than queue rows:
 * a representation work unit is one item (a message to reason about for its observers), a summary
 * work unit is one summary job, a dream work unit one dream job (an automatic dream waiting for its
 * collection to be idle is counted from its due time, so a client waiting for an empty queue is not
 * held up for the idle wait). Failed work (an item closed with an error,
 * a dead-lettered job) is in the total but never in `completed`. Finished work (completed or
 * failed) is counted for a day: what finished in the current hour or the 24 before it, so the
 * answer follows the workspace's recent work, not its history (the reference counts completed
 * work since its periodic cleanup).
 */

/** How long finished work stays counted; the worker purges the counters of older hours. */
export const FINISHED_WORK_COUNTED_MS = 86_400_000;

export interface QueueStatusCounts {
  total: number;
  completed: number;
  inProgress: number;
  pending: number;
  /** Part of `total`: work that ended in an error. */
  failed: number;
}

export interface QueueStatus extends QueueStatusCounts {
  /** Per session, by public session id; undefined when filtered by session. */
  sessions: Map<string, QueueStatusCounts> | undefined;
}

export interface QueueStatusFilter {
  /** Work some of whose observers is this peer ... */
  observerId?: string;
  /** ... or (contract §7.9: the two combine with OR) work about messages this peer sent. */
  senderId?: string;
  sessionId?: string;
}

const empty = (): QueueStatusCounts => ({ total: 0, completed: 0, inProgress: 0, pending: 0, failed: 0 });

function add(into: QueueStatusCounts, counts: WorkCounts): void {
  into.completed += counts.completed;
  into.failed += counts.failed;
  into.inProgress += counts.inProgress;
  into.pending += counts.pending;
  into.total += counts.completed + counts.failed + counts.inProgress + counts.pending;
}

/** The workspace's reasoning work, filtered and broken down by session. */
export async function getQueueStatus(ctx: DomainContext, workspaceId: string, filter: QueueStatusFilter = {}): Promise<QueueStatus> {
  const now = ctx.now();
  const finishedSince = new Date(now.getTime() - FINISHED_WORK_COUNTED_MS);
  const byPeer = filter.observerId !== undefined || filter.senderId !== undefined;
  const status: QueueStatus = { ...empty(), sessions: filter.sessionId === undefined ? new Map() : undefined };
  const count = (sessionId: string, counts: WorkCounts) => {
    add(status, counts);
    if (status.sessions === undefined) return;
    const session = status.sessions.get(sessionId) ?? empty();
    add(session, counts);
    status.sessions.set(sessionId, session);
  };

  // the store reads the units of the session and of the peer (as observer or as sender) alone
  const units = { sessionId: filter.sessionId, observerId: filter.observerId, senderId: filter.senderId };
  for (const row of await ctx.store.reasoning.representationCounts(workspaceId, units, now, finishedSince)) count(row.sessionId, row);
  // The job-kept work, read in one statement for every kind that applies (the session's own
  // summary queue in a second when filtered by session): a summary is about a session, not
  // about a peer, so a peer filter leaves summaries out; a dream is about a collection, not a
  // session, counted in the totals and left out when filtering by session (an automatic dream
  // still waiting for its collection to be idle is not counted until it is due); a scope's
  // backfill or removal is work of the scope (its observer) in one session.
  const summaries = !byPeer;
  const dreams = filter.sessionId === undefined;
  const scopeWork = filter.senderId === undefined || filter.observerId !== undefined;
  const prefix = `summary:${workspaceId}:`;
  const kinds = [...(summaries && filter.sessionId === undefined ? [SUMMARIZE] : []), ...(dreams ? DREAM_KINDS : []), ...(scopeWork ? [SCOPE_BACKFILL, SCOPE_REMOVAL] : [])];
  const rows = await ctx.store.jobs.countsByQueue(workspaceId, kinds, now, { finishedSince, dueOnly: DREAM_KINDS });
  if (summaries && filter.sessionId !== undefined) {
    // filtered by session, that session's queue alone is read
    const session = { id: filter.sessionId, queueKey: summaryQueueKey({ workspaceId, sessionId: filter.sessionId }) };
    rows.push(...(await ctx.store.jobs.countsByQueue(workspaceId, [SUMMARIZE], now, { finishedSince, session })));
  }
  for (const row of rows) {
    if (row.kind === SUMMARIZE) {
      if (row.queueKey.startsWith(prefix)) count(row.queueKey.slice(prefix.length), row);
    } else if ((DREAM_KINDS as readonly string[]).includes(row.kind)) {
      const collection = collectionOfDreamKey(row.queueKey);
      if (collection === undefined) continue;
      if (byPeer && collection.observerId !== filter.observerId && collection.observedId !== filter.senderId) continue;
      add(status, row);
    } else {
      const work = scopeWorkOfKey(row.queueKey);
      if (work === undefined || (filter.sessionId !== undefined && work.sessionId !== filter.sessionId)) continue;
      if (byPeer && work.scopePeerId !== filter.observerId) continue;
      count(work.sessionId, row);
    }
  }
  if (status.sessions !== undefined) for (const [id, counts] of status.sessions) if (counts.total === 0) status.sessions.delete(id);
  return status;
}
