/*
 * The v3 routes the MCP tools stand on, as calls in this process: each one checks the caller's
 * key with the rule its route declares (the same authorizeV3 and check* functions of
 * http/shared/auth.ts), validates its input with the route's own schema, then calls the domain
 * verb the route calls. A tool is a sequence of these calls, so a key reaches through MCP
 * exactly what it reaches through HTTP, and an input the API refuses is refused with its message.
 */

import type { DomainContext } from '../domain/context.js';
import { getSessionContext, getSessionSummaries } from '../domain/sessions/context.js';
import { createMessages, getMessage, listMessages } from '../domain/messages/messages.js';
import { searchMessages, type SearchScope } from '../domain/messages/search.js';
import { createConclusions, deleteConclusion, listConclusions, queryConclusions } from '../domain/memory/conclusions.js';
import { getPeerCard, setPeerCard } from '../domain/memory/peer-cards.js';
import { DEFAULT_MAX_CONCLUSIONS, getPeerContext, getPeerRepresentation } from '../domain/memory/representation.js';
import { getOrCreatePeer, listPeersOfWorkspace, listSessionsOfPeer, updatePeer } from '../domain/peers/peers.js';
import { getQueueStatus } from '../domain/queue/queue-status.js';
import { forget } from '../domain/memory/forget.js';
import { getWorkspaceStatistics } from '../domain/workspaces/workspace-statistics.js';
import { prepareChat } from '../domain/reasoning/chat.js';
import { scheduleDream } from '../domain/scheduling/dream-schedule.js';
import {
  addPeersToSession,
  cloneSession,
  deleteSession,
  getOrCreateSession,
  listSessionPeers,
  listSessions,
  removePeersFromSession,
  updateSession,
} from '../domain/sessions/sessions.js';
import { getOrCreateWorkspace, listWorkspaces, updateWorkspace } from '../domain/workspaces/workspaces.js';
import {
  actorOf,
  authorizeV3,
  checkChatSessions,
  checkCreatePeer,
  checkCreateSession,
  checkCreateWorkspace,
  type Claims,
  type RouteScope,
  type ScopeIds,
} from '../http/shared/auth.js';
import { filtersBody, paged, pagedReversible, resourceId } from '../http/shared/fields.js';
import { conclusionBatchV3, conclusionQuery, ForgetBody, forgetRequestOf, peerCardSet, peerContextQueryV3, representationGetV3 } from '../http/shared/memory-schemas.js';
import { messageSearch, peerIdList, statisticsQuery } from '../http/shared/resource-schemas.js';
import { listQuery } from '../http/shared/route.js';
import { INVALID, bool, int, model, optional, type Field, type Loc, type Schema, type ValidationItem } from '../http/shared/validate.js';
import { V3 } from '../http/workspace-api/generations.js';
import type { JsonObject } from '../storage/store.js';
import { refuseScopes, refuseScopeUpdate } from '../domain/scopes/scope-guards.js';
import { addSessionsToScope, createScope, listScopes, listScopeSessions, removeSessionFromScope, scopeStatus } from '../domain/scopes/scopes.js';
import { ScopeCreate, ScopeSessionsAdd } from '../http/shared/scope-schemas.js';
import { CURRENT_RULES } from '../domain/filters/filters.js';

/** An input the route's schema refuses: the items of the API's 422 body. */
export class InvalidInput extends Error {
  constructor(readonly items: ValidationItem[]) {
    super(items.map((item) => `${item.loc.slice(1).join('.') || item.loc.join('.')}: ${item.msg}`).join('; '));
    this.name = 'InvalidInput';
  }
}

/** `value` read by `schema` as the route reads its body (loc `body`) or query (loc `query`). */
function valid<T>(schema: Schema<T>, value: unknown, loc: Loc = ['body']): T {
  const errors: ValidationItem[] = [];
  const parsed = schema.parse(value, loc, errors);
  if (parsed === INVALID || errors.length > 0) throw new InvalidInput(errors);
  return parsed;
}

/** Query fields read as the route reads its query string (absent ones take their defaults). */
function validQuery<F extends Record<string, Field<any>>>(fields: F, values: Record<string, unknown>) {
  return valid(model(fields), defined(values), ['query']);
}

/** The object without its undefined values (the schemas read a present key as sent). */
export function defined<T extends Record<string, unknown>>(value: T): T {
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) if (item !== undefined) out[key] = item;
  return out as T;
}

/**
 * A workspace id checked as a create body's id is, for the tools that read a workspace without
 * getting or creating it first (which checks it): a malformed id is refused with the same message.
 */
