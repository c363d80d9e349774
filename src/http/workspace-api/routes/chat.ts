import type { JsonObject } from '../../../storage/store.js';
import { invalidInput } from '../../../domain/errors.js';
import { refuseScopes } from '../../../domain/scopes/scope-guards.js';
import { resolveScopeRead } from '../../../domain/scopes/scopes.js';
import { checkChatSessions, checkScopeRead } from '../../shared/auth.js';
import { scopeField } from '../../shared/scope-schemas.js';
import { answerChat } from '../../shared/chat-stream.js';
import { sessionAllowlist } from '../../shared/memory-schemas.js';
import { bool, choice, dict, model, nullable, optional, required, str } from '../../shared/validate.js';
import type { WorkspaceApi } from '../define-route.js';

// the fields peer chat and workspace chat share
const chatQuery = required(str({ minLength: 1, maxLength: 10_000 }));
const sessionId = optional(nullable(str()));
const stream = optional(bool(), () => false);
const reasoningLevel = optional(choice(['minimal', 'low', 'medium', 'high', 'max']), () => 'low');
const responseFormat = optional(nullable(dict()));
const filters = optional(nullable(dict()));

/** Workspace chat: not in the v3.0.12 interface; the body newer SDKs send (`honcho.chat()`). */
const WorkspaceChatOptions = model(
  { query: chatQuery, session_id: sessionId, stream, reasoning_level: reasoningLevel, response_format: responseFormat },
  { title: 'WorkspaceChatOptions' },
);

type Level = 'minimal' | 'low' | 'medium' | 'high' | 'max';

/** Peer chat (reasoning.md R5; v2 asks at the default level) and the workspace chat newer SDKs call. */
export function mountChatRoutes({ route, g, deps: { ctx } }: WorkspaceApi): void {
  const DialecticOptions = model(
    {
      query: chatQuery,
      session_id: sessionId,
      target: optional(nullable(str())),
      ...(g.hasChatOptions ? { filters } : {}),
      // shared/reference/scopes.md S6.2
      ...(g.hasChatOptions ? { scope: scopeField } : {}),
      stream,
      ...(g.hasChatOptions ? { reasoning_level: reasoningLevel, response_format: responseFormat } : {}),
    },
    { title: 'DialecticOptions' },
  );

  route({
    method: 'POST',
    url: '/workspaces/:workspace_id/peers/:peer_id/chat',
    scope: { kind: 'peer' },
    summary: 'Ask about a peer: an answer from its memory (streamed as text/event-stream with stream: true)',
    tags: ['peers'],
    body: { schema: DialecticOptions, required: true },
    async handler({ params, body, claims, signal }) {
      let allowlist: string[] | undefined;
      let observerId = params.peer_id;
      let targetId = body.target ?? undefined;
      await refuseScopes(ctx, params.workspace_id, [params.peer_id, body.target], 'chat', 'later');
      const scope = g.hasChatOptions ? (body as { scope?: string | string[] | null }).scope : undefined;
      if (scope !== undefined && scope !== null) {
        if (body.filters !== undefined && body.filters !== null) throw invalidInput('`scope` and `filters` are mutually exclusive');
        if (body.session_id) throw invalidInput('`scope` and `session_id` are mutually exclusive');
        checkScopeRead(claims);
        const read = await resolveScopeRead(ctx, params.workspace_id, scope);
        // one scope: its own memory of the target (the path peer by default); a list: the path
        // peer's memory confined to the scopes' sessions
        if (read.kind === 'single') [observerId, targetId] = [read.observerId, targetId ?? params.peer_id];
        else allowlist = read.sessionIds;
      } else if (g.hasChatOptions) {
        allowlist = sessionAllowlist(body.filters as JsonObject | null | undefined, body.session_id ?? undefined);
        // contract §2.5: a peer key must be an active member of the session and of every allowed one
        const named = [...(body.session_id ? [body.session_id] : []), ...(allowlist ?? [])];
        await checkChatSessions(claims, params.workspace_id, named, (w, s, p) => ctx.store.sessions.isActiveMember(w, s, p));
      }
      return answerChat(
        ctx,
        params.workspace_id,
        {
          observerId,
          askingPeerId: params.peer_id,
          targetId,
          query: body.query,
          sessionId: body.session_id ?? undefined,
          level: (body.reasoning_level ?? 'low') as Level,
          responseFormat: (body.response_format ?? undefined) as JsonObject | undefined,
          allowlist,
          stream: body.stream,
        },
        signal,
      );
    },
  });

  route({
    generations: ['v3'],
    method: 'POST',
    url: '/workspaces/:workspace_id/chat',
    scope: { kind: 'workspace' },
    summary: 'Ask about the whole workspace: an answer from its messages (newer SDKs call it)',
    tags: ['workspaces'],
    body: { schema: WorkspaceChatOptions, required: true },
    async handler({ params, body, signal }) {
      return answerChat(
        ctx,
        params.workspace_id,
        {
          query: body.query,
          sessionId: body.session_id ?? undefined,
          level: body.reasoning_level as Level,
          responseFormat: (body.response_format ?? undefined) as JsonObject | undefined,
          stream: body.stream,
        },
        signal,
      );
    },
  });
}
