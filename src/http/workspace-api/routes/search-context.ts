import { getSessionContext, getSessionSummaries } from '../../../domain/sessions/context.js';
import { searchMessages, type SearchScope } from '../../../domain/messages/search.js';
import { invalidInput } from '../../../domain/errors.js';
import { refuseScopes } from '../../../domain/scopes/scope-guards.js';
import { resolveScopeRead, sessionsOfScope } from '../../../domain/scopes/scopes.js';
import { checkContextPerspective, checkScopeRead, AuthError, AUTH_DETAIL } from '../../shared/auth.js';
import { isPlainObject, model } from '../../shared/validate.js';
import { presentMessage, presentSummary, presentV2Representation } from '../../shared/present.js';
import { messageSearch, messageSearchFields } from '../../shared/resource-schemas.js';
import type { RouteScope } from '../../shared/auth.js';
import { bool, float, int, nullable, optional, repeatedQuery, str, type Field } from '../../shared/validate.js';
import type { WorkspaceApi } from '../define-route.js';

const WORKSPACE = '/workspaces/:workspace_id';
const SESSION_ID = /^[a-zA-Z0-9_-]+$/;
const SESSION = `${WORKSPACE}/sessions/:session_id`;

/** The session context query under both generations' names; each generation sends its own (table: memory). */
type ContextQuery = {
  tokens: Field<number>;
  summary: Field<boolean>;
  peer_target: Field<string | undefined>;
  peer_perspective: Field<string | undefined>;
  limit_to_session: Field<boolean>;
  search_top_k: Field<number | undefined>;
  search_max_distance: Field<number | undefined>;
  sessions: Field<string[] | undefined>;
  scope: Field<string | undefined>;
} & Record<'last_message' | 'search_query', Field<string | undefined>> &
  Record<'include_most_derived' | 'include_most_frequent', Field<boolean>> &
  Record<'max_observations' | 'max_conclusions', Field<number | undefined>>;

