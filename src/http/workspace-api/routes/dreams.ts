import { refuseScopes } from '../../../domain/scopes/scope-guards.js';
import { scheduleDream } from '../../../domain/scheduling/dream-schedule.js';
import { bool, choice, model, nullable, optional, required, str } from '../../shared/validate.js';
import type { WorkspaceApi } from '../define-route.js';

/** Dreams (chat is in chat.ts): 204, or 400 when dreams are off (contract §7.1). */
export function mountDreamRoutes({ route, g, deps: { ctx } }: WorkspaceApi): void {
  const { dreams } = g;
  const DreamRequest = model(
    {
      observer: required(str()),
      observed: optional(nullable(str())),
      dream_type: required(choice(Object.keys(dreams.types), 'enum')),
      ...(dreams.hasScheduleOptions ? { session_id: optional(nullable(str())), rebuild: optional(bool(), () => false) } : {}),
    },
    { title: dreams.title },
  );

  route({
    method: 'POST',
    url: `/workspaces/:workspace_id/${dreams.path}`,
    scope: { kind: 'workspace' },
    summary: dreams.summary,
    tags: ['workspaces'],
    body: { schema: DreamRequest, required: true },
    async handler({ params, body }) {
      await refuseScopes(ctx, params.workspace_id, [body.observed ?? body.observer], 'dream', 'later');
      await scheduleDream(ctx, {
        workspaceId: params.workspace_id,
        observerId: body.observer,
        observedId: body.observed ?? body.observer,
        dreamType: dreams.types[body.dream_type],
        sessionId: body.session_id ?? null,
        rebuild: body.rebuild ?? false,
      });
      return { status: 204 };
    },
  });
}
