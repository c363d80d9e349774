import type {
  Created,
  JsonObject,
  MembershipRecord,
  Page,
  PeerRecord,
  SessionRecord,
} from '../../storage/store.js';
import { SESSION_FILTER } from '../filters/filter-schemas.js';
import { sessionListQuery, type ListRequest } from '../filters/filters.js';
import { inTransaction, type DomainContext } from '../context.js';
import { limitExceeded, notFound } from '../errors.js';
import { schedulePurgeSession } from '../follow-ups.js';
import { joinSessionToScopes } from '../scopes/scopes.js';
import { mergeConfiguration } from '../workspaces/workspaces.js';

/** Session-level configuration of one member (contract §3.1). */
export interface SessionPeerConfig {
  observe_me: boolean | null;
  observe_others: boolean | null;
}

/** Peer id -> its session-level configuration, in request order. */
export type PeerConfigMap = Map<string, SessionPeerConfig>;

export interface SessionInput {
  id: string;
  metadata?: JsonObject;
  configuration?: JsonObject;
  peers?: PeerConfigMap;
  /** Scopes the session joins (created when missing). */
  scopes?: string[];
}

const sessionNotFound = (workspaceId: string, sessionId: string) =>
  notFound(`Session ${sessionId} not found in workspace ${workspaceId}`);

function observerError(sessionId: string, count: number, limit: number) {
  // The reference says "create" even when adding to an existing session (contract §3.1).
  return limitExceeded(
    `Cannot create session ${sessionId} with ${count} observers. Maximum allowed is ${limit} observers per session. ` +
      `Observers are peers with 'observe_others' set to true.`,
  );
}

function countObservers(peers: PeerConfigMap): number {
  let n = 0;
  for (const config of peers.values()) if (config.observe_others === true) n++;
  return n;
}

function isObserver(config: JsonObject): boolean {
  return config.observe_others === true;
}

/** A member counted towards SESSION_OBSERVERS_LIMIT: an active observer that is not a scope. */
function isCountedObserver(member: MembershipRecord): boolean {
  return member.leftAt === null && member.isScope !== true && isObserver(member.configuration);
}

/**
 * Joins the peers to the session (seed 4.2, contract §3.1 step 4): unknown peers are created;
 * new and returning members take the given config; active members keep theirs.
 */
async function joinPeers(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  peers: PeerConfigMap,
  now: Date,
): Promise<void> {
  const { store } = ctx;
  if (peers.size === 0) return;
  // side by side (on PostgreSQL one wait for both): a peer new to the workspace has no membership to read
  const [, members] = await Promise.all([store.peers.ensure(workspaceId, [...peers.keys()], now), store.sessions.memberships(workspaceId, sessionId)]);
  const existing = new Map(members.map((m) => [m.peerId, m]));
  const bodyObservers = countObservers(peers);
  if (bodyObservers > 0) {
    let others = 0;
    for (const member of existing.values()) {
      if (!peers.has(member.peerId) && isCountedObserver(member)) others++;
    }
    if (others + bodyObservers > ctx.limits.sessionObservers) {
      throw observerError(sessionId, others + bodyObservers, ctx.limits.sessionObservers);
    }
  }
  const rows: MembershipRecord[] = [];
  for (const [peerId, config] of peers) {
    const member = existing.get(peerId);
    const isActive = member !== undefined && member.leftAt === null;
    rows.push({
      peerId,
      configuration: isActive ? member.configuration : { ...config },
      joinedAt: now,
      leftAt: null,
    });
  }
  await store.sessions.saveMemberships(workspaceId, sessionId, rows);
}

/**
 * Finds an active session or creates it (with its workspace); an inactive one is a 404. With
 * `forWrite` (the caller goes on to change it) the session's row is locked as it is read
 * (SessionStore.findForWrite), so a delete committed meanwhile is seen.
 */
