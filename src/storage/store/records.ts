import type { FilterNode } from '../filter.js';

/* The records of the resources (workspaces, peers, sessions, memberships, messages, webhooks) and the shapes of lists. */

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
  /** 'scope' for the peer behind a scope (never shown on the wire); absent for ordinary peers. */
  kind?: 'scope';
}

/** Which peers a peer list holds: ordinary ones (the default), scopes only, or both. */
export type PeerKindFilter = 'peers' | 'scopes' | 'all';

export interface SessionRecord {
  id: string;
  workspaceId: string;
  isActive: boolean;
  metadata: JsonObject;
  configuration: JsonObject;
  createdAt: Date;
}

/** What a message write reads first (SessionStore.findForMessages), in one statement. */
export interface MessageWriteTarget {
  /** Locked as by `findForWrite`. */
  session: SessionRecord;
  /** The session's messages so far: no other writer adds any while its row is locked. */
  messageCount: number;
  workspaceConfiguration: JsonObject;
  /** The workspace's webhook endpoints, oldest first (as `WebhookStore.ids`). */
  webhookEndpointIds: string[];
  /** The queue keys of the workspace's pending jobs of the kind asked for (the automatic dreams a write postpones). */
  waitingKeys: string[];
}

export interface MembershipRecord {
  peerId: string;
  configuration: JsonObject;
  joinedAt: Date;
  /** null while the peer is an active member. */
  leftAt: Date | null;
  /** The member is a scope (read from the peer; ignored when saving). */
  isScope?: boolean;
  /** The peer's own configuration (read from the peer; ignored when saving). */
  peerConfiguration?: JsonObject;
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
  /** Words to find; every one must occur (the index stems them: "groups" finds "group"). */
  terms: string[];
  /** Message filters, parsed (null: none). */
  filter: FilterNode | null;
  /**
   * The sessions `filter` confines the search to (its top-level `session_id` condition), which
   * the full-text index can narrow to with the words; the filter still decides.
   */
  withinSessions?: readonly string[];
  /** `filter` says nothing but `withinSessions` (a top-level `session_id` condition alone). */
  filterIsWithinSessions?: boolean;
  peerPerspective?: string;
  /** Most candidates to return. */
  candidates: number;
}

/** A message that matches a search, before ranking. */
export interface SearchCandidate {
  id: string;
  content: string;
}

/** A message read by its place in write order (`seq`, higher is newer): its id and text. */
export interface SeqCandidate extends SearchCandidate {
  seq: number;
}

export interface Page<T> {
  items: T[];
  /** Count of all matching rows, not just this page. */
  total: number;
}

/** A list request after validation: offset paging over an ordered query. */
export interface ListQuery {
  /** The parsed filters (null: none). */
  filter: FilterNode | null;
  page: number;
  size: number;
  reverse: boolean;
  /** Conclusions: superseded ones too (include_superseded); other lists ignore it. */
  includeSuperseded?: boolean;
}

/**
 * How a list of sessions is ordered: by creation time alone (sessions created in one
 * microsecond come in no set order), or by creation time and then insertion order.
 */
export type SessionOrder = 'created' | 'created-then-insertion';

export interface SessionListQuery extends ListQuery {
  order: SessionOrder;
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