export function mountSearchContextRoutes({ route, g, deps: { ctx } }: WorkspaceApi): void {
  const searches: { url: string; scope: RouteScope; summary: string; pick: (p: Record<string, string>) => SearchScope }[] = [
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
  // v3's workspace search also takes a scope: its sessions confine the search (scopes.md S6.4)
  const scopedSearch = model({ ...messageSearchFields, scope: optional(nullable(str())) }, { title: 'MessageSearchOptions' });
  for (const search of searches) {
    const hasScope = g.name === 'v3' && search.scope.kind === 'workspace';
    route({
      method: 'POST',
      url: search.url,
      scope: search.scope,
      summary: search.summary,
      tags: ['search'],
      body: { schema: hasScope ? scopedSearch : messageSearch, required: true },
      async handler({ params, body, claims }) {
        let filters = body.filters;
        const scope = hasScope ? (body as { scope?: string | null }).scope : undefined;
        if (typeof scope === 'string') {
          if (isPlainObject(filters) && Object.hasOwn(filters, 'session_id')) throw invalidInput("`scope` and a 'session_id' filter are mutually exclusive");
          checkScopeRead(claims);
          const sessions = await sessionsOfScope(ctx, params.workspace_id, scope);
          if (sessions.length === 0) return { status: 200, body: [] };
          filters = { ...(filters ?? {}), session_id: { in: sessions } };
        }
        const found = await searchMessages(ctx, search.pick(params), { query: body.query, filters, limit: body.limit, rules: g.rules });
        return { status: 200, body: found.map(presentMessage) };
      },
    });
  }

  const names = g.memory;
  const contextQuery = {
    tokens: optional(int({ le: 100_000 }), () => 100_000),
    [names.searchQuery]: optional(str()),
    summary: optional(bool(), () => true),
    peer_target: optional(str()),
    peer_perspective: optional(str()),
    limit_to_session: optional(bool(), () => false),
    search_top_k: optional(int({ ge: 1, le: 100 })),
    search_max_distance: optional(float({ ge: 0, le: 1 })),
    [names.includeMost]: optional(bool(), () => false),
    [names.maxConclusions]: optional(int({ ge: 1, le: 100 })),
    // not in the v3.0.12 interface: the session allowlist and the scope newer SDKs send
    // (shared/reference/scopes.md S6.3, S7.3); the allowlist's limits are the handler's 422s
    ...(names.hasV3Options ? { sessions: repeatedQuery(str()), scope: optional(str()) } : {}),
  } as ContextQuery;

  route({
    method: 'GET',
    url: `${SESSION}/context`,
    scope: { kind: 'session', memberRead: true },
    summary: 'The most recent messages of a session that fit a token budget',
    tags: ['sessions'],
    query: contextQuery,
    async handler({ params, query, claims, log }) {
      const w = params.workspace_id;
      if (query.peer_perspective !== undefined && query.peer_target === undefined) {
        throw invalidInput('peer_target must be provided if peer_perspective is provided');
      }
      await refuseScopes(ctx, w, [query.peer_target], 'contextTarget', 'later');
      await refuseScopes(ctx, w, [query.peer_perspective], 'perspective', 'missing');
      if (query.scope !== undefined) {
        if (query.peer_perspective !== undefined) throw invalidInput('`scope` and `peer_perspective` are mutually exclusive');
        if (query.peer_target === undefined) throw invalidInput('peer_target must be provided if scope is provided');
        checkScopeRead(claims);
      }
      const sessions = query.sessions === undefined ? undefined : [...new Set(query.sessions)];
      if (query.sessions !== undefined) {
        if (query.scope !== undefined) throw invalidInput('`sessions` and `scope` are mutually exclusive');
        if (query.limit_to_session) throw invalidInput('`sessions` and `limit_to_session` are mutually exclusive');
        if (query.peer_target === undefined) throw invalidInput('peer_target must be provided if sessions is provided');
        if (query.sessions.length > 1000) throw invalidInput('sessions supports at most 1000 sessions per request');
        if (query.sessions.some((id) => id === '')) throw invalidInput('sessions entries must be non-empty strings');
        const bad = query.sessions.find((id) => !SESSION_ID.test(id));
        if (bad !== undefined) throw invalidInput(`Invalid session id in sessions: '${bad}'. Session ids match ^[a-zA-Z0-9_-]+$`);
        if (!query.sessions.includes(params.session_id)) throw invalidInput('session_id must be included in sessions');
        // a peer key must be an active member of every session it confines the read to
        if (!claims.isAdmin && claims.sessionId === undefined && claims.peerId !== undefined) {
          for (const id of sessions!) {
            if (!(await ctx.store.sessions.isActiveMember(w, id, claims.peerId))) throw new AuthError(AUTH_DETAIL.notPermissioned);
          }
        }
      }
      checkContextPerspective(claims, query.peer_target, query.peer_perspective);
      const scoped = query.scope === undefined ? undefined : await resolveScopeRead(ctx, w, query.scope);
      const context = await getSessionContext(ctx, w, params.session_id, {
        tokens: query.tokens,
        includeSummary: query.summary,
        peerTarget: query.peer_target,
        peerPerspective: scoped?.kind === 'single' ? scoped.observerId : query.peer_perspective,
        limitToSession: query.limit_to_session,
        sessionAllowlist: sessions,
        searchQuery: query[names.searchQuery],
        searchTopK: query.search_top_k,
        maxConclusions: query[names.maxConclusions],
        // v3: a search query that cannot be embedded leaves the semantic part out (scopes.md S7.6)
        onEmbeddingFailure: names.hasV3Options
          ? (error) => log.warn({ err: error }, 'search_query could not be embedded; peer representation chosen without the semantic part')
          : undefined,
      });
      return {
        status: 200,
        body: {
          id: params.session_id,
          messages: context.messages.map(presentMessage),
          summary: presentSummary(context.summary),
          // v2's SessionContext carries a `Representation` object here, v3's markdown (their OpenAPI)
          peer_representation: names.isRepresentationObject
            ? context.peerConclusions === null ? null : presentV2Representation(context.peerConclusions)
            : context.peerRepresentation,
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