async function getOrCreateActiveSession(
  ctx: DomainContext,
  workspaceId: string,
  input: { id: string; metadata?: JsonObject; configuration?: JsonObject },
  newPeers: PeerConfigMap | undefined,
  now: Date,
  forWrite: boolean,
): Promise<Created<SessionRecord>> {
  const { store } = ctx;
  const found = forWrite ? await store.sessions.findForWrite(workspaceId, input.id) : await store.sessions.find(workspaceId, input.id);
  if (found !== undefined) {
    if (!found.isActive) throw sessionNotFound(workspaceId, input.id);
    return { record: found, created: false };
  }
  if (newPeers !== undefined) {
    const observers = countObservers(newPeers);
    if (observers > ctx.limits.sessionObservers) throw observerError(input.id, observers, ctx.limits.sessionObservers);
  }
  await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
  const result = await store.sessions.createIfAbsent(
    workspaceId,
    { id: input.id, metadata: input.metadata ?? {}, configuration: input.configuration ?? {} },
    now,
  );
  if (!result.record.isActive) throw sessionNotFound(workspaceId, input.id);
  return result;
}

/**
 * Get-or-create (contract §7.3): an existing session has non-null metadata replaced,
 * configuration merged, and the listed peers added as in §3.1.
 */
export function getOrCreateSession(ctx: DomainContext, workspaceId: string, input: SessionInput): Promise<Created<SessionRecord>> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    const updates = input.metadata !== undefined || input.configuration !== undefined;
    const joins = input.peers !== undefined || (input.scopes !== undefined && input.scopes.length > 0);
    const result = await getOrCreateActiveSession(ctx, workspaceId, input, input.peers, now, updates || joins);
    let record = result.record;
    if (!result.created && updates) {
      record =
        (await store.sessions.update(workspaceId, input.id, {
          metadata: input.metadata,
          configuration: mergeConfiguration(record.configuration, input.configuration),
        })) ?? record;
    }
    if (input.peers !== undefined) await joinPeers(ctx, workspaceId, input.id, input.peers, now);
    if (input.scopes !== undefined && input.scopes.length > 0) await joinSessionToScopes(ctx, workspaceId, input.id, input.scopes, now);
    return { record, created: result.created };
  });
}

/** Seed 4.2: adds peers to a session, creating the session, workspace and peers as needed. */
export function addPeersToSession(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  peers: PeerConfigMap,
): Promise<SessionRecord> {
  return inTransaction(ctx, async (ctx) => {
    const now = ctx.now();
    const { record } = await getOrCreateActiveSession(ctx, workspaceId, { id: sessionId }, peers, now, true);
    await joinPeers(ctx, workspaceId, sessionId, peers, now);
    return record;
  });
}

/** Replaces the membership with exactly the given peers and configs. */
export function setSessionPeers(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  peers: PeerConfigMap,
): Promise<SessionRecord> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    const observers = countObservers(peers);
    if (observers > ctx.limits.sessionObservers) throw observerError(sessionId, observers, ctx.limits.sessionObservers);
    const session = await store.sessions.findForWrite(workspaceId, sessionId);
    // The reference commits the change on an inactive session and then answers 404; Engram
    // refuses before changing anything (docs/compatibility.md).
    if (session === undefined || !session.isActive) throw sessionNotFound(workspaceId, sessionId);
    // the scopes stay: their membership is the scopes routes' to change
    const leaving = (await store.sessions.memberships(workspaceId, sessionId)).filter((m) => m.leftAt === null && m.isScope !== true).map((m) => m.peerId);
    await store.sessions.markMembersLeft(workspaceId, sessionId, leaving, now);
    await store.peers.ensure(workspaceId, [...peers.keys()], now);
    await store.sessions.saveMemberships(
      workspaceId,
      sessionId,
      [...peers].map(([peerId, config]) => ({ peerId, configuration: { ...config }, joinedAt: now, leftAt: null })),
    );
    return session;
  });
}

/** Marks the listed active members as left; unknown ids are ignored. */
export function removePeersFromSession(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  peerIds: string[],
): Promise<SessionRecord> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const session = await store.sessions.findForWrite(workspaceId, sessionId);
    if (session === undefined || !session.isActive) throw sessionNotFound(workspaceId, sessionId);
    await store.sessions.markMembersLeft(workspaceId, sessionId, [...new Set(peerIds)], ctx.now());
    return session;
  });
}

/** Active members of the session, in storage order (no session check, contract §7.3). */
export function listSessionPeers(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  page: number,
  size: number,
): Promise<Page<PeerRecord>> {
  return ctx.store.sessions.activeMemberPeers(workspaceId, sessionId, page, size);
}

