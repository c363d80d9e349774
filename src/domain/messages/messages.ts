import type { JsonObject, MessageRecord, Page } from '../../storage/store.js';
import { messageFilter, type ListRequest } from '../filters/filters.js';
import { inTransaction, type DomainContext } from '../context.js';
import { notFound } from '../errors.js';
import { webhookEventJobs } from '../follow-ups.js';
import { DREAM_AUTO } from '../job-kinds.js';
import { queueReasoning } from '../scheduling/queue-reasoning.js';
import { countTokensOfEach } from '../text/token-count.js';

export interface MessageInput {
  peerId: string;
  content: string;
  metadata?: JsonObject;
  createdAt?: Date;
  /** The message's own configuration (only `reasoning`), most specific of the levels. */
  configuration?: JsonObject | null;
}

/**
 * Creates a batch of messages in request order, all-or-nothing (contract §7.4). The session,
 * its workspace and the sender peers are created when missing; each sender becomes a member
 * (new and returning members with an empty config, active members keep theirs). A deleted
 * (inactive) session is a 404.
 */
export async function createMessages(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  inputs: MessageInput[],
): Promise<MessageRecord[]> {
  // counted before the transaction opens, a slice at a time (token-count.ts)
  const tokenCounts = await countTokensOfEach(inputs.map((input) => input.content));
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    // locked first: a delete committed while this request waited is seen, and the session's row
    // comes before the workspace's and the senders' rows, as in the session's delete; with it
    // what the write reads of the session and its workspace (undefined: a new session, read apart)
    // The members are asked for in the same breath: on PostgreSQL the two statements go out
    // together (one wait) and the members' read starts once the lock is held, so it sees what
    // the request it waited for committed. A session just created is read again.
    const [target, membersAsFound] = await Promise.all([
      store.sessions.findForMessages(workspaceId, sessionId, DREAM_AUTO),
      store.sessions.memberships(workspaceId, sessionId),
    ]);
    let session = target?.session;
    if (session === undefined) {
      await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
      session = (await store.sessions.createIfAbsent(workspaceId, { id: sessionId, metadata: {}, configuration: {} }, now)).record;
    }
    if (!session.isActive) throw notFound(`Session ${sessionId} not found in workspace ${workspaceId}`);

    const senders = [...new Set(inputs.map((m) => m.peerId))];
    const memberships = target === undefined ? await store.sessions.memberships(workspaceId, sessionId) : membersAsFound;
    const members = new Map(memberships.map((m) => [m.peerId, m]));
    // a member's peer is there and not being deleted (memberships reads only those): the other
    // senders' peers are made sure of
    await store.peers.ensure(
      workspaceId,
      senders.filter((peerId) => !members.has(peerId)),
      now,
    );
    const joining = senders.filter((peerId) => members.get(peerId)?.leftAt !== null);
    await store.sessions.saveMemberships(
      workspaceId,
      sessionId,
      joining.map((peerId) => ({ peerId, configuration: { observe_me: null, observe_others: null }, joinedAt: now, leftAt: null })),
    );

    const records: MessageRecord[] = inputs.map((input, index) => ({
      id: ctx.newId(),
      workspaceId,
      sessionId,
      peerId: input.peerId,
      content: input.content,
      metadata: input.metadata ?? {},
      tokenCount: tokenCounts[index],
      createdAt: input.createdAt ?? now,
    }));
    const countBefore = ctx.reasoning === undefined ? 0 : (target?.messageCount ?? (await store.reasoning.sessionMessageCount(workspaceId, sessionId)));
    const pks = await store.messages.insert(records);
    const events = records.map((m) => ({
      type: 'message.created' as const,
      data: { workspace_id: workspaceId, session_id: sessionId, message_id: m.id, peer_id: m.peerId },
    }));
    // the reasoning's new jobs and the deliveries go in one statement
    const deliveries = webhookEventJobs(ctx, workspaceId, events, target?.webhookEndpointIds ?? (await store.webhooks.ids(workspaceId)), now);
    await queueReasoning(
      ctx,
      session,
      records.map((record, index) => ({ record, pk: pks[index], configuration: inputs[index].configuration ?? undefined })),
      countBefore,
      now,
      {
        workspaceConfiguration: target?.workspaceConfiguration,
        // the members as read, unless a sender joined since
        members: joining.length === 0 ? memberships : undefined,
        waitingDreams: target === undefined ? undefined : new Set(target.waitingKeys),
        jobs: deliveries,
      },
    );
    return records;
  });
}

/** Changes whenever a message of the session does; undefined when the session does not exist. */
export function messagesVersion(ctx: DomainContext, workspaceId: string, sessionId: string): Promise<string | undefined> {
  return ctx.store.messages.version(workspaceId, sessionId);
}

/** A session's messages in insertion order (no session check: unknown is an empty page). */
export function listMessages(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  query: ListRequest,
): Promise<Page<MessageRecord>> {
  // contract §7.4: `peer_perspective` is not a column but keeps what that peer could have seen
  let filters = query.filters;
  let peerPerspective: string | undefined;
  if (filters !== null && typeof filters === 'object' && !Array.isArray(filters) && 'peer_perspective' in filters) {
    const { peer_perspective: perspective, ...rest } = filters as JsonObject;
    if (typeof perspective === 'string') peerPerspective = perspective;
    filters = rest;
  }
  const filter = messageFilter(ctx.store, filters, query.rules);
  return ctx.store.messages.list(workspaceId, sessionId, { filter, page: query.page, size: query.size, reverse: query.reverse, peerPerspective });
}

export async function getMessage(ctx: DomainContext, workspaceId: string, sessionId: string, messageId: string): Promise<MessageRecord> {
  const message = await ctx.store.messages.find(workspaceId, sessionId, messageId);
  if (message === undefined) throw notFound(`Message with ID ${messageId} not found`);
  return message;
}

/** Non-null metadata replaces the stored object; null or absent changes nothing. */
export async function updateMessage(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  messageId: string,
  metadata: JsonObject | undefined,
): Promise<MessageRecord> {
  const message =
    metadata === undefined
      ? await ctx.store.messages.find(workspaceId, sessionId, messageId)
      : await ctx.store.messages.updateMetadata(workspaceId, sessionId, messageId, metadata);
  if (message === undefined) throw notFound('Message not found');
  return message;
}
