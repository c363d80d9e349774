import { getWorkspaceStatistics } from '../../../domain/workspaces/workspace-statistics.js';
import { presentStatistics } from '../../shared/present.js';
import { statisticsQuery } from '../../shared/resource-schemas.js';
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
    query: statisticsQuery,
    async handler({ params, query }) {
      const s = await getWorkspaceStatistics(ctx, params.workspace_id, query.hours);
      return { status: 200, body: presentStatistics(params.workspace_id, s, query.hours) };
    },
  });
}
