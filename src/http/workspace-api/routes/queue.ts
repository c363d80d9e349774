import { getQueueStatus, type QueueStatusCounts } from '../../../domain/queue/queue-status.js';
import { optional, str } from '../../shared/validate.js';
import type { WorkspaceApi } from '../define-route.js';

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
      const counts = (c: QueueStatusCounts) => ({
        total_work_units: c.total,
        completed_work_units: c.completed,
        in_progress_work_units: c.inProgress,
        pending_work_units: c.pending,
      });
      // keyed by public session ids (the reference keys them by its private row ids); null when filtered by session or empty
      const sessions = status.sessions === undefined || status.sessions.size === 0 ? null : Object.fromEntries([...status.sessions].map(([id, c]) => [id, { session_id: id, ...counts(c) }]));
      return { status: 200, body: { ...counts(status), sessions } };
    },
  });
}
