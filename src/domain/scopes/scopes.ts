import type { Created, JsonObject, MembershipRecord, Page, PeerRecord, ScopeBackfillRecord, SessionRecord } from '../../storage/store.js';
import { inTransaction, type DomainContext } from '../context.js';
import { conflict, invalidInput, notFound } from '../errors.js';
import { pythonList, scopeNameOf, scopePeerId } from './scope-names.js';
import { queueScopeWork } from './scope-work.js';

/*
 * Scopes (shared/reference/scopes.md S1-S2): a named set of sessions through which a peer's
 * memory can be read. A scope is a peer of kind 'scope' that observes its sessions silently, so
 * the deriver's observer rules give it conclusions from the moment a session joins; what a
 * session held before it joined is copied by a backfill job (scope-work.ts).
 */

/** A scope as the API shows it: its unprefixed name. */
export interface Scope {
  id: string;
  metadata: JsonObject;
  createdAt: Date;
}

/** A scope's membership configuration: it observes the others and is never observed. */
export const SCOPE_MEMBERSHIP: JsonObject = { observe_me: false, observe_others: true };

/** A scope peer's own configuration when it is created. */
const SCOPE_PEER_CONFIGURATION: JsonObject = { observe_me: false };

/** Most sessions in one add request (the schema checks it; here for the domain's callers). */
export const MAX_SESSIONS_PER_ADD = 100;

const toScope = (peer: PeerRecord): Scope => ({ id: scopeNameOf(peer.id), metadata: peer.metadata, createdAt: peer.createdAt });

export const scopeNotFound = (workspaceId: string, name: string) => notFound(`Scope ${name} not found in workspace ${workspaceId}`);

function squatterConflict(workspaceId: string, name: string) {
  return conflict(
    `A peer named '${scopePeerId(name)}' already exists in workspace ${workspaceId} but is not a scope. Rename or delete that peer before creating this scope.`,
  );
}

/** The peer behind the scope; 404 when there is no such scope (a squatter is none). */
async function scopePeer(ctx: DomainContext, workspaceId: string, name: string): Promise<PeerRecord> {
  const peer = await ctx.store.peers.find(workspaceId, scopePeerId(name));
  if (peer === undefined || peer.kind !== 'scope') throw scopeNotFound(workspaceId, name);
  return peer;
}

/**
 * Gets or creates the scope's peer inside the caller's transaction; a squatter on its name is a
 * 409. An existing scope's metadata is replaced when `metadata` is given and differs.
 */
async function ensureScope(ctx: DomainContext, workspaceId: string, name: string, metadata: JsonObject | undefined, now: Date): Promise<Created<PeerRecord>> {
  const { store } = ctx;
  const result = await store.peers.createScopeIfAbsent(workspaceId, { id: scopePeerId(name), metadata: metadata ?? {}, configuration: SCOPE_PEER_CONFIGURATION }, now);
  if (result.record.kind !== 'scope') throw squatterConflict(workspaceId, name);
  if (result.created || metadata === undefined || JSON.stringify(metadata) === JSON.stringify(result.record.metadata)) return result;
  const updated = await store.peers.update(workspaceId, result.record.id, { metadata });
  return { record: updated ?? result.record, created: false };
}

/** `POST /scopes`: get-or-create (the workspace too). */
export function createScope(ctx: DomainContext, workspaceId: string, input: { id: string; metadata?: JsonObject | null }): Promise<Created<Scope>> {
  return inTransaction(ctx, async (ctx) => {
    const now = ctx.now();
    await ctx.store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
    const { record, created } = await ensureScope(ctx, workspaceId, input.id, input.metadata ?? undefined, now);
    return { record: toScope(record), created };
  });
}

export async function getScope(ctx: DomainContext, workspaceId: string, name: string): Promise<Scope> {
  return toScope(await scopePeer(ctx, workspaceId, name));
}

/** The workspace's scopes, oldest first (`reverse`: newest first). */
export async function listScopes(ctx: DomainContext, workspaceId: string, query: { page: number; size: number; reverse: boolean }): Promise<Page<Scope>> {
  const page = await ctx.store.peers.list(workspaceId, { filter: null, ...query }, 'scopes');
  return { items: page.items.map(toScope), total: page.total };
}

/** The sessions the scope holds now (active sessions, active memberships), in the order they joined. */
export async function listScopeSessions(
  ctx: DomainContext,
  workspaceId: string,
  name: string,
  query: { page: number; size: number; reverse: boolean },
): Promise<Page<SessionRecord>> {
  const peer = await scopePeer(ctx, workspaceId, name);
  return ctx.store.sessions.activeOfMember(workspaceId, peer.id, query.page, query.size, query.reverse);
}

/** Joins the scope's peer to a session inside the caller's transaction (the session row is locked). */
async function joinScope(ctx: DomainContext, workspaceId: string, sessionId: string, peerId: string, now: Date): Promise<void> {
  const { store } = ctx;
  const member = await store.sessions.findMembership(workspaceId, sessionId, peerId);
  const isActive = member !== undefined && member.leftAt === null;
  const row: MembershipRecord = { peerId, configuration: isActive ? member.configuration : { ...SCOPE_MEMBERSHIP }, joinedAt: now, leftAt: null };
  await store.sessions.saveMemberships(workspaceId, sessionId, [row]);
}

/**
 * `POST /scopes/{x}/sessions`: every listed session must exist and be active (404 naming the
 * missing ones); each joins (an active member's joined_at moves to now), and a backfill is queued
 * for each that holds messages, in the same transaction.
 */