function checkWorkspaceId(id: string): void {
  valid(resourceId('v3'), id, ['path', 'workspace_id']);
}

/** The rule of each route a tool calls, as the route declares it (workspace-api/routes/). */
export const ROUTE_SCOPES = {
  workspaceList: { kind: 'admin' },
  workspaceUpdate: { kind: 'workspace' },
  peerList: { kind: 'workspace' },
  peerUpdate: { kind: 'peer' },
  peerSessions: { kind: 'peer' },
  sessionList: { kind: 'workspace' },
  sessionUpdate: { kind: 'session' },
  sessionDelete: { kind: 'session' },
  sessionClone: { kind: 'session' },
  sessionPeersAdd: { kind: 'session' },
  sessionPeersRemove: { kind: 'session' },
  sessionPeersRead: { kind: 'session', memberRead: true },
  messageCreate: { kind: 'session' },
  messageList: { kind: 'session', memberRead: true },
  messageGet: { kind: 'session', memberRead: true },
  sessionContext: { kind: 'session', memberRead: true },
  sessionSummaries: { kind: 'session', memberRead: true },
  searchWorkspace: { kind: 'workspace' },
  searchSession: { kind: 'session', memberRead: true },
  searchPeer: { kind: 'peer' },
  peerChat: { kind: 'peer' },
  peerCard: { kind: 'peer' },
  peerContext: { kind: 'peer' },
  representation: { kind: 'peer' },
  conclusions: { kind: 'workspace' },
  forget: { kind: 'workspace' },
  statistics: { kind: 'workspace' },
  dream: { kind: 'workspace' },
  queue: { kind: 'workspace' },
  scopes: { kind: 'workspace' },
} as const satisfies Record<string, RouteScope>;

const sessionContextQuery = {
  tokens: optional(int({ le: 100_000 }), () => 100_000),
  summary: optional(bool(), () => true),
};

export type Level = 'minimal' | 'low' | 'medium' | 'high' | 'max';

/** One caller's view of the v3 routes: its claims (ADMIN_CLAIMS with auth off) checked on every call. */
export class Api {
  constructor(
    readonly ctx: DomainContext,
    readonly claims: Claims,
  ) {}

  private readonly isActiveMember = (w: string, s: string, p: string) => this.ctx.store.sessions.isActiveMember(w, s, p);

  private authorize(scope: RouteScope, ids: ScopeIds): Promise<void> {
    return authorizeV3(this.claims, scope, ids, this.isActiveMember);
  }

  // ---------------------------------------------------------------- workspaces

  /*
   * The get-or-create calls below (the reference's tools run one before most calls) read first:
   * for a row that exists, with nothing to change, the verb would return it unchanged, and a
   * read costs less than the verb's write transaction. A missing row goes to the verb.
   */

  /** `POST /v3/workspaces` (self: a non-admin key names its own workspace). */
  async ensureWorkspace(id: string, metadata?: JsonObject) {
    const body = valid(V3.bodies.workspaceCreate, defined({ id, metadata }));
    await this.authorize({ kind: 'self' }, {});
    checkCreateWorkspace(this.claims, body.id);
    // an existing workspace is what the verb would return unchanged: read, not a write transaction
    if (metadata === undefined) {
      const found = await this.ctx.store.workspaces.find(body.id);
      if (found !== undefined) return found;
    }
    return (await getOrCreateWorkspace(this.ctx, body)).record;
  }

  /** `POST /v3/workspaces/list` (admin). */
  async listWorkspaces(page: number, size: number) {
    await this.authorize(ROUTE_SCOPES.workspaceList, {});
    const query = validQuery(paged, { page, size });
    return listWorkspaces(this.ctx, listQuery(query, undefined, CURRENT_RULES));
  }

  /** `PUT /v3/workspaces/{w}`. */
  async updateWorkspace(workspaceId: string, metadata: JsonObject) {
    await this.authorize(ROUTE_SCOPES.workspaceUpdate, { workspaceId });
    return updateWorkspace(this.ctx, workspaceId, valid(V3.bodies.workspaceUpdate, { metadata }));
  }

  // ---------------------------------------------------------------- peers

