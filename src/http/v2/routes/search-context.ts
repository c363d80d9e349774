import { getSessionContext, getSessionSummaries } from '../../../domain/messages/context.js';
import { searchMessages, type SearchScope } from '../../../domain/messages/search.js';
import { invalidInput } from '../../../domain/errors.js';
import { presentMessage, presentSummary, presentV2Representation } from '../../shared/present.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { bool, float, int, optional, str } from '../../shared/validate.js';
import { MessageSearchOptions } from '../schemas.js';

const WORKSPACE = '/v2/workspaces/:workspace_id';
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
        const found = await searchMessages(ctx, search.pick(params), { ...body, generation: 'v2' });
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
      last_message: optional(str()),
      summary: optional(bool(), () => true),
      peer_target: optional(str()),
      peer_perspective: optional(str()),
      limit_to_session: optional(bool(), () => false),
      search_top_k: optional(int({ ge: 1, le: 100 })),
      search_max_distance: optional(float({ ge: 0, le: 1 })),
      include_most_derived: optional(bool(), () => false),
      max_observations: optional(int({ ge: 1, le: 100 })),
    },
    async handler({ params, query }) {
      if (query.peer_perspective !== undefined && query.peer_target === undefined) {
        throw invalidInput('peer_target must be provided if peer_perspective is provided');
      }
      const context = await getSessionContext(ctx, params.workspace_id, params.session_id, {
        tokens: query.tokens,
        includeSummary: query.summary,
        peerTarget: query.peer_target,
        peerPerspective: query.peer_perspective,
        limitToSession: query.limit_to_session,
        searchQuery: query.last_message,
        searchTopK: query.search_top_k,
        maxConclusions: query.max_observations,
      });
      return {
        status: 200,
        body: {
          id: params.session_id,
          messages: context.messages.map(presentMessage),
          summary: presentSummary(context.summary),
          // v2's SessionContext carries a `Representation` object here, not markdown (v2 OpenAPI)
          peer_representation: context.peerConclusions === null ? null : presentV2Representation(context.peerConclusions),
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
