import type { JsonObject, MessageRecord, Page } from '../../storage/store.js';
import { v1ListQuery, type V1ListRequest } from '../filters/filters.js';
import { inTransaction, type DomainContext } from '../context.js';
import { notFound } from '../errors.js';
import { emitWebhookEvents } from '../follow-ups.js';
import { countTokensOfEach } from '../text/token-count.js';
import { queueReasoning } from '../scheduling/queue-reasoning.js';
import { NEW_MEMBER_CONFIG, V1_ASSISTANT_PEER_ID, cannotName, emptyPage, findSessionOfUser, type V1SessionScope } from './scope.js';

/**
 * v1 messages (contract-v1 §2.4): rows of the one messages table. `is_user: true` is sent by the
 * user's peer, `false` by the workspace's assistant peer; read back, a message is the user's when
 * its sender is the user's peer, so a session written through v3 reads naturally from the point
 * of view of any member addressed as a v1 user.
 */

export interface V1MessageInput {
  content: string;
  isUser: boolean;
  metadata: JsonObject;
}

/** A message with the v1 scope it was read through (for `is_user`, `app_id`, `user_id`). */
export interface V1MessageView extends V1SessionScope {
  message: MessageRecord;
  isUser: boolean;
}

const SESSION_NOT_FOUND = 'Session not found or does not belong to user';

function view(scope: V1SessionScope, message: MessageRecord): V1MessageView {
  return { ...scope, message, isUser: message.peerId === scope.user.name };
}

/**
 * Creates the messages in request order, all with one `created_at`, and queues their
 * `message.created` webhook events. Inactive sessions are fine (§2.3).
 */
export async function createMessages(
  ctx: DomainContext,
  appId: string,
  userId: string,
  sessionId: string,
  inputs: V1MessageInput[],
): Promise<V1MessageView[]> {
  // counted before the transaction opens, a slice at a time (token-count.ts)
  const tokenCounts = await countTokensOfEach(inputs.map((input) => input.content));
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const scope = await findSessionOfUser(store, appId, userId, sessionId);
    if (scope === undefined) throw notFound(SESSION_NOT_FOUND);
    const { user, session } = scope;
    // the session's row locked first, before the workspace's and the senders' rows, as in
    // the v3 write and the session's delete (which would otherwise each wait for the other)
    if ((await store.sessions.findForWrite(session.workspaceId, session.id)) === undefined) throw notFound(SESSION_NOT_FOUND);
    const now = ctx.now();

    // Senders become active members, as a v3 write would make them (active members keep their config).
    const senders = [...new Set(inputs.map((input) => (input.isUser ? user.name : V1_ASSISTANT_PEER_ID)))];
    await store.peers.ensure(session.workspaceId, senders, now);
    const members = new Map((await store.sessions.memberships(session.workspaceId, session.id)).map((m) => [m.peerId, m]));
    await store.sessions.saveMemberships(
      session.workspaceId,
      session.id,
      senders
        .filter((peerId) => members.get(peerId)?.leftAt !== null)
        .map((peerId) => ({ peerId, configuration: NEW_MEMBER_CONFIG, joinedAt: now, leftAt: null })),
    );

    const records: MessageRecord[] = inputs.map((input, index) => ({
      id: ctx.newId(),
      workspaceId: session.workspaceId,
      sessionId: session.id,
      peerId: input.isUser ? user.name : V1_ASSISTANT_PEER_ID,
      content: input.content,
      metadata: input.metadata,
      // token_count: o200k_base tokens of the content, as v2/v3 messages count them
      tokenCount: tokenCounts[index],
      createdAt: now,
    }));
    const countBefore = ctx.reasoning === undefined ? 0 : await store.reasoning.sessionMessageCount(session.workspaceId, session.id);
    await store.messages.insert(records);
    // memory forms from v1 messages as from v2/v3 ones
    const sessionRecord = await store.sessions.find(session.workspaceId, session.id);
    if (sessionRecord !== undefined) await queueReasoning(ctx, sessionRecord, records.map((record) => ({ record })), countBefore, now);
    // the same `message.created` events as a v2/v3 write: webhook endpoints see every message
    await emitWebhookEvents(
      ctx,
      session.workspaceId,
      records.map((m) => ({
        type: 'message.created' as const,
        data: { workspace_id: m.workspaceId, session_id: m.sessionId, message_id: m.id, peer_id: m.peerId },
      })),
      now,
    );
    return records.map((record) => view(scope, record));
  });
}

/** Unknown app, user or session: an empty page (§2.4). */
export async function listMessages(
  ctx: DomainContext,
  appId: string,
  userId: string,
  sessionId: string,
  query: V1ListRequest,
): Promise<Page<V1MessageView>> {
  const scope = await findSessionOfUser(ctx.store, appId, userId, sessionId);
  if (scope === undefined) return emptyPage();
  const page = await ctx.store.v1.listMessages(scope.session.workspaceId, scope.session.id, v1ListQuery(ctx.store, query));
  return { items: page.items.map((message) => view(scope, message)), total: page.total };
}

export async function getMessage(
  ctx: DomainContext,
  appId: string,
  userId: string,
  sessionId: string,
  messageId: string,
): Promise<V1MessageView> {
  const scope = cannotName(messageId) ? undefined : await findSessionOfUser(ctx.store, appId, userId, sessionId);
  const message = scope && (await ctx.store.v1.findMessage(scope.session.workspaceId, scope.session.id, messageId));
  if (scope === undefined || message === undefined) throw notFound(`Message with ID ${messageId} not found`);
  return view(scope, message);
}

/** `metadata` replaces the stored object; the content never changes. */
export async function updateMessage(
  ctx: DomainContext,
  appId: string,
  userId: string,
  sessionId: string,
  messageId: string,
  metadata: JsonObject,
): Promise<V1MessageView> {
  const scope = cannotName(messageId) ? undefined : await findSessionOfUser(ctx.store, appId, userId, sessionId);
  const message = scope && (await ctx.store.messages.updateMetadata(scope.session.workspaceId, scope.session.id, messageId, metadata));
  if (scope === undefined || message === undefined) throw notFound('Message not found');
  return view(scope, message);
}