  /** `POST /v3/workspaces/{w}/peers` (self: a peer key creates only itself). */
  async ensurePeer(workspaceId: string, peerId: string, configuration?: JsonObject) {
    const body = valid(V3.bodies.peerCreate, defined({ id: peerId, configuration }));
    await this.authorize({ kind: 'self' }, { workspaceId });
    checkCreatePeer(this.claims, workspaceId, body.id);
    if (configuration === undefined) {
      const found = await this.ctx.store.peers.find(workspaceId, body.id);
      if (found !== undefined) return found;
    }
    return (await getOrCreatePeer(this.ctx, workspaceId, body)).record;
  }

  /** `POST /v3/workspaces/{w}/peers/list`, one page. */
  async listPeers(workspaceId: string, page = 1, size = 50) {
    await this.authorize(ROUTE_SCOPES.peerList, { workspaceId });
    const query = validQuery(paged, { page, size });
    return listPeersOfWorkspace(this.ctx, workspaceId, listQuery(query, undefined, CURRENT_RULES));
  }

  /** `PUT /v3/workspaces/{w}/peers/{p}`. */
  async updatePeer(workspaceId: string, peerId: string, metadata: JsonObject) {
    await this.authorize(ROUTE_SCOPES.peerUpdate, { workspaceId, peerId });
    await refuseScopeUpdate(this.ctx, workspaceId, peerId);
    return updatePeer(this.ctx, workspaceId, peerId, valid(V3.bodies.peerUpdate, { metadata }));
  }

  /** `POST /v3/workspaces/{w}/peers/{p}/sessions`, one page. */
  async peerSessions(workspaceId: string, peerId: string, page = 1, size = 50, filters?: JsonObject) {
    await this.authorize(ROUTE_SCOPES.peerSessions, { workspaceId, peerId });
    const query = validQuery(pagedReversible, { page, size });
    return listSessionsOfPeer(this.ctx, workspaceId, peerId, listQuery(query, valid(filtersBody, defined({ filters })), CURRENT_RULES));
  }

  // ---------------------------------------------------------------- sessions

  /** `POST /v3/workspaces/{w}/sessions` (self: a session key creates only itself). */
  async ensureSession(workspaceId: string, sessionId: string) {
    const body = valid(V3.bodies.sessionCreate, { id: sessionId });
    await this.authorize({ kind: 'self' }, { workspaceId });
    checkCreateSession(this.claims, workspaceId, body.id);
    const found = await this.ctx.store.sessions.find(workspaceId, body.id);
    // a deleted (inactive) session goes to the verb, which answers its 404
    if (found?.isActive === true) return found;
    return (await getOrCreateSession(this.ctx, workspaceId, body)).record;
  }

  /** `POST /v3/workspaces/{w}/sessions/list`, one page. */
  async listSessions(workspaceId: string, page = 1, size = 50) {
    await this.authorize(ROUTE_SCOPES.sessionList, { workspaceId });
    const query = validQuery(paged, { page, size });
    return listSessions(this.ctx, workspaceId, listQuery(query, undefined, CURRENT_RULES));
  }

  /** `PUT /v3/workspaces/{w}/sessions/{s}`. */
  async updateSession(workspaceId: string, sessionId: string, metadata: JsonObject) {
    await this.authorize(ROUTE_SCOPES.sessionUpdate, { workspaceId, sessionId });
    return updateSession(this.ctx, workspaceId, sessionId, valid(V3.bodies.sessionUpdate, { metadata }));
  }

  /** `DELETE /v3/workspaces/{w}/sessions/{s}`. */
  async deleteSession(workspaceId: string, sessionId: string) {
    await this.authorize(ROUTE_SCOPES.sessionDelete, { workspaceId, sessionId });
    await deleteSession(this.ctx, workspaceId, sessionId);
  }

  /** `POST /v3/workspaces/{w}/sessions/{s}/clone`. */
  async cloneSession(workspaceId: string, sessionId: string, messageId?: string) {
    await this.authorize(ROUTE_SCOPES.sessionClone, { workspaceId, sessionId });
    return cloneSession(this.ctx, workspaceId, sessionId, messageId);
  }

  /** `POST /v3/workspaces/{w}/sessions/{s}/peers`. */
  async addPeers(workspaceId: string, sessionId: string, peers: JsonObject) {
    await this.authorize(ROUTE_SCOPES.sessionPeersAdd, { workspaceId, sessionId });
    const body = valid(V3.bodies.sessionPeers, peers);
    await refuseScopes(this.ctx, workspaceId, [...body.keys()], 'membership', 'create');
    return addPeersToSession(this.ctx, workspaceId, sessionId, body);
  }

