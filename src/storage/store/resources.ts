import type { Created, FieldChanges, JsonObject, ListQuery, MembershipRecord, MessageRecord, MessageSearch, MessageWriteTarget, NewRow, Page, PeerKindFilter, PeerRecord, SeqCandidate, SessionListQuery, SessionRecord, WebhookEndpointRecord, WorkspaceRecord } from './records.js';

/* The stores of the resources: workspaces, peers, sessions, messages, webhook endpoints, scopes. */

/** Workspaces (the `workspaces` table). */
export interface WorkspaceStore {
  find(id: string): Promise<WorkspaceRecord | undefined>;
  /**
   * As `find`, with the workspace's row locked until the transaction ends (PostgreSQL; SQLite's
   * writers take turns anyway): a check of what the workspace holds (a limit) stays true until
   * the change it allows commits.
   */
  findForWrite(id: string): Promise<WorkspaceRecord | undefined>;
  createIfAbsent(row: NewRow, now: Date): Promise<Created<WorkspaceRecord>>;
  update(id: string, changes: FieldChanges): Promise<WorkspaceRecord | undefined>;
  list(query: ListQuery): Promise<Page<WorkspaceRecord>>;
  /**
   * Deletes the workspace and everything in it. With `yieldLocks` (PostgreSQL), a lock the
   * delete waits for briefly ends its transaction as a conflict, run again, so that writers of
   * the workspace go first instead of closing a cycle with it (SqlWorkspaceStore.delete).
   */
  delete(id: string, options?: { yieldLocks?: boolean }): Promise<boolean>;
  countActiveSessions(workspaceId: string): Promise<number>;
  /** The workspace's kept counts (a few rows read, whatever its size); undefined: no such workspace. */
  counts(id: string): Promise<WorkspaceCounts | undefined>;
  /** Adds model calls and tokens to their hours' rows; rows of a workspace that no longer exists are dropped. */
  addModelUsage(rows: readonly ModelUsageRow[]): Promise<void>;
  /** The workspace's model calls and tokens from `sinceHour` (hours since 1970, UTC) on, per module and model. */
  modelUsage(workspaceId: string, sinceHour: number): Promise<ModelUsageTotal[]>;
  /** Deletes up to `limit` model usage rows of hours before `before`'s; how many. */
  purgeModelUsage(before: Date, limit: number): Promise<number>;
}

/** What a workspace holds, from the counts kept as it is written. */
export interface WorkspaceCounts {
  /** Ordinary peers (scopes apart). */
  peers: number;
  /** Active sessions. */
  sessions: number;
  messages: number;
  /** Current conclusions (not deleted, not superseded). */
  conclusions: number;
}

/** Model calls and tokens of one module and model. */
export interface ModelUsageTotal {
  module: string;
  model: string;
  /** Attempts, each retry counted (as at /metrics). */
  calls: number;
  failedCalls: number;
  /** As the provider counted them, of the calls that succeeded. */
  inputTokens: number;
  outputTokens: number;
}

/** Model usage of one workspace, module, model and hour, to be added to what is kept. */
export interface ModelUsageRow extends ModelUsageTotal {
  workspaceId: string;
  /** Hours since 1970, UTC. */
  hour: number;
}

/** Peers of a workspace. */
export interface PeerStore {
  find(workspaceId: string, id: string): Promise<PeerRecord | undefined>;
  createIfAbsent(workspaceId: string, row: NewRow, now: Date): Promise<Created<PeerRecord>>;
  /** Creates the peers that do not exist yet (empty metadata and configuration). */
  ensure(workspaceId: string, ids: string[], now: Date): Promise<void>;
  update(workspaceId: string, id: string, changes: FieldChanges): Promise<PeerRecord | undefined>;
  /** Ordinary peers unless `kind` says otherwise. */
  list(workspaceId: string, query: ListQuery, kind?: PeerKindFilter): Promise<Page<PeerRecord>>;
  /**
   * Creates the peer behind a scope (kind 'scope') unless a peer of that id exists; returns the
   * peer of that id either way (the caller tells a scope from a squatter by its kind).
   */
  createScopeIfAbsent(workspaceId: string, row: NewRow, now: Date): Promise<Created<PeerRecord>>;
  /** The ids among `ids` that are scopes. */
  scopesAmong(workspaceId: string, ids: readonly string[]): Promise<Set<string>>;
  /**
   * A token that changes whenever a peer of the workspace changes, and differs between a
   * deleted workspace and a new one of the same id (undefined: no such workspace).
   */
  version(workspaceId: string): Promise<string | undefined>;
  /**
   * Those of `ids` that are peers not being deleted, kept until the transaction ends (FOR KEY
   * SHARE on PostgreSQL: a peer's deletion mark waits for it). Background writers call it before
   * writing for those peers, after the session's row and before count rows (the lock order).
   */
  keepLivePeers(workspaceId: string, ids: readonly string[]): Promise<Set<string>>;
}