export function addSessionsToScope(ctx: DomainContext, workspaceId: string, name: string, sessionIds: readonly string[]): Promise<void> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    const peer = await scopePeer(ctx, workspaceId, name);
    const sorted = [...new Set(sessionIds)].sort();
    const sessions: SessionRecord[] = [];
    const missing: string[] = [];
    // session rows locked in id order, as every writer of several sessions takes them
    for (const id of sorted) {
      const session = await store.sessions.findForWrite(workspaceId, id);
      if (session === undefined || !session.isActive) missing.push(id);
      else sessions.push(session);
    }
    if (missing.length > 0) throw notFound(`Session(s) ${pythonList(missing)} not found in workspace ${workspaceId}`);
    for (const session of sessions) await joinScope(ctx, workspaceId, session.id, peer.id, now);
    await queueBackfills(ctx, workspaceId, peer.id, sorted, now);
  });
}

/** Queues a backfill of each session that holds a message (inside the caller's transaction). */
async function queueBackfills(ctx: DomainContext, workspaceId: string, scopePeerIdValue: string, sessionIds: readonly string[], now: Date): Promise<void> {
  for (const sessionId of sessionIds) {
    if ((await ctx.store.reasoning.sessionMessageCount(workspaceId, sessionId)) === 0) continue;
    await queueScopeWork(ctx, { kind: 'backfill', workspaceId, scopePeerId: scopePeerIdValue, sessionId }, now);
  }
}

/**
 * `DELETE /scopes/{x}/sessions/{s}`: the scope leaves the session (nothing when it was no member)
 * and a removal job is queued either way, which retires what the scope holds from the session.
 */
export function removeSessionFromScope(ctx: DomainContext, workspaceId: string, name: string, sessionId: string): Promise<void> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    const peer = await scopePeer(ctx, workspaceId, name);
    const session = await store.sessions.findForWrite(workspaceId, sessionId);
    if (session === undefined || !session.isActive) throw notFound(`Session ${sessionId} not found in workspace ${workspaceId}`);
    await store.sessions.markMembersLeft(workspaceId, sessionId, [peer.id], now);
    await queueScopeWork(ctx, { kind: 'removal', workspaceId, scopePeerId: peer.id, sessionId }, now);
  });
}

/** `GET /scopes/{x}/status`: the backfill state of each session one was queued for. */
export async function scopeStatus(ctx: DomainContext, workspaceId: string, name: string): Promise<ScopeBackfillRecord[]> {
  const peer = await scopePeer(ctx, workspaceId, name);
  return ctx.store.scopes.backfills(workspaceId, peer.id);
}

/**
 * `scopes` of a session create (S7.1), inside its transaction after the session is written: each
 * scope is got or created (a squatter is a 409 and nothing is kept) and joins the session; when
 * the session already holds messages, a backfill per scope is queued.
 */
export async function joinSessionToScopes(ctx: DomainContext, workspaceId: string, sessionId: string, names: readonly string[], now: Date): Promise<void> {
  const peers: string[] = [];
  for (const name of names) {
    const { record } = await ensureScope(ctx, workspaceId, name, undefined, now);
    await joinScope(ctx, workspaceId, sessionId, record.id, now);
    peers.push(record.id);
  }
  if ((await ctx.store.reasoning.sessionMessageCount(workspaceId, sessionId)) === 0) return;
  for (const peerId of [...new Set(peers)]) await queueScopeWork(ctx, { kind: 'backfill', workspaceId, scopePeerId: peerId, sessionId }, now);
}

/** The sessions of a read's `scope` option, resolved (S6.1). */
export type ScopeRead =
  /** One scope: its own memory is read (the observer is the scope's peer). */
  | { kind: 'single'; observerId: string }
  /** A list: the reader's memory confined to the union of the scopes' sessions. */
  | { kind: 'union'; sessionIds: string[] };

/** Most sessions in the union of a list-form `scope`. */
export const MAX_SCOPE_UNION = 1000;

/** A scope named in a read: 404 when unknown, 422 when a squatter holds its name. */
async function readableScope(ctx: DomainContext, workspaceId: string, name: string): Promise<PeerRecord> {
  const peer = await ctx.store.peers.find(workspaceId, scopePeerId(name));
  if (peer === undefined) throw scopeNotFound(workspaceId, name);
  if (peer.kind !== 'scope') throw invalidInput(`'${name}' does not name a scope: a non-scope peer occupies its reserved name.`);
  return peer;
}

/**
 * Resolves a read's `scope` option: a name reads that scope's memory; a list (even of one) reads
 * the union of its scopes' sessions (every session the scope ever joined, as recall counts them),
 * at most MAX_SCOPE_UNION.
 */
export async function resolveScopeRead(ctx: DomainContext, workspaceId: string, scope: string | readonly string[]): Promise<ScopeRead> {
  if (typeof scope === 'string') return { kind: 'single', observerId: (await readableScope(ctx, workspaceId, scope)).id };
  const names = [...new Set(scope)];
  const peers: PeerRecord[] = [];
  for (const name of names) peers.push(await readableScope(ctx, workspaceId, name));
  const sessions = new Set<string>();
  for (const peer of peers) {
    for (const id of await ctx.store.sessions.sessionIdsOfPeer(workspaceId, peer.id, MAX_SCOPE_UNION + 1)) sessions.add(id);
    if (sessions.size > MAX_SCOPE_UNION) throw invalidInput(`The scopes' combined membership exceeds the maximum of ${MAX_SCOPE_UNION} sessions per request`);
  }
  return { kind: 'union', sessionIds: [...sessions] };
}

/** Every session the scope ever joined (recall's definition), at most MAX_SCOPE_UNION + 1. */
export async function sessionsOfScope(ctx: DomainContext, workspaceId: string, name: string): Promise<string[]> {
  const peer = await readableScope(ctx, workspaceId, name);
  return ctx.store.sessions.sessionIdsOfPeer(workspaceId, peer.id, Number.MAX_SAFE_INTEGER);
}