  /** `DELETE /v3/workspaces/{w}/sessions/{s}/peers`. */
  async removePeers(workspaceId: string, sessionId: string, peerIds: string[]) {
    await this.authorize(ROUTE_SCOPES.sessionPeersRemove, { workspaceId, sessionId });
    const ids = valid(peerIdList, peerIds);
    await refuseScopes(this.ctx, workspaceId, ids, 'membership', 'pass');
    return removePeersFromSession(this.ctx, workspaceId, sessionId, ids);
  }

  /** `GET /v3/workspaces/{w}/sessions/{s}/peers`, one page. */
  async sessionPeers(workspaceId: string, sessionId: string, page = 1, size = 100) {
    await this.authorize(ROUTE_SCOPES.sessionPeersRead, { workspaceId, sessionId });
    const query = validQuery(paged, { page, size });
    return listSessionPeers(this.ctx, workspaceId, sessionId, query.page, query.size);
  }

  /** `GET /v3/workspaces/{w}/sessions/{s}/summaries`. */
  async sessionSummaries(workspaceId: string, sessionId: string) {
    await this.authorize(ROUTE_SCOPES.sessionSummaries, { workspaceId, sessionId });
    return getSessionSummaries(this.ctx, workspaceId, sessionId);
  }

  /** `GET /v3/workspaces/{w}/sessions/{s}/context` (no peer target). */
  async sessionContext(workspaceId: string, sessionId: string, options: { tokens?: number; summary?: boolean }) {
    await this.authorize(ROUTE_SCOPES.sessionContext, { workspaceId, sessionId });
    const query = validQuery(sessionContextQuery, options);
    return getSessionContext(this.ctx, workspaceId, sessionId, { tokens: query.tokens, includeSummary: query.summary, limitToSession: false });
  }

  // ---------------------------------------------------------------- messages

  /** `POST /v3/workspaces/{w}/sessions/{s}/messages`. */
  async createMessages(workspaceId: string, sessionId: string, messages: JsonObject[]) {
    await this.authorize(ROUTE_SCOPES.messageCreate, { workspaceId, sessionId });
    const body = valid(V3.bodies.messageBatch, { messages });
    const inputs = body.messages.map((m) => ({ peerId: m.peer_id, content: m.content, metadata: m.metadata, createdAt: m.created_at, configuration: m.configuration }));
    await refuseScopes(this.ctx, workspaceId, inputs.map((m) => m.peerId), 'author', 'create');
    return createMessages(this.ctx, workspaceId, sessionId, inputs);
  }

  /** `POST /v3/workspaces/{w}/sessions/{s}/messages/list`, one page. */
  async listMessages(workspaceId: string, sessionId: string, filters?: JsonObject, page = 1, size = 50) {
    await this.authorize(ROUTE_SCOPES.messageList, { workspaceId, sessionId });
    const query = validQuery(pagedReversible, { page, size });
    return listMessages(this.ctx, workspaceId, sessionId, listQuery(query, valid(filtersBody, defined({ filters })), CURRENT_RULES));
  }

  /** `GET /v3/workspaces/{w}/sessions/{s}/messages/{m}`. */
  async getMessage(workspaceId: string, sessionId: string, messageId: string) {
    await this.authorize(ROUTE_SCOPES.messageGet, { workspaceId, sessionId });
    return getMessage(this.ctx, workspaceId, sessionId, messageId);
  }

  /** `POST .../search` of the workspace, a session (member read) or a peer, as `scope` names. */
  async searchMessages(scope: SearchScope, body: { query: string; filters?: JsonObject; limit?: number }) {
    const rule = scope.sessionId !== undefined ? ROUTE_SCOPES.searchSession : scope.peerId !== undefined ? ROUTE_SCOPES.searchPeer : ROUTE_SCOPES.searchWorkspace;
    await this.authorize(rule, scope);
    return searchMessages(this.ctx, scope, { ...valid(messageSearch, defined(body)), rules: CURRENT_RULES });
  }

  // ---------------------------------------------------------------- peer memory and chat

  /** `POST /v3/workspaces/{w}/peers/{p}/chat`, not streamed; a peer key must be a member of the session. */
  async chat(workspaceId: string, peerId: string, request: { query: string; target?: string; sessionId?: string; level: Level }, signal?: AbortSignal) {
    await this.authorize(ROUTE_SCOPES.peerChat, { workspaceId, peerId });
    await refuseScopes(this.ctx, workspaceId, [peerId, request.target], 'chat', 'later');
    await checkChatSessions(this.claims, workspaceId, request.sessionId !== undefined ? [request.sessionId] : [], this.isActiveMember);
    const chat = await prepareChat(
      this.ctx,
      workspaceId,
      { observerId: peerId, targetId: request.target, query: request.query, sessionId: request.sessionId, level: request.level, stream: false },
      this.ctx.reasoning?.onChat,
    );
    return (await chat.run({ signal })).content;
  }

