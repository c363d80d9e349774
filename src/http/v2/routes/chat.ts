import { answerChat } from '../../shared/chat-stream.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { bool, model, nullable, optional, required, str } from '../../shared/validate.js';

const DialecticOptions = model(
  {
    query: required(str({ minLength: 1, maxLength: 10_000 })),
    session_id: optional(nullable(str())),
    target: optional(nullable(str())),
    stream: optional(bool(), () => false),
  },
  { title: 'DialecticOptions' },
);

/** Peer chat of the v2 interface: the v3 chat at its default level. */
export function mountChatRoutes(route: RouteDefiner, deps: HttpDeps): void {
  route({
    method: 'POST',
    url: '/v2/workspaces/:workspace_id/peers/:peer_id/chat',
    scope: { kind: 'peer' },
    summary: 'Ask about a peer: an answer from its memory (streamed as text/event-stream with stream: true)',
    tags: ['peers'],
    body: { schema: DialecticOptions, required: true },
    async handler({ params, body, signal }) {
      return answerChat(
        deps.ctx,
        params.workspace_id,
        {
          observerId: params.peer_id,
          targetId: body.target ?? undefined,
          query: body.query,
          sessionId: body.session_id ?? undefined,
          level: 'low',
          stream: body.stream,
        },
        signal,
      );
    },
  });
}