/** Sessions of a workspace and their members. */
export interface SessionStore {
  find(workspaceId: string, id: string): Promise<SessionRecord | undefined>;
  /**
   * `find` for a transaction about to write to the session: its row stays locked until the
   * transaction ends, so a delete committed meanwhile is seen (it is then inactive) and writers
   * of one session take its row first (docs/decisions/0018-concurrent-writers-postgres.md).
   */
  findForWrite(workspaceId: string, id: string): Promise<SessionRecord | undefined>;
  /**
   * `findForWrite` for a message write, with what it reads next (the session's message count,
   * its workspace's configuration, webhook endpoints and pending jobs of `waitingKind`) in the
   * same statement: every statement of a write is a round trip while its session's row is held.
   */
  findForMessages(workspaceId: string, id: string, waitingKind: string): Promise<MessageWriteTarget | undefined>;
  /**
   * `find` for a transaction that writes rows belonging to the session but not the session's own
   * row (the deriver's and the summarizer's results): the row cannot be deleted until the
   * transaction ends, and neither waits for nor holds back the session's writers (`FOR KEY
   * SHARE` on PostgreSQL; docs/decisions/0019-background-writers.md).
   */
  findAndKeep(workspaceId: string, id: string): Promise<SessionRecord | undefined>;
  /** A session created by another transaction meanwhile is returned locked, as by `findForWrite`. */
  createIfAbsent(workspaceId: string, row: NewRow, now: Date): Promise<Created<SessionRecord>>;
  update(workspaceId: string, id: string, changes: FieldChanges): Promise<SessionRecord | undefined>;
  /** Active sessions only. */
  list(workspaceId: string, query: SessionListQuery): Promise<Page<SessionRecord>>;
  /** Sessions with a membership row for the peer, left and inactive ones included. */
  ofPeer(workspaceId: string, peerId: string, query: SessionListQuery): Promise<Page<SessionRecord>>;
  /**
   * A token that changes whenever `ofPeer` could answer differently for this peer (one of its
   * memberships added or removed, one of its sessions changed or removed), and differs between
   * a deleted peer or workspace and a new one of the same id (undefined: no such peer).
   */
  ofPeerVersion(workspaceId: string, peerId: string): Promise<string | undefined>;
  deactivate(workspaceId: string, id: string): Promise<boolean>;
  /**
   * Deletes up to `limit` of an inactive session's messages, then of its conclusions: how many
   * went (0 once none are left, or when the session is gone or active again). Lets a big
   * session be purged in short transactions before `purgeInactive` removes the rest.
   */
  purgeInactiveBatch(workspaceId: string, id: string, limit: number): Promise<number>;
  /** Removes an inactive session with everything in it; false when it is gone or active again. */
  purgeInactive(workspaceId: string, id: string): Promise<boolean>;

  /** The session's members, past and present, each with its peer's kind and own configuration. */
  memberships(workspaceId: string, sessionId: string): Promise<MembershipRecord[]>;
  findMembership(workspaceId: string, sessionId: string, peerId: string): Promise<MembershipRecord | undefined>;
  /** Inserts or overwrites membership rows (configuration, joined_at, left_at as given). */
  saveMemberships(workspaceId: string, sessionId: string, rows: MembershipRecord[]): Promise<void>;
  /** Marks active members as left; `peerIds` undefined means every active member. */
  markMembersLeft(workspaceId: string, sessionId: string, peerIds: string[] | undefined, now: Date): Promise<void>;
  /**
   * The active sessions the peer is an active member of, oldest membership first (joined_at,
   * then the session's insertion order); `reverse` newest first.
   */
  activeOfMember(workspaceId: string, peerId: string, page: number, size: number, reverse: boolean): Promise<Page<SessionRecord>>;
  /**
   * Ids of every session the peer has a membership row in (left and inactive ones included), in
   * membership order, at most `cap` (the caller asks one more than it allows to tell an excess).
   */
  sessionIdsOfPeer(workspaceId: string, peerId: string, cap: number): Promise<string[]>;
  /** Of these sessions, the ids of those that exist and are active. */
  activeAmong(workspaceId: string, ids: readonly string[]): Promise<Set<string>>;
  /** Peers that are active members (scopes left out), in storage order. */
  activeMemberPeers(workspaceId: string, sessionId: string, page: number, size: number): Promise<Page<PeerRecord>>;
  isActiveMember(workspaceId: string, sessionId: string, peerId: string): Promise<boolean>;
}