  /** `GET /v3/workspaces/{w}/peers/{p}/card`. */
  async peerCard(workspaceId: string, peerId: string, target?: string) {
    await this.authorize(ROUTE_SCOPES.peerCard, { workspaceId, peerId });
    return getPeerCard(this.ctx, workspaceId, peerId, target ?? peerId);
  }

  /** `PUT /v3/workspaces/{w}/peers/{p}/card`. */
  async setPeerCard(workspaceId: string, peerId: string, card: string[], target?: string) {
    await this.authorize(ROUTE_SCOPES.peerCard, { workspaceId, peerId });
    const body = valid(peerCardSet, { peer_card: card });
    await refuseScopes(this.ctx, workspaceId, [target ?? peerId], 'card', 'later');
    return setPeerCard(this.ctx, workspaceId, peerId, target ?? peerId, body.peer_card);
  }

  /** `GET /v3/workspaces/{w}/peers/{p}/context`. */
  async peerContext(workspaceId: string, peerId: string, options: { target?: string; searchQuery?: string; maxConclusions?: number }) {
    await this.authorize(ROUTE_SCOPES.peerContext, { workspaceId, peerId });
    await refuseScopes(this.ctx, workspaceId, [peerId, options.target], 'peerContext', 'later');
    const query = validQuery(peerContextQueryV3, defined({ target: options.target, search_query: options.searchQuery, max_conclusions: options.maxConclusions }));
    return getPeerContext(this.ctx, workspaceId, peerId, {
      target: query.target,
      searchQuery: query.search_query,
      maxConclusions: query.max_conclusions ?? DEFAULT_MAX_CONCLUSIONS,
    });
  }

  /** `POST /v3/workspaces/{w}/peers/{p}/representation`. */
  async representation(workspaceId: string, peerId: string, options: { target?: string; sessionId?: string; searchQuery?: string; maxConclusions?: number }) {
    await this.authorize(ROUTE_SCOPES.representation, { workspaceId, peerId });
    await refuseScopes(this.ctx, workspaceId, [peerId, options.target], 'representation', 'later');
    const body = valid(
      representationGetV3,
      defined({ target: options.target, session_id: options.sessionId, search_query: options.searchQuery, max_conclusions: options.maxConclusions }),
    );
    return getPeerRepresentation(this.ctx, workspaceId, peerId, {
      target: body.target,
      sessionIds: body.session_id !== undefined ? [body.session_id] : undefined,
      searchQuery: body.search_query,
      maxConclusions: body.max_conclusions,
    });
  }

  // ---------------------------------------------------------------- conclusions, dreams, queue

  /** `POST /v3/workspaces/{w}/conclusions`. */
  async createConclusions(workspaceId: string, conclusions: JsonObject[]) {
    await this.authorize(ROUTE_SCOPES.conclusions, { workspaceId });
    const body = valid(conclusionBatchV3, { conclusions });
    await refuseScopes(this.ctx, workspaceId, body.conclusions.map((c) => c.observed_id), 'conclusion', 'missing');
    return createConclusions(
      this.ctx,
      workspaceId,
      body.conclusions.map((c) => ({ content: c.content, observerId: c.observer_id, observedId: c.observed_id, sessionId: c.session_id, supersedes: c.supersedes })),
    );
  }

  /** `POST /v3/workspaces/{w}/conclusions/list`, one page (`include_superseded`: the replaced ones too). */
  async listConclusions(workspaceId: string, filters: JsonObject, page = 1, size = 50, includeSuperseded = false) {
    await this.authorize(ROUTE_SCOPES.conclusions, { workspaceId });
    const query = validQuery(pagedReversible, { page, size });
    return listConclusions(this.ctx, workspaceId, { ...listQuery(query, valid(filtersBody, { filters }), CURRENT_RULES), includeSuperseded });
  }

  /** `POST /v3/workspaces/{w}/forget`: a preview and its token, or with the token the removal. */
  async forget(workspaceId: string, request: JsonObject) {
    await this.authorize(ROUTE_SCOPES.forget, { workspaceId });
    checkWorkspaceId(workspaceId);
    const body = valid(ForgetBody, defined(request));
    return forget(this.ctx, workspaceId, forgetRequestOf(body), body.token ?? undefined, actorOf(this.claims));
  }

