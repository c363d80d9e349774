/**
 * The storage interface: everything the domain knows about persistence. Records use
 * camelCase and `Date`; the SQL store translates to each dialect's columns.
 */
export type JsonObject = Record<string, unknown>;

export interface WorkspaceRecord {
  id: string;
  metadata: JsonObject;
  configuration: JsonObject;
  createdAt: Date;
}

export interface PeerRecord {
  id: string;
  workspaceId: string;
  metadata: JsonObject;
  configuration: JsonObject;
  createdAt: Date;
}

export interface SessionRecord {
  id: string;
  workspaceId: string;
  isActive: boolean;
  metadata: JsonObject;
  configuration: JsonObject;
  createdAt: Date;
}

export interface MembershipRecord {
  peerId: string;
  configuration: JsonObject;
  joinedAt: Date;
  /** null while the peer is an active member. */
  leftAt: Date | null;
}

export interface WebhookEndpointRecord {
  id: string;
  workspaceId: string;
  url: string;
  createdAt: Date;
}

export interface MessageRecord {
  id: string;
  workspaceId: string;
  sessionId: string;
  peerId: string;
  content: string;
  metadata: JsonObject;
  tokenCount: number;
  createdAt: Date;
}

export interface MessageSearch {
  workspaceId: string;
  sessionId?: string;
  /** Sender of the message. */
  peerId?: string;
  /** Words to find; every one must occur. */
  terms: string[];
  filters: unknown;
  peerPerspective?: string;
  limit: number;
  generation: 'v2' | 'v3';
}

export interface Page<T> {
  items: T[];
  /** Count of all matching rows, not just this page. */
  total: number;
}

/** A list request after validation: offset paging over an ordered query. */
export interface ListQuery {
  /** The raw `filters` object from the request (null: none). */
  filters: unknown;
  page: number;
  size: number;
  reverse: boolean;
  /** v2 filters differ slightly (contract §9.1). */
  generation: 'v2' | 'v3';
}

export interface NewRow {
  id: string;
  metadata: JsonObject;
  configuration: JsonObject;
}

export interface Created<T> {
  record: T;
  created: boolean;
}

export interface FieldChanges {
  metadata?: JsonObject;
  configuration?: JsonObject;
}

export interface Store {
  readonly dialect: 'sqlite' | 'postgres';
  /** Runs `fn` in one transaction with a store bound to it. */
  transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T>;

  findWorkspace(id: string): Promise<WorkspaceRecord | undefined>;
  createWorkspaceIfAbsent(row: NewRow, now: Date): Promise<Created<WorkspaceRecord>>;
  updateWorkspace(id: string, changes: FieldChanges): Promise<WorkspaceRecord | undefined>;
  listWorkspaces(query: ListQuery): Promise<Page<WorkspaceRecord>>;
  deleteWorkspace(id: string): Promise<boolean>;
  countActiveSessions(workspaceId: string): Promise<number>;

  findPeer(workspaceId: string, id: string): Promise<PeerRecord | undefined>;
  createPeerIfAbsent(workspaceId: string, row: NewRow, now: Date): Promise<Created<PeerRecord>>;
  /** Creates the peers that do not exist yet (empty metadata and configuration). */
  ensurePeers(workspaceId: string, ids: string[], now: Date): Promise<void>;
  updatePeer(workspaceId: string, id: string, changes: FieldChanges): Promise<PeerRecord | undefined>;
  listPeers(workspaceId: string, query: ListQuery): Promise<Page<PeerRecord>>;
  /** Sessions with a membership row for the peer, left and inactive ones included. */
  listSessionsOfPeer(workspaceId: string, peerId: string, query: ListQuery): Promise<Page<SessionRecord>>;

  findSession(workspaceId: string, id: string): Promise<SessionRecord | undefined>;
  createSessionIfAbsent(workspaceId: string, row: NewRow, now: Date): Promise<Created<SessionRecord>>;
  updateSession(workspaceId: string, id: string, changes: FieldChanges): Promise<SessionRecord | undefined>;
  /** Active sessions only. */
  listSessions(workspaceId: string, query: ListQuery): Promise<Page<SessionRecord>>;
  deactivateSession(workspaceId: string, id: string): Promise<boolean>;

  listMemberships(workspaceId: string, sessionId: string): Promise<MembershipRecord[]>;
  findMembership(workspaceId: string, sessionId: string, peerId: string): Promise<MembershipRecord | undefined>;
  /** Inserts or overwrites membership rows (configuration, joined_at, left_at as given). */
  saveMemberships(workspaceId: string, sessionId: string, rows: MembershipRecord[]): Promise<void>;
  /** Marks active members as left; `peerIds` undefined means every active member. */
  markMembersLeft(workspaceId: string, sessionId: string, peerIds: string[] | undefined, now: Date): Promise<void>;
  /** Peers that are active members, in storage order. */
  listActiveMemberPeers(workspaceId: string, sessionId: string, page: number, size: number): Promise<Page<PeerRecord>>;
  isActiveMember(workspaceId: string, sessionId: string, peerId: string): Promise<boolean>;
  /** Copies messages (up to and including `untilMessageId`'s position) between sessions. */
  copyMessages(workspaceId: string, fromSessionId: string, toSessionId: string, untilMessageId: string | undefined, now: Date, newId: () => string): Promise<void>;
  messageInSession(workspaceId: string, sessionId: string, messageId: string): Promise<boolean>;

  // messages
  insertMessages(rows: MessageRecord[]): Promise<void>;
  /** A session's messages in insertion order; `peerPerspective` keeps those the peer could see. */
  listMessages(workspaceId: string, sessionId: string, query: ListQuery & { peerPerspective?: string }): Promise<Page<MessageRecord>>;
  findMessage(workspaceId: string, sessionId: string, id: string): Promise<MessageRecord | undefined>;
  updateMessageMetadata(workspaceId: string, sessionId: string, id: string, metadata: JsonObject): Promise<MessageRecord | undefined>;
  /** Full-text search over message content, best match first (all `terms` must occur). */
  searchMessages(search: MessageSearch): Promise<MessageRecord[]>;
  /** The session's newest messages, newest first, `limit` at a time before `beforePk`. */
  recentMessages(workspaceId: string, sessionId: string, limit: number, before?: number): Promise<(MessageRecord & { seq: number })[]>;

  countWebhookEndpoints(workspaceId: string): Promise<number>;
  findWebhookEndpointByUrl(workspaceId: string, url: string): Promise<WebhookEndpointRecord | undefined>;
  insertWebhookEndpoint(record: WebhookEndpointRecord): Promise<WebhookEndpointRecord | undefined>;
  listWebhookEndpoints(workspaceId: string, page: number, size: number): Promise<Page<WebhookEndpointRecord>>;
  deleteWebhookEndpoint(workspaceId: string, id: string): Promise<boolean>;
}

export { FilterError } from './sql/compile-filter.js';
