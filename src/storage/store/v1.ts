import type { FilterNode } from '../filter.js';
import type { JsonObject, MessageRecord, Page } from './records.js';

/* The v1 generation's view of the same tables (contract-v1 §5). */

/** A workspace seen as a v1 app: `name` is the workspace id, `v1Id` its stable 21-character id. */
export interface V1AppRecord {
  v1Id: string;
  name: string;
  metadata: JsonObject;
  createdAt: Date;
}

/** A peer seen as a v1 user: `name` is the peer id. */
export interface V1UserRecord {
  v1Id: string;
  name: string;
  /** The app's (workspace's) v1 id and name. */
  appV1Id: string;
  workspaceId: string;
  metadata: JsonObject;
  createdAt: Date;
}

/** A session with its v1 id (equal to `id` for sessions created through v1). */
export interface V1SessionRecord {
  v1Id: string;
  id: string;
  workspaceId: string;
  isActive: boolean;
  metadata: JsonObject;
  createdAt: Date;
}

export interface V1MetamessageRecord {
  id: string;
  workspaceId: string;
  /** The owning user's peer. */
  peerId: string;
  appV1Id: string;
  userV1Id: string;
  label: string;
  content: string;
  /** The linked session's id and v1 id; null when unlinked. */
  sessionId: string | null;
  sessionV1Id: string | null;
  messageId: string | null;
  metadata: JsonObject;
  createdAt: Date;
}

export interface V1MetamessageChanges {
  label?: string;
  sessionId?: string;
  messageId?: string;
  metadata?: JsonObject;
}

/** A v1 list: metadata containment `filter` (contract-v1 §0.4, parsed), insertion order, offset paging. */
export interface V1ListQuery {
  filter: FilterNode | null;
  page: number;
  size: number;
  reverse: boolean;
}

/**
 * The v1 generation over the workspace tables. Lookups by v1 id take the ancestors' ids too,
 * so a real id under the wrong parent is not found.
 */
export interface V1Store {
  findApp(v1Id: string): Promise<V1AppRecord | undefined>;
  findAppByName(name: string): Promise<V1AppRecord | undefined>;
  /** undefined when the name (workspace id) is taken. */
  insertApp(v1Id: string, name: string, metadata: JsonObject, now: Date): Promise<V1AppRecord | undefined>;
  updateAppMetadata(name: string, metadata: JsonObject): Promise<void>;
  listApps(query: V1ListQuery): Promise<Page<V1AppRecord>>;

  findUser(appV1Id: string, userV1Id: string): Promise<V1UserRecord | undefined>;
  findUserByName(workspaceId: string, name: string): Promise<V1UserRecord | undefined>;
  /** undefined when the name (peer id) is taken in the workspace. */
  insertUser(workspaceId: string, v1Id: string, name: string, metadata: JsonObject, now: Date): Promise<V1UserRecord | undefined>;
  updateUserMetadata(workspaceId: string, name: string, metadata: JsonObject): Promise<void>;
  /** Peers of the workspace, except `hiddenPeerIds`. */
  listUsers(workspaceId: string, hiddenPeerIds: string[], query: V1ListQuery): Promise<Page<V1UserRecord>>;

  /** The session with this v1 id, when the peer has a membership row in it. */
  findSession(workspaceId: string, peerId: string, v1Id: string): Promise<V1SessionRecord | undefined>;
  /** Inserts a session whose id and v1 id are both `id`. */
  insertSession(workspaceId: string, id: string, metadata: JsonObject, configuration: JsonObject, now: Date): Promise<V1SessionRecord>;
  /** Sessions the peer has a membership row in; `activeOnly` drops inactive ones. */
  listSessions(workspaceId: string, peerId: string, activeOnly: boolean, query: V1ListQuery): Promise<Page<V1SessionRecord>>;
  updateSessionMetadata(workspaceId: string, sessionId: string, metadata: JsonObject): Promise<void>;

  findMessage(workspaceId: string, sessionId: string, id: string): Promise<MessageRecord | undefined>;
  listMessages(workspaceId: string, sessionId: string, query: V1ListQuery): Promise<Page<MessageRecord>>;
  /** The session's messages in order, up to and including `untilMessageId` when given. */
  messagesUpTo(workspaceId: string, sessionId: string, untilMessageId: string | undefined): Promise<MessageRecord[]>;

  insertMetamessage(record: V1MetamessageRecord): Promise<void>;
  findMetamessage(workspaceId: string, peerId: string, id: string): Promise<V1MetamessageRecord | undefined>;
  updateMetamessage(id: string, changes: V1MetamessageChanges): Promise<void>;
  listMetamessages(
    workspaceId: string,
    peerId: string,
    match: { label?: string; sessionV1Id?: string; messageId?: string },
    query: V1ListQuery,
  ): Promise<Page<V1MetamessageRecord>>;
  /** The peer's metamessages linked to the session, in order. */
  metamessagesOfSession(workspaceId: string, peerId: string, sessionId: string): Promise<V1MetamessageRecord[]>;
}