  /** `GET /v3/workspaces/{w}/statistics`. */
  async statistics(workspaceId: string, hours?: number) {
    await this.authorize(ROUTE_SCOPES.statistics, { workspaceId });
    checkWorkspaceId(workspaceId);
    const query = validQuery(statisticsQuery, { hours });
    return { statistics: await getWorkspaceStatistics(this.ctx, workspaceId, query.hours), hours: query.hours };
  }

  /** `POST /v3/workspaces/{w}/conclusions/query`. */
  async queryConclusions(workspaceId: string, body: { query: string; top_k?: number; filters: JsonObject }) {
    await this.authorize(ROUTE_SCOPES.conclusions, { workspaceId });
    const parsed = valid(conclusionQuery, defined(body));
    return queryConclusions(this.ctx, workspaceId, { query: parsed.query, topK: parsed.top_k, distance: parsed.distance, filters: parsed.filters, rules: CURRENT_RULES });
  }

  /** `DELETE /v3/workspaces/{w}/conclusions/{id}`. */
  async deleteConclusion(workspaceId: string, conclusionId: string) {
    await this.authorize(ROUTE_SCOPES.conclusions, { workspaceId });
    await deleteConclusion(this.ctx, workspaceId, conclusionId);
  }

  /** `POST /v3/workspaces/{w}/schedule_dream` (an omni dream). */
  async scheduleDream(workspaceId: string, observerId: string, observedId: string, sessionId?: string) {
    await this.authorize(ROUTE_SCOPES.dream, { workspaceId });
    await refuseScopes(this.ctx, workspaceId, [observedId], 'dream', 'later');
    return scheduleDream(this.ctx, { workspaceId, observerId, observedId, dreamType: 'omni', sessionId: sessionId ?? null, rebuild: false });
  }

  /** `GET /v3/workspaces/{w}/queue/status`. */
  async queueStatus(workspaceId: string) {
    await this.authorize(ROUTE_SCOPES.queue, { workspaceId });
    return getQueueStatus(this.ctx, workspaceId);
  }

  // ---------------------------------------------------------------- scopes (workspace keys only)

  /** `POST /v3/workspaces/{w}/scopes` (get or create). */
  async createScope(workspaceId: string, id: string, metadata?: JsonObject) {
    await this.authorize(ROUTE_SCOPES.scopes, { workspaceId });
    return createScope(this.ctx, workspaceId, valid(ScopeCreate, defined({ id, metadata })));
  }

  /** `POST /v3/workspaces/{w}/scopes/list`, one page. */
  async listScopes(workspaceId: string, page = 1, size = 50) {
    await this.authorize(ROUTE_SCOPES.scopes, { workspaceId });
    const query = validQuery(pagedReversible, { page, size });
    return listScopes(this.ctx, workspaceId, { page: query.page, size: query.size, reverse: query.reverse ?? false });
  }

  /** `POST /v3/workspaces/{w}/scopes/{x}/sessions`. */
  async addSessionsToScope(workspaceId: string, scopeId: string, sessionIds: string[]) {
    await this.authorize(ROUTE_SCOPES.scopes, { workspaceId });
    await addSessionsToScope(this.ctx, workspaceId, scopeId, valid(ScopeSessionsAdd, { session_ids: sessionIds }).session_ids);
  }

  /** `DELETE /v3/workspaces/{w}/scopes/{x}/sessions/{s}`. */
  async removeSessionFromScope(workspaceId: string, scopeId: string, sessionId: string) {
    await this.authorize(ROUTE_SCOPES.scopes, { workspaceId });
    await removeSessionFromScope(this.ctx, workspaceId, scopeId, sessionId);
  }

  /** `POST /v3/workspaces/{w}/scopes/{x}/sessions/list`, one page. */
  async scopeSessions(workspaceId: string, scopeId: string, page = 1, size = 50) {
    await this.authorize(ROUTE_SCOPES.scopes, { workspaceId });
    const query = validQuery(pagedReversible, { page, size });
    return listScopeSessions(this.ctx, workspaceId, scopeId, { page: query.page, size: query.size, reverse: query.reverse ?? false });
  }

  /** `GET /v3/workspaces/{w}/scopes/{x}/status`. */
  async scopeStatus(workspaceId: string, scopeId: string) {
    await this.authorize(ROUTE_SCOPES.scopes, { workspaceId });
    return scopeStatus(this.ctx, workspaceId, scopeId);
  }
}
