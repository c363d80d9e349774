import { getWorkspaceStatistics, USAGE_HOURS } from '../../../domain/workspaces/workspace-statistics.js';
import { isoTime } from '../../shared/present.js';
import { int, optional } from '../../shared/validate.js';
import type { WorkspaceApi } from '../define-route.js';

/** A workspace's statistics (an addition of this server: docs/compatibility.md, docs/inspector.md). */
export function mountStatisticsRoutes({ route, deps: { ctx } }: WorkspaceApi): void {
  route({
    method: 'GET',
    url: '/workspaces/:workspace_id/statistics',
    generations: ['v3'],
    scope: { kind: 'workspace' },
    summary:
      'Counts of the workspace (peers, active sessions, messages, current conclusions, queued reasoning work), each read from counts kept as it is written, and its model calls and tokens of the last `hours` hours by module and model',
    tags: ['workspaces'],
    query: {
      hours: optional(int({ ge: USAGE_HOURS.min, le: USAGE_HOURS.max, description: 'Hours of model usage counted, the current one included' }), () => USAGE_HOURS.default),
    },
    async handler({ params, query }) {
      const s = await getWorkspaceStatistics(ctx, params.workspace_id, query.hours);
      return {
        status: 200,
        body: {
          workspace_id: params.workspace_id,
          peers: s.counts.peers,
          sessions: s.counts.sessions,
          messages: s.counts.messages,
          conclusions: s.counts.conclusions,
          pending_work_units: s.pendingWorkUnits,
          in_progress_work_units: s.inProgressWorkUnits,
          model_usage: {
            since: isoTime(s.usageSince),
            hours: query.hours,
            modules: s.modelUsage.map((u) => ({
              module: u.module,
              model: u.model,
              calls: u.calls,
              failed_calls: u.failedCalls,
              input_tokens: u.inputTokens,
              output_tokens: u.outputTokens,
            })),
          },
        },
      };
    },
  });
}
