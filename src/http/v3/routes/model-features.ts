import { scheduleDream, type DreamType } from '../../../domain/reasoning/dream-schedule.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { bool, choice, model, nullable, optional, required, str } from '../../shared/validate.js';

const ScheduleDreamRequest = model(
  {
    observer: required(str()),
    observed: optional(nullable(str())),
    dream_type: required(choice(['omni', 'card_refresh'], 'enum')),
    session_id: optional(nullable(str())),
    rebuild: optional(bool(), () => false),
  },
  { title: 'ScheduleDreamRequest' },
);

/** Dreams (chat is in chat.ts). */
export function mountModelFeatureRoutes(route: RouteDefiner, deps: HttpDeps): void {
  route({
    method: 'POST',
    url: '/v3/workspaces/:workspace_id/schedule_dream',
    scope: { kind: 'workspace' },
    summary: 'Schedule a dream (skipped when one of that type is already pending or running for the collection)',
    tags: ['workspaces'],
    body: { schema: ScheduleDreamRequest, required: true },
    async handler({ params, body }) {
      await scheduleDream(deps.ctx, {
        workspaceId: params.workspace_id,
        observerId: body.observer,
        observedId: body.observed ?? body.observer,
        dreamType: body.dream_type as DreamType,
        sessionId: body.session_id ?? null,
        rebuild: body.rebuild,
      });
      return { status: 204 };
    },
  });
}
