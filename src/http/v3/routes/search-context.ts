import { getSessionContext, getSessionSummaries } from '../../../domain/messages/context.js';
import { searchMessages, type SearchScope } from '../../../domain/messages/search.js';
import { invalidInput } from '../../../domain/errors.js';
import { presentMessage, presentSummary } from '../../shared/present.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { bool, float, int, optional, repeatedQuery, str } from '../../shared/validate.js';
import { MessageSearchOptions } from '../schemas.js';

const WORKSPACE = '/v3/workspaces/:workspace_id';
const SESSION = `${WORKSPACE}/sessions/:session_id`;

export function mountSearchContextRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const searches: { url: string; scope: Parameters<RouteDefiner>[0]['scope']; summary: string; pick: (p: Record<string, string>) => SearchScope }[] = [
    { url: `${WORKSPACE}/search`, scope: { kind: 'workspace' }, summary: 'Search the messages of a workspace', pick: (p) => ({ workspaceId: p.workspace_id }) },
    {
      url: `${SESSION}/search`,
      scope: { kind: 'session', memberRead: true },
      summary: 'Search the messages of a session',
      pick: (p) => ({ workspaceId: p.workspace_id, sessionId: p.session_id }),
    },
    {
      url: `${WORKSPACE}/peers/:peer_id/search`,
      scope: { kind: 'peer' },
      summary: 'Search the messages a peer sent',
      pick: (p) => ({ workspaceId: p.workspace_id, peerId: p.peer_id }),
    },
  ];
  for (const search of searches) {
    route({
      method: 'POST',
      url: search.url,
      scope: search.scope,
      summary: search.summary,
      tags: ['search'],
      body: { schema: MessageSearchOptions, required: true },
      async handler({ params, body }) {
        const found = await searchMessages(ctx, search.pick(params), { ...body, generation: 'v3' });
        return { status: 200, body: found.map(presentMessage) };
      },
    });
  }

  route({
    method: 'GET',
    url: `${SESSION}/context`,
    scope: { kind: 'session', memberRead: true },
    summary: 'The most recent messages of a session that fit a token budget',
    tags: ['sessions'],
    query: {
      tokens: optional(int({ le: 100_000 }), () => 100_000),
      search_query: optional(str()),
      summary: optional(bool(), () => true),
      peer_target: optional(str()),
      peer_perspective: optional(str()),
      limit_to_session: optional(bool(), () => false),
      search_top_k: optional(int({ ge: 1, le: 100 })),
      search_max_distance: optional(float({ ge: 0, le: 1 })),
      include_most_frequent: optional(bool(), () => false),
      max_conclusions: optional(int({ ge: 1, le: 100 })),
      // not in the v3.0.12 interface: the session allowlist newer SDKs send (docs/compatibility.md)
      sessions: repeatedQuery(str(), { maxLength: 1000 }),
    },
    async handler({ params, query }) {
      if (query.peer_perspective !== undefined && query.peer_target === undefined) {
        throw invalidInput('peer_target must be provided if peer_perspective is provided');
      }
      if (query.sessions !== undefined) {
        if (query.peer_target === undefined) throw invalidInput('peer_target must be provided if sessions is provided');
        if (query.limit_to_session) throw invalidInput('sessions and limit_to_session cannot be used together');
        if (!query.sessions.includes(params.session_id)) throw invalidInput('sessions must include the session whose context is asked for');
      }
      const context = await getSessionContext(ctx, params.workspace_id, params.session_id, {
        tokens: query.tokens,
        includeSummary: query.summary,
        peerTarget: query.peer_target,
        peerPerspective: query.peer_perspective,
        limitToSession: query.limit_to_session,
        sessionAllowlist: query.sessions,
        searchQuery: query.search_query,
        searchTopK: query.search_top_k,
        maxConclusions: query.max_conclusions,
      });
      return {
        status: 200,
        body: {
          id: params.session_id,
          messages: context.messages.map(presentMessage),
          summary: presentSummary(context.summary),
          peer_representation: context.peerRepresentation,
          peer_card: context.peerCard,
        },
      };
    },
  });

  route({
    method: 'GET',
    url: `${SESSION}/summaries`,
    scope: { kind: 'session', memberRead: true },
    summary: 'The short and long summaries of a session (null until one is written)',
    tags: ['sessions'],
    async handler({ params }) {
      const summaries = await getSessionSummaries(ctx, params.workspace_id, params.session_id);
      return { status: 200, body: { id: params.session_id, short_summary: presentSummary(summaries.short), long_summary: presentSummary(summaries.long) } };
    },
  });
}