/** Where a count of messages looks: a workspace, or its session, or its sender, or both. */
export interface MessageScope {
  workspaceId: string;
  sessionId?: string;
  peerId?: string;
}

/** A message list: `peerPerspective` keeps the messages that peer could see. */
export interface MessageListQuery extends ListQuery {
  peerPerspective?: string;
}

/** Messages of sessions, and their full-text index. */
export interface MessageStore {
  /** Stores the messages in the order given; returns each one's pk (its place in the store's order), in that order. */
  insert(rows: MessageRecord[]): Promise<number[]>;
  /** A session's messages in insertion order. */
  list(workspaceId: string, sessionId: string, query: MessageListQuery): Promise<Page<MessageRecord>>;
  /**
   * A token that changes whenever a message of the session is added, changed or removed, and
   * differs between a deleted session and a new one of the same id (undefined: no such session).
   */
  version(workspaceId: string, sessionId: string): Promise<string | undefined>;
  find(workspaceId: string, sessionId: string, id: string): Promise<MessageRecord | undefined>;
  updateMetadata(workspaceId: string, sessionId: string, id: string, metadata: JsonObject): Promise<MessageRecord | undefined>;
  inSession(workspaceId: string, sessionId: string, messageId: string): Promise<boolean>;
  /** Copies messages (up to and including `untilMessageId`'s position) between sessions. */
  copy(workspaceId: string, fromSessionId: string, toSessionId: string, untilMessageId: string | undefined, now: Date, newId: () => string): Promise<void>;
  /** Messages of the scope holding every term, newest first, at most `search.candidates`. */
  searchCandidates(search: MessageSearch): Promise<SeqCandidate[]>;
  /** The same newest matches as searchCandidates, as their places in write order (seq) only. */
  searchMatches(search: MessageSearch): Promise<number[]>;
  /** How many messages the scope holds, counted up to `cap`. */
  countInScope(scope: MessageScope, cap: number): Promise<number>;
  /**
   * Which of these messages lie in the scope and pass the filter and the peer's perspective
   * (the vector ranking of a hybrid search, narrowed as the full-text one is).
   */
  filterIds(search: Omit<MessageSearch, 'terms' | 'candidates'>, ids: readonly string[]): Promise<Set<string>>;
  /**
   * The id and text of the workspace's messages at these places in write order (searchMatches'
   * seqs), in no particular order: read by row, not through the id index.
   */
  searchContents(workspaceId: string, seqs: readonly number[]): Promise<SeqCandidate[]>;
  /** The workspace's messages with these ids, in no particular order. */
  byIds(workspaceId: string, ids: readonly string[]): Promise<MessageRecord[]>;
  /** The workspace's messages at these places in write order (seqs), in no particular order: read by row. */
  bySeqs(workspaceId: string, seqs: readonly number[]): Promise<MessageRecord[]>;
  /** The session's newest messages, newest first, `limit` at a time before `before` (a seq). */
  recent(workspaceId: string, sessionId: string, limit: number, before?: number): Promise<(MessageRecord & { seq: number })[]>;
}

/** Webhook endpoints of a workspace. */
export interface WebhookStore {
  count(workspaceId: string): Promise<number>;
  /** Ids of the workspace's endpoints, oldest first (the order events are queued for them). */
  ids(workspaceId: string): Promise<string[]>;
  findByUrl(workspaceId: string, url: string): Promise<WebhookEndpointRecord | undefined>;
  find(id: string): Promise<WebhookEndpointRecord | undefined>;
  /** undefined when the workspace has an endpoint with this URL already. */
  insert(record: WebhookEndpointRecord): Promise<WebhookEndpointRecord | undefined>;
  list(workspaceId: string, page: number, size: number): Promise<Page<WebhookEndpointRecord>>;
  delete(workspaceId: string, id: string): Promise<boolean>;
}

/** Where a scope's copy of one session stands (GET .../scopes/{x}/status). */
export interface ScopeBackfillRecord {
  sessionId: string;
  state: 'pending' | 'completed' | 'failed';
  updatedAt: Date;
  /** Set once completed. */
  docsCopied: number | null;
}

/** The backfill states of scopes (table scope_backfills). */
export interface ScopeStore {
  /** The scope's entries, in session id order. */
  backfills(workspaceId: string, scopePeerId: string): Promise<ScopeBackfillRecord[]>;
  /** Inserts or replaces the entry of one session. */
  saveBackfill(workspaceId: string, scopePeerId: string, record: ScopeBackfillRecord): Promise<void>;
  /** Removes the entry of one session (a removal starts it afresh). */
  deleteBackfill(workspaceId: string, scopePeerId: string, sessionId: string): Promise<void>;
}
