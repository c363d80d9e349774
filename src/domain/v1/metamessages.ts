import type { JsonObject, Page, Store, V1MetamessageChanges, V1MetamessageRecord } from '../../storage/store.js';
import { v1ListQuery, type V1ListRequest } from '../filters/filters.js';
import { inTransaction, type DomainContext } from '../context.js';
import { invalidInput, notFound } from '../errors.js';
import { cannotName, emptyPage, findUserOfApp } from './scope.js';

/**
 * v1 metamessages (seed parts 2 and 4.1, contract-v1 §1): notes about a user, optionally linked
 * to one of the user's sessions and a message in it. `label` is the stored value; the wire also
 * calls it `metamessage_type`.
 *
 * A metamessage links only to a session of its own user and to a message of that session; a
 * session of another user, or a session that does not exist, is a 404 on create and on update
 * (the reference accepts another user's session on update and answers 500 for a missing one).
 */

export interface MetamessageInput {
  label: string;
  content: string;
  /** v1 ids; null: no link. */
  sessionId: string | null;
  messageId: string | null;
  metadata: JsonObject;
}

/** Update body after validation: undefined means "leave unchanged" (absent or null, seed 4.1). */
export interface MetamessageUpdate {
  sessionId?: string;
  messageId?: string;
  label?: string;
  metadata?: JsonObject;
}

const CANNOT_LINK_MESSAGE = 'Cannot specify message_id without session_id';
const SESSION_NOT_FOUND = 'Session not found or does not belong to user';
const metamessageNotFound = (id: string) => notFound(`Metamessage with ID ${id} not found`);

/** The user's session with this v1 id (the user is or was a member), or undefined. */
async function sessionOfUser(store: Store, workspaceId: string, peerId: string, sessionV1Id: string) {
  return cannotName(sessionV1Id) ? undefined : store.v1.findSession(workspaceId, peerId, sessionV1Id);
}

async function messageInSession(store: Store, workspaceId: string, sessionId: string, messageId: string): Promise<boolean> {
  return !cannotName(messageId) && (await store.v1.findMessage(workspaceId, sessionId, messageId)) !== undefined;
}

/** contract-v1 §1.2, in its order: user, session, message, then a message without a session. */
export function createMetamessage(
  ctx: DomainContext,
  appId: string,
  userId: string,
  input: MetamessageInput,
): Promise<V1MetamessageRecord> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const user = await findUserOfApp(store, appId, userId);
    if (user === undefined) throw notFound(`User with ID '${userId}' not found`);
    let sessionId: string | null = null;
    if (input.sessionId !== null) {
      const session = await sessionOfUser(store, user.workspaceId, user.name, input.sessionId);
      if (session === undefined) throw notFound(SESSION_NOT_FOUND);
      if (input.messageId !== null && !(await messageInSession(store, user.workspaceId, session.id, input.messageId))) {
        throw notFound('Message not found or does not belong to session');
      }
      sessionId = session.id;
    } else if (input.messageId !== null) {
      throw invalidInput(CANNOT_LINK_MESSAGE);
    }
    const id = ctx.newId();
    await store.v1.insertMetamessage({
      id,
      workspaceId: user.workspaceId,
      peerId: user.name,
      appV1Id: user.appV1Id,
      userV1Id: user.v1Id,
      label: input.label,
      content: input.content,
      sessionId,
      sessionV1Id: input.sessionId,
      messageId: input.messageId,
      metadata: input.metadata,
      createdAt: ctx.now(),
    });
    const created = await store.v1.findMetamessage(user.workspaceId, user.name, id);
    if (created === undefined) throw new Error(`metamessage ${id} vanished after insert`);
    return created;
  });
}

/** Scoped by app and user: unknown app, unknown user and another user's metamessage are one 404. */
export async function getMetamessage(ctx: DomainContext, appId: string, userId: string, id: string): Promise<V1MetamessageRecord> {
  const user = await findUserOfApp(ctx.store, appId, userId);
  const metamessage = user && !cannotName(id) ? await ctx.store.v1.findMetamessage(user.workspaceId, user.name, id) : undefined;
  if (metamessage === undefined) throw metamessageNotFound(id);
  return metamessage;
}

/**
 * Seed 4.1: change a metamessage's metadata, type or relationships. Every field is optional and
 * null or absent leaves it unchanged (so a link cannot be cleared); `metadata` replaces the whole
 * object; `{}` is a no-op answering the current record. In order (contract-v1 §1.1):
 * 1. the metamessage, scoped by app and user -> 404 `Metamessage with ID {id} not found`;
 * 2. a `message_id` is checked in the effective session: the body's `session_id`, else the stored
 *    one, else 422 `Cannot specify message_id without session_id`; the session must be the user's
 *    and hold the message -> else 404 `Message not found or doesn't belong to session`;
 * 3. a `session_id` must name a session of the user -> else 404 `Session not found or does not
 *    belong to user` (Engram; the reference accepts any existing session and answers 500 for an
 *    unknown one);
 * 4. the non-null fields are applied together. A new `session_id` alone keeps the stored
 *    `message_id`, as the seed says absent fields stay unchanged.
 */
export function updateMetamessage(
  ctx: DomainContext,
  appId: string,
  userId: string,
  id: string,
  update: MetamessageUpdate,
): Promise<V1MetamessageRecord> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const user = await findUserOfApp(store, appId, userId);
    const current = user && !cannotName(id) ? await store.v1.findMetamessage(user.workspaceId, user.name, id) : undefined;
    if (user === undefined || current === undefined) throw metamessageNotFound(id);

    const changes: V1MetamessageChanges = { label: update.label, metadata: update.metadata };
    if (update.messageId !== undefined) {
      const effectiveSession = update.sessionId ?? current.sessionV1Id;
      if (effectiveSession === null) throw invalidInput(CANNOT_LINK_MESSAGE);
      const session = await sessionOfUser(store, user.workspaceId, user.name, effectiveSession);
      if (session === undefined || !(await messageInSession(store, user.workspaceId, session.id, update.messageId))) {
        throw notFound("Message not found or doesn't belong to session");
      }
      changes.messageId = update.messageId;
    }
    if (update.sessionId !== undefined) {
      const session = await sessionOfUser(store, user.workspaceId, user.name, update.sessionId);
      if (session === undefined) throw notFound(SESSION_NOT_FOUND);
      changes.sessionId = session.id;
    }
    await store.v1.updateMetamessage(current.id, changes);
    return (await store.v1.findMetamessage(user.workspaceId, user.name, id)) ?? current;
  });
}

/** Exact matches on label, session and message (each optional) and metadata containment. */
export async function listMetamessages(
  ctx: DomainContext,
  appId: string,
  userId: string,
  match: { label?: string; sessionId?: string; messageId?: string },
  query: V1ListRequest,
): Promise<Page<V1MetamessageRecord>> {
  const user = await findUserOfApp(ctx.store, appId, userId);
  if (user === undefined || cannotName(match.label, match.sessionId, match.messageId)) return emptyPage();
  return ctx.store.v1.listMetamessages(
    user.workspaceId,
    user.name,
    { label: match.label, sessionV1Id: match.sessionId, messageId: match.messageId },
    v1ListQuery(ctx.store, query),
  );
}
