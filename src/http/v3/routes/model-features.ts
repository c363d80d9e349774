import { refuseChat } from '../../../domain/model-features.js';
import { scheduleDream, type DreamType } from '../../../domain/reasoning/dream-schedule.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { bool, choice, dict, model, nullable, optional, required, str } from '../../shared/validate.js';

// the fields peer chat and workspace chat share
const chatQuery = required(str({ minLength: 1, maxLength: 10_000 }));
const sessionId = optional(nullable(str()));
const stream = optional(bool(), () => false);
const reasoningLevel = optional(choice(['minimal', 'low', 'medium', 'high', 'max']), () => 'low');
const responseFormat = optional(nullable(dict()));

const DialecticOptions = model(
  {
    query: chatQuery,
    session_id: sessionId,
    target: optional(nullable(str())),
    filters: optional(nullable(dict())),
    stream,
    reasoning_level: reasoningLevel,
    response_format: responseFormat,
  },
  { title: 'DialecticOptions' },
);

/** Workspace chat: not in the v3.0.12 interface; the body newer SDKs send (`honcho.chat()`). */
const WorkspaceChatOptions = model(
  { query: chatQuery, session_id: sessionId, stream, reasoning_level: reasoningLevel, response_format: responseFormat },
  { title: 'WorkspaceChatOptions' },
);

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

/** Chat and dreams: validated as the reference does, then refused until a model provider exists. */
export function mountModelFeatureRoutes(route: RouteDefiner, deps: HttpDeps): void {
  route({
    method: 'POST',
    url: '/v3/workspaces/:workspace_id/peers/:peer_id/chat',
    scope: { kind: 'peer' },
    summary: 'Ask about a peer (needs a language model provider)',
    tags: ['peers'],
    body: { schema: DialecticOptions, required: true },
    handler: async () => refuseChat(),
  });
  route({
    method: 'POST',
    url: '/v3/workspaces/:workspace_id/chat',
    scope: { kind: 'workspace' },
    summary: 'Ask about the whole workspace (needs a language model provider; newer SDKs call it)',
    tags: ['workspaces'],
    body: { schema: WorkspaceChatOptions, required: true },
    handler: async () => refuseChat(),
  });
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