export async function getSessionPeerConfig(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  peerId: string,
): Promise<SessionPeerConfig> {
  const member = await ctx.store.sessions.findMembership(workspaceId, sessionId, peerId);
  if (member === undefined) throw notFound(`Session peer ${peerId} not found in session ${sessionId} in workspace ${workspaceId}`);
  const config = member.configuration;
  return {
    observe_me: typeof config.observe_me === 'boolean' ? config.observe_me : null,
    observe_others: typeof config.observe_others === 'boolean' ? config.observe_others : null,
  };
}

/** Merges the non-null fields into the member's config; a non-member becomes a member. */
export function setSessionPeerConfig(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  peerId: string,
  changes: Partial<SessionPeerConfig>,
): Promise<void> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    const session = await store.sessions.findForWrite(workspaceId, sessionId);
    if (session === undefined || !session.isActive) throw sessionNotFound(workspaceId, sessionId);
    const peer = await store.peers.find(workspaceId, peerId);
    if (peer === undefined) throw notFound(`Peer ${peerId} not found in workspace ${workspaceId}`);
    const members = await store.sessions.memberships(workspaceId, sessionId);
    const member = members.find((m) => m.peerId === peerId);
    const configuration: JsonObject = { observe_me: null, observe_others: null, ...member?.configuration };
    for (const [key, value] of Object.entries(changes)) if (value !== null && value !== undefined) configuration[key] = value;
    if (isObserver(configuration) && !(member !== undefined && member.leftAt === null && isObserver(member.configuration))) {
      const others = members.filter((m) => m.peerId !== peerId && isCountedObserver(m)).length;
      if (others + 1 > ctx.limits.sessionObservers) throw observerError(sessionId, others + 1, ctx.limits.sessionObservers);
    }
    await store.sessions.saveMemberships(workspaceId, sessionId, [
      {
        peerId,
        configuration,
        joinedAt: member !== undefined && member.leftAt === null ? member.joinedAt : now,
        leftAt: null,
      },
    ]);
  });
}

export function listSessions(ctx: DomainContext, workspaceId: string, request: ListRequest): Promise<Page<SessionRecord>> {
  return ctx.store.sessions.list(workspaceId, sessionListQuery(ctx.store, request, SESSION_FILTER));
}

/** Updates a session, creating it (and its workspace) when missing; inactive is a 404. */
export function updateSession(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  changes: { metadata?: JsonObject; configuration?: JsonObject },
): Promise<SessionRecord> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    const { record, created } = await getOrCreateActiveSession(ctx, workspaceId, { id: sessionId, ...changes }, undefined, now, true);
    if (created) return record;
    return (
      (await store.sessions.update(workspaceId, sessionId, {
        metadata: changes.metadata,
        configuration: mergeConfiguration(record.configuration, changes.configuration),
      })) ?? record
    );
  });
}

/** Marks the session inactive; it stays visible to member reads until purged. */
export function deleteSession(ctx: DomainContext, workspaceId: string, sessionId: string): Promise<void> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const changed = await store.sessions.deactivate(workspaceId, sessionId);
    if (!changed) throw sessionNotFound(workspaceId, sessionId);
    await schedulePurgeSession(ctx, workspaceId, sessionId, ctx.now());
  });
}

/** Copies a session: metadata, configuration, messages (up to `messageId`) and memberships. */
export function cloneSession(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  messageId: string | undefined,
): Promise<SessionRecord> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    const original = await store.sessions.find(workspaceId, sessionId);
    if (original === undefined || !original.isActive) throw notFound('Original session not found');
    if (messageId !== undefined && !(await store.messages.inSession(workspaceId, sessionId, messageId))) {
      throw notFound('Session not found');
    }
    const { record } = await store.sessions.createIfAbsent(
      workspaceId,
      { id: ctx.newId(), metadata: original.metadata, configuration: original.configuration },
      now,
    );
    await store.messages.copy(workspaceId, sessionId, record.id, messageId, now, ctx.newId);
    const members = await store.sessions.memberships(workspaceId, sessionId);
    await store.sessions.saveMemberships(
      workspaceId,
      record.id,
      members.map((m) => ({ peerId: m.peerId, configuration: m.configuration, joinedAt: now, leftAt: null })),
    );
    return record;
  });
}

export async function isActiveSessionMember(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  peerId: string,
): Promise<boolean> {
  return ctx.store.sessions.isActiveMember(workspaceId, sessionId, peerId);
}
