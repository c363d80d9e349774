import { refuseChat } from '../../../domain/model-features.js';
import { scheduleDream } from '../../../domain/reasoning/dream-schedule.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { bool, choice, model, nullable, optional, required, str } from '../../shared/validate.js';

const DialecticOptions = model(
  {
    query: required(str({ minLength: 1, maxLength: 10_000 })),
    session_id: optional(nullable(str())),
    target: optional(nullable(str())),
    stream: optional(bool(), () => false),
  },
  { title: 'DialecticOptions' },
);

const TriggerDreamRequest = model(
  {
    observer: required(str()),
    observed: optional(nullable(str())),
    dream_type: required(choice(['consolidate', 'agent'], 'enum')),
  },
  { title: 'TriggerDreamRequest' },
);

/** Chat and dreams: validated as the reference does, then refused until a model provider exists. */
export function mountModelFeatureRoutes(route: RouteDefiner, deps: HttpDeps): void {
  route({
    method: 'POST',
    url: '/v2/workspaces/:workspace_id/peers/:peer_id/chat',
    scope: { kind: 'peer' },
    summary: 'Ask about a peer (needs a language model provider)',
    tags: ['peers'],
    body: { schema: DialecticOptions, required: true },
    handler: async () => refuseChat(),
  });
  route({
    method: 'POST',
    url: '/v2/workspaces/:workspace_id/trigger_dream',
    scope: { kind: 'workspace' },
    summary: 'Trigger a dream (skipped when one is already pending or running for the collection)',
    tags: ['workspaces'],
    body: { schema: TriggerDreamRequest, required: true },
    // v2's dream types (consolidate, agent) are both the omni dream
    async handler({ params, body }) {
      await scheduleDream(deps.ctx, {
        workspaceId: params.workspace_id,
        observerId: body.observer,
        observedId: body.observed ?? body.observer,
        dreamType: 'omni',
        sessionId: null,
        rebuild: false,
      });
      return { status: 204 };
    },
  });
}
