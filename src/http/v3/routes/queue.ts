import { getQueueStatus } from '../../../domain/queue/queue-status.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { optional, str } from '../../shared/validate.js';

export function mountQueueRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  route({
    method: 'GET',
    url: '/v3/workspaces/:workspace_id/queue/status',
    scope: { kind: 'workspace' },
    summary: 'Counts of queued background work in the workspace',
    tags: ['queue'],
    query: { observer_id: optional(str()), sender_id: optional(str()), session_id: optional(str()) },
    async handler({ params, query }) {
      const status = await getQueueStatus(ctx, params.workspace_id);
      return {
        status: 200,
        body: {
          total_work_units: status.total,
          completed_work_units: status.completed,
          in_progress_work_units: status.inProgress,
          pending_work_units: status.pending,
          // per-session counts: none while no session-level work kinds exist
          sessions: query.session_id === undefined && status.total > 0 ? {} : null,
        },
      };
    },
  });
}
