import type { JsonObject, MessageRecord, Page, V1SessionRecord } from '../../storage/store.js';
import { v1ListQuery, type V1ListRequest } from '../filters/filters.js';
import { inTransaction, type DomainContext } from '../context.js';
import { notFound } from '../errors.js';
import { NEW_MEMBER_CONFIG, cannotName, emptyPage, findSessionOfUser, findUserOfApp, type V1SessionScope } from './scope.js';

/**
 * v1 sessions (contract-v1 §2.3): sessions the user's peer is a member of. A session created
 * through v1 uses its nanoid as both its id and its v1 id, and has the user as its one member.
 */

const SESSION_NOT_FOUND = 'Session not found or does not belong to user';

export async function getSession(ctx: DomainContext, appId: string, userId: string, sessionId: string): Promise<V1SessionScope> {
  const scope = await findSessionOfUser(ctx.store, appId, userId, sessionId);
  if (scope === undefined) throw notFound(SESSION_NOT_FOUND);
  return scope;
}

export function createSession(ctx: DomainContext, appId: string, userId: string, metadata: JsonObject): Promise<V1SessionScope> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const user = await findUserOfApp(store, appId, userId);
    if (user === undefined) throw notFound(`User with ID '${userId}' not found`);
    const now = ctx.now();
    const session = await store.v1.insertSession(user.workspaceId, ctx.newId(), metadata, {}, now);
    await store.sessions.saveMemberships(user.workspaceId, session.id, [
      { peerId: user.name, configuration: NEW_MEMBER_CONFIG, joinedAt: now, leftAt: null },
    ]);
    return { user, session };
  });
}

/** `isActive: true` lists active sessions only; false lists all of them (§2.3). Unknown user: empty. */
export async function listSessions(
  ctx: DomainContext,
  appId: string,
  userId: string,
  isActive: boolean,
  query: V1ListRequest,
): Promise<Page<V1SessionScope>> {
  const user = await findUserOfApp(ctx.store, appId, userId);
  if (user === undefined) return emptyPage();
  const page = await ctx.store.v1.listSessions(user.workspaceId, user.name, isActive, v1ListQuery(ctx.store, query));
  return { items: page.items.map((session) => ({ user, session })), total: page.total };
}

/** `metadata` replaces the stored object. */
export function updateSession(
  ctx: DomainContext,
  appId: string,
  userId: string,
  sessionId: string,
  metadata: JsonObject,
): Promise<V1SessionScope> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const scope = await findSessionOfUser(store, appId, userId, sessionId);
    if (scope === undefined) throw notFound(SESSION_NOT_FOUND);
    await store.v1.updateSessionMetadata(scope.session.workspaceId, scope.session.id, metadata);
    return { user: scope.user, session: { ...scope.session, metadata } };
  });
}

/** Soft delete (is_active = false); deleting an inactive session again is fine. */
export async function deleteSession(ctx: DomainContext, appId: string, userId: string, sessionId: string): Promise<void> {
  const scope = await findSessionOfUser(ctx.store, appId, userId, sessionId);
  if (scope === undefined) throw notFound(SESSION_NOT_FOUND);
  await ctx.store.sessions.deactivate(scope.session.workspaceId, scope.session.id);
}

/**
 * A new active session with the same metadata, configuration and active members (the user
 * always), and copies of the messages up to and including `messageId` (new ids, created now).
 * `deepCopy` also copies the user's metamessages of the session whose message was copied (or
 * that link to no message), re-pointed at the copies. Unlike the reference, the new session is
 * stored even when there is nothing to copy.
 */
export function cloneSession(
  ctx: DomainContext,
  appId: string,
  userId: string,
  sessionId: string,
  options: { messageId?: string; deepCopy: boolean },
): Promise<V1SessionScope> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const scope = await findSessionOfUser(store, appId, userId, sessionId);
    if (scope === undefined) throw notFound('Session not found');
    const { user, session } = scope;
    const workspaceId = session.workspaceId;
    const cutoff = options.messageId;
    if (cutoff !== undefined && (cannotName(cutoff) || (await store.v1.findMessage(workspaceId, session.id, cutoff)) === undefined)) {
      throw notFound('Session not found');
    }
    const now = ctx.now();
    const original = await store.sessions.find(workspaceId, session.id);
    const clone: V1SessionRecord = await store.v1.insertSession(
      workspaceId,
      ctx.newId(),
      session.metadata,
      original?.configuration ?? {},
      now,
    );

    const members = (await store.sessions.memberships(workspaceId, session.id)).filter((m) => m.leftAt === null);
    if (!members.some((m) => m.peerId === user.name)) members.push({ peerId: user.name, configuration: NEW_MEMBER_CONFIG, joinedAt: now, leftAt: null });
    await store.sessions.saveMemberships(
      workspaceId,
      clone.id,
      members.map((m) => ({ peerId: m.peerId, configuration: m.configuration, joinedAt: now, leftAt: null })),
    );

    const copiedIds = new Map<string, string>();
    const copies: MessageRecord[] = (await store.v1.messagesUpTo(workspaceId, session.id, options.messageId)).map((m) => {
      const id = ctx.newId();
      copiedIds.set(m.id, id);
      return { ...m, id, sessionId: clone.id, createdAt: now };
    });
    await store.messages.insert(copies);

    if (options.deepCopy) {
      for (const meta of await store.v1.metamessagesOfSession(workspaceId, user.name, session.id)) {
        const messageId = meta.messageId === null ? null : copiedIds.get(meta.messageId);
        if (messageId === undefined) continue;
        await store.v1.insertMetamessage({ ...meta, id: ctx.newId(), sessionId: clone.id, sessionV1Id: clone.v1Id, messageId, createdAt: now });
      }
    }
    return { user, session: clone };
  });
}
