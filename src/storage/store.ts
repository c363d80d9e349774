import type { FilterNode } from './filter.js';
import type { VectorIndex } from './vector-index.js';
import type { PortableStore } from './portable.js';

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

export interface MembershipRecord {
  peerId: string;
  configuration: JsonObject;
  joinedAt: Date;
  /** null while the peer is an active member. */
  leftAt: Date | null;
  /** The member is a scope (read from the peer; ignored when saving). */
  isScope?: boolean;
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

export interface NewJob {
  id: string;
  kind: string;
  workspaceId: string | null;
  /** Jobs with one key run one at a time, in the order they were enqueued. */
  queueKey: string;
  payload: JsonObject;
  maxAttempts: number;
  /** When it may run first (default: at once). */
  runAfter?: Date;
}

export interface JobRecord {
  id: string;
  kind: string;
  workspaceId: string | null;
  queueKey: string;
  payload: JsonObject;
  /** Attempts so far, this one included. */
  attempts: number;
  maxAttempts: number;
  createdAt: Date;
}

/** The states a workspace's jobs are listed by: `failed` is pending again after a failed attempt. */
export type JobListStatus = 'pending' | 'running' | 'failed' | 'dead';

/** A job as its workspace's list shows it: its state, last error and times. */
export interface JobListing extends JobRecord {
  status: 'pending' | 'running' | 'done' | 'dead';
  lastError: string | null;
  runAfter: Date;
  finishedAt: Date | null;
}

/** Work counted for the queue status: by state, with failed (dead-lettered) work apart from completed. */
export interface WorkCounts {
  completed: number;
  failed: number;
  inProgress: number;
  pending: number;
}

/** Which representation work units a count reads (queue status filters). */
export interface RepresentationScope {
  sessionId?: string;
  observerId?: string;
  senderId?: string;
}

/** A unit's representation items counted by state, for one set of observers. */
export interface RepresentationCounts extends WorkCounts {
  sessionId: string;
  observedId: string;
  observers: string[];
}

/** A message waiting for the deriver to form conclusions about its sender (reasoning.md R2). */
export interface NewRepresentationItem {
  workspaceId: string;
  sessionId: string;
  /** The sender: whom the conclusions are about. */
  observedId: string;
  messageId: string;
  tokens: number;
  /** Who forms the conclusions (each gets its own copy). */
  observers: string[];
  customInstructions: string | null;
}

export interface OpenRepresentationItem {
  pk: number;
  messageId: string;
  messagePk: number;
  peerId: string;
  content: string;
  messageCreatedAt: Date;
  tokens: number;
  observers: string[];
  customInstructions: string | null;
  /** When the item was queued (the age gate starts then). */
  queuedAt: Date;
}

/** A unit's open items: how many, their tokens, and when the oldest was queued. */
export interface UnitTotals {
  items: number;
  tokens: number;
  oldest: Date | undefined;
}

export type SummaryType = 'short' | 'long';

export interface SessionSummaryRecord {
  type: SummaryType;
  content: string;
  /** The last message the summary covers, and its number in the session (1-based). */
  messageId: string;
  messageSeq: number;
  tokenCount: number;
  createdAt: Date;
}

export interface ReasoningStore {
  /** Queues items; an item already queued (same message and observed peer) is left as it is. Returns how many were added. */
  addRepresentationItems(items: NewRepresentationItem[], now: Date): Promise<number>;
  openUnitTotals(workspaceId: string, sessionId: string, observedId: string): Promise<UnitTotals>;
  /** A unit's open items in message order, with their messages. */
  openItems(workspaceId: string, sessionId: string, observedId: string, limit: number): Promise<OpenRepresentationItem[]>;
  /** Open items of a workspace (or one session of it). */
  openItemCount(workspaceId: string, sessionId?: string): Promise<number>;
  /** The message just before the one with `messagePk` in its session. */
  messageBefore(workspaceId: string, sessionId: string, messagePk: number): Promise<(MessageRecord & { pk: number }) | undefined>;
  /**
   * Opens again the unit's items that were closed with an error (a dead-lettered batch, retried):
   * how many. Read through the unit's items, not the workspace's.
   */
  reopenFailedItems(workspaceId: string, sessionId: string, observedId: string): Promise<number>;
  /** Marks the items processed (with the error when it failed); returns how many were still open. */
  markItems(items: readonly { pk: number; messageId: string }[], now: Date, error: string | null): Promise<number>;
  sessionMessageCount(workspaceId: string, sessionId: string): Promise<number>;
  /** The `count` messages of the session up to and including `messageId`, oldest first. */
  messagesUpTo(workspaceId: string, sessionId: string, messageId: string, count: number): Promise<MessageRecord[]>;
  /** Messages after `afterPk` in storage order, for `engram derive`. */
  messagesAfter(scope: { workspaceId?: string; sessionId?: string }, afterPk: number, limit: number): Promise<(MessageRecord & { pk: number })[]>;
  /**
   * Live conclusions of one collection, level and session whose trimmed, lower-cased content is
   * one of `contents` (compared the same way): that key -> the conclusion's id.
   */
  liveConclusionsByContent(
    scope: { workspaceId: string; observerId: string; observedId: string; level: string; sessionId: string | null },
    contents: readonly string[],
  ): Promise<Map<string, string>>;
  /**
   * The workspace's representation items by session, observed peer and observers: processed
   * without error (completed) or with one (failed) in the hour of `finishedSince` or later, open
   * in a unit whose job is running under a live lease (in progress), other open ones (pending).
   * `scope` narrows them to one session, and to the units `observerId` is an observer of or
   * (when both are given) `senderId` is the observed peer of.
   */
  representationCounts(workspaceId: string, scope: RepresentationScope, now: Date, finishedSince: Date): Promise<RepresentationCounts[]>;
  /** Deletes up to `limit` of the processed items' counters of hours before `before`'s: how many. */
  purgeCounters(before: Date, limit: number): Promise<number>;
  summaries(workspaceId: string, sessionId: string): Promise<SessionSummaryRecord[]>;
  /** Stores a summary unless the stored one of its kind covers a later message. */
  saveSummary(workspaceId: string, sessionId: string, summary: SessionSummaryRecord): Promise<void>;
}

/** The durable work queue. */
export interface JobStore {
  enqueue(jobs: NewJob[], now: Date): Promise<void>;
  /**
   * Leases up to `limit` runnable jobs: pending and due, or running with an expired lease;
   * only of kind `kind` when it is given.
   */
  claim(limit: number, now: Date, leaseUntil: Date, kind?: string): Promise<JobRecord[]>;
  /**
   * Which of `kinds` have a job that may be claimable now (a pending one that is due, or a
   * running one whose lease ran out), in one statement: a worker claims only those kinds.
   */
  claimableKinds(kinds: readonly string[], now: Date): Promise<Set<string>>;
  /**
   * Leases the head of queue `queueKey` (its first open job) when it is of kind `kind` and
   * claimable now; undefined otherwise. The worker asks it in the transaction that completes the
   * job before it, so the next delivery to an endpoint starts without a round of claims.
   */
  claimHead(queueKey: string, kind: string, now: Date, leaseUntil: Date): Promise<JobRecord | undefined>;
  /**
   * Makes sure a pending job of `job.queueKey` runs by `runAfter`: brings the pending one
   * forward if it is due later, or queues `job` when none is pending (one running is not
   * enough: it may have read its work already).
   */
  schedule(job: NewJob, runAfter: Date, now: Date): Promise<void>;
  /** Moves a running job's lease to `until` (a worker still at work on it). */
  extendLease(id: string, until: Date): Promise<void>;
  complete(id: string, now: Date): Promise<void>;
  retry(id: string, runAfter: Date, error: string): Promise<void>;
  deadLetter(id: string, now: Date, error: string): Promise<void>;
  /** Gives a claimed job back (graceful stop) without counting the attempt. */
  release(id: string): Promise<void>;
  /** Deletes up to `limit` jobs done before `doneBefore` or dead-lettered before `deadBefore`, oldest first: how many. */
  purgeFinished(doneBefore: Date, deadBefore: Date, limit: number): Promise<number>;
  /** Deletes up to `limit` of the finished jobs' counters of hours before `before`'s: how many. */
  purgeCounters(before: Date, limit: number): Promise<number>;
  /**
   * Jobs of one kind in the workspace by queue key: done and dead (failed) in the hour of
   * `finishedSince` or later, from the queues' counters, which only the summary and dream kinds
   * keep (zero for other kinds), running under a live lease, pending (`dueOnly`: only those due
   * by `now`). `session`: only that session's queue of the kind (its summaries), read through
   * the session's counters and the queue's open jobs, not the workspace's.
   */
  countsByQueue(
    workspaceId: string,
    kind: string,
    now: Date,
    options: { finishedSince: Date; dueOnly?: boolean; session?: { id: string; queueKey: string } },
  ): Promise<(WorkCounts & { queueKey: string })[]>;
  /** The pending and running jobs of a queue key, in order. */
  openJobs(queueKey: string): Promise<{ id: string; kind: string; status: 'pending' | 'running'; runAfter: Date; payload: JsonObject }[]>;
  /** Sets the due time (and, when given, the kind) of the queue key's pending jobs of `kind`; returns how many. */
  reschedulePending(queueKey: string, kind: string, runAfter: Date, newKind?: string): Promise<number>;
  /** Pending and running jobs of a queue key (a running job counts itself). */
  openInQueue(queueKey: string): Promise<number>;
  /** Jobs of every workspace by status (pending, running, done, dead). */
  countByStatus(): Promise<Record<string, number>>;
  /** Open jobs of every workspace by kind and status (pending or running). */
  countOpenByKind(): Promise<{ kind: string; status: 'pending' | 'running'; count: number }[]>;
  /** One page of the workspace's jobs in `status`, newest first, and how many there are. */
  listOfWorkspace(workspaceId: string, status: JobListStatus, offset: number, limit: number): Promise<Page<JobListing>>;
  /**
   * Puts the workspace's dead job `id` back in its queue, due at `now`, with its attempts counted
   * from zero (its last error kept until an attempt ends); undefined when it has no such dead job.
   */
  reopenDead(workspaceId: string, id: string, now: Date): Promise<JobListing | undefined>;
}

/** What the store's database can take in a filter (the domain checks it while parsing). */
export interface FilterLimits {
  /** Longest LIKE pattern (v2 contains), in UTF-8 bytes. */
  likePatternBytes: number;
}

export interface Store {
  readonly dialect: 'sqlite' | 'postgres';
  readonly filterLimits: FilterLimits;
  readonly workspaces: WorkspaceStore;
  readonly peers: PeerStore;
  readonly sessions: SessionStore;
  readonly messages: MessageStore;
  readonly webhooks: WebhookStore;
  /** The work queue, bound to this store's connection or transaction. */
  readonly jobs: JobStore;
  /** The v1 generation's view of the same tables, bound to this connection or transaction. */
  readonly v1: V1Store;
  /** Conclusions and peer cards, bound to this connection or transaction. */
  readonly memory: MemoryStore;
  /** Vectors of conclusions and message chunks, bound to this connection or transaction. */
  readonly vectors: VectorIndex;
  /** The deriver's work items and session summaries, bound to this connection or transaction. */
  readonly reasoning: ReasoningStore;
  /** The backfill states of scopes' sessions, bound to this connection or transaction. */
  readonly scopes: ScopeStore;
  /** A peer's deletion and forgetting chosen conclusions, bound to this connection or transaction. */
  readonly erasure: ErasureStore;
  /** Whole rows for export and import (storage/portable.ts), bound to this connection or transaction. */
  readonly portable: PortableStore;
  /**
   * Calls `listener` whenever this process has queued jobs through this store, once they are
   * committed (so a worker woken by it can claim them). Returns what removes the listener.
   */
  onJobsQueued(listener: () => void): () => void;
  /** Runs `fn` in one transaction with a store bound to it. */
  transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T>;
  /**
   * Checks that the database answers and accepts writes (readiness); throws
   * StoreUnavailableError saying why when it does not.
   */
  checkAvailable(): Promise<void>;
  /**
   * Stays the same while nothing commits to the database, from any process; read without a
   * query. undefined when it cannot tell (PostgreSQL, an in-memory database, a commit under
   * way): then a cached result must be checked with a query.
   */
  changeToken(): string | undefined;
}

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
  insert(rows: MessageRecord[]): Promise<void>;
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

// ---------------------------------------------------------------- v1 generation (contract-v1 §5)

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

// ---------------------------------------------------------------- conclusions and peer cards

export type ConclusionLevel = 'explicit' | 'deductive' | 'inductive' | 'contradiction';

/** What an observer peer concluded about an observed peer (v2: an observation). */
export interface ConclusionRecord {
  id: string;
  workspaceId: string;
  observerId: string;
  observedId: string;
  sessionId: string | null;
  content: string;
  level: ConclusionLevel;
  /**
   * What it was drawn from: message ids for an explicit conclusion, conclusion ids for a derived
   * one; null when not recorded (conclusions stored through the API).
   */
  sourceIds: string[] | null;
  /**
   * Every session a derived conclusion's sources came from (a session allowlist shows it only
   * when it holds all of them); undefined or null for conclusions drawn from one session's messages.
   */
  sourceSessionIds?: string[] | null;
  /** Stored with it, not read back (a dream's deduction keeps its premises here); default {}. */
  metadata?: JsonObject;
  /** How many times it has been derived (1 when first stored; deduplication adds to it). */
  timesDerived: number;
  createdAt: Date;
  /** A scope's copy of another conclusion (a backfill): the id of the conclusion it copies. */
  copiedFrom?: string | null;
  /**
   * When the fact became true: the newest source message's time, or the creation time for
   * conclusions stored through the API. Undefined when stored: the creation time is taken.
   */
  validFrom?: Date;
  /** When a newer conclusion replaced it; null (or undefined on new records) while it is current. */
  supersededAt?: Date | null;
  /** The id of the conclusion that replaced it; null while it is current. */
  supersededBy?: string | null;
}

/** One supersession: `oldId` (a current conclusion) is replaced by `newId` (of the same collection). */
export interface Supersession {
  oldId: string;
  newId: string;
}

/** One observer's conclusions about one peer, optionally only those stored in some sessions. */
export interface ConclusionScope {
  workspaceId: string;
  observerId: string;
  observedId: string;
  /** Superseded conclusions too (include_superseded); default: current ones only. */
  includeSuperseded?: boolean;
  /** undefined: any session or none; otherwise only conclusions stored in one of these. */
  sessionIds?: string[];
}

/** One term's matches in a collection (conclusion-search.ts): a word of the index, or a substring. */
export interface ConclusionMatches extends ConclusionScope {
  /**
   * `word`: a word as the index holds it (matched by its stem); `substring`: text found inside the
   * content (folded), for scripts written without spaces (CJK).
   */
  term: { word: string } | { substring: string };
  /** Document filters (contract §5.1), parsed; null for none. */
  filter: FilterNode | null;
  /** How many of the newest matches are read. */
  limit: number;
}

/** A conclusion's text, by its row key: what the ranking reads of a candidate. */
export interface ConclusionCandidate {
  pk: number;
  content: string;
}

/** When a collection's last dream ended, and how many explicit conclusions it had then. */
export interface DreamState {
  lastDreamAt: Date;
  explicitAtLastDream: number;
}

/** Conclusions (soft-deleted rows are invisible to every read) and peer cards. */
export interface MemoryStore {
  insertConclusions(rows: ConclusionRecord[]): Promise<void>;
  /**
   * Takes the kept counts of the collections and levels of `rows` for this transaction, in one
   * order (PostgreSQL; SQLite's writers take turns): writers of conclusions into the same
   * collections then queue instead of deadlocking on the counts their inserts update.
   */
  lockConclusionCounts(rows: readonly Pick<ConclusionRecord, 'workspaceId' | 'observerId' | 'observedId' | 'level'>[]): Promise<void>;
  /** The workspace's conclusions, newest first (`reverse`: oldest first), Document filters applied. */
  listConclusions(workspaceId: string, query: ListQuery): Promise<Page<ConclusionRecord>>;
  /** Full-text ranked: best match first, newest first among equals (see `newestFirst`). */
  /** The row keys of a collection's newest live conclusions matching one term, newest first. */
  conclusionMatches(search: ConclusionMatches): Promise<number[]>;
  /** The texts of a collection's live conclusions passing `filter`, newest first (by row key), at most `limit`. */
  collectionContents(search: ConclusionScope & { filter: FilterNode | null; limit: number }): Promise<ConclusionCandidate[]>;
  /** The texts of live conclusions of the workspace by row key (any order; missing ones left out). */
  conclusionContents(workspaceId: string, pks: readonly number[], includeSuperseded?: boolean): Promise<ConclusionCandidate[]>;
  /** Live conclusions of the workspace by row key, in the order of `pks` (missing ones left out). */
  conclusionsByPks(workspaceId: string, pks: readonly number[], includeSuperseded?: boolean): Promise<{ pk: number; conclusion: ConclusionRecord }[]>;
  /** How many live conclusions a collection holds (its kept count). */
  countCollection(scope: ConclusionScope): Promise<number>;
  /** The scope's newest conclusions, newest first. */
  recentConclusions(scope: ConclusionScope, limit: number): Promise<ConclusionRecord[]>;
  /** The scope's live conclusions with these ids that pass the Document `filter`, in the order of `ids`. */
  conclusionsByIds(scope: ConclusionScope, ids: readonly string[], filter: FilterNode | null): Promise<ConclusionRecord[]>;
  /** The scope's most reinforced conclusions (`timesDerived` descending, then newest), leaving out `excludeIds`. */
  mostDerivedConclusions(scope: ConclusionScope, limit: number, excludeIds: readonly string[]): Promise<ConclusionRecord[]>;
  /** Live conclusions of every workspace after `afterPk` in storage order (`engram reembed`). */
  liveConclusionsAfter(afterPk: number, limit: number): Promise<{ pk: number; id: string; workspaceId: string }[]>;
  /** A live (current) conclusion of the workspace, or with `includeSuperseded` a superseded one too; undefined when there is none with this id. */
  findConclusion(workspaceId: string, id: string, options?: { includeSuperseded?: boolean }): Promise<ConclusionRecord | undefined>;
  /**
   * Supersedes each `oldId` by its `newId` (`superseded_at` = now, and retired from default reads
   * as a deleted one is). Only current conclusions of the workspace are superseded, each at most
   * once; returns the supersessions made, in order.
   */
  supersedeConclusions(workspaceId: string, supersessions: readonly Supersession[], now: Date): Promise<Supersession[]>;
  /**
   * The chain a conclusion belongs to, oldest first: every conclusion it (and those before it)
   * superseded, itself, and the ones that replaced it up to the current one; deleted ones left
   * out. Undefined when `id` is neither current nor superseded. At most `limit` conclusions.
   */
  conclusionHistory(workspaceId: string, id: string, limit: number): Promise<ConclusionRecord[] | undefined>;
  /** Marks a live conclusion deleted; false when there is none with this id in the workspace. */
  softDeleteConclusion(workspaceId: string, id: string, now: Date): Promise<boolean>;
  /** Adds one to a live conclusion's `timesDerived`; the new count, undefined when there is no such conclusion. */
  reinforceConclusion(workspaceId: string, id: string): Promise<number | undefined>;
  /**
   * Replaces a live conclusion by `record` in one transaction: the old one is soft-deleted (its
   * vector goes with it) and `record` stored with the old `timesDerived` + 1. Returns the record as
   * stored; undefined (and nothing changed) when the old one is not a live conclusion of the workspace.
   */
  replaceConclusion(workspaceId: string, oldId: string, record: ConclusionRecord, now: Date): Promise<ConclusionRecord | undefined>;
  /** How many live conclusions of this level the scope holds. */
  countConclusions(scope: ConclusionScope, level: ConclusionLevel): Promise<number>;
  /** The collection's last dream, undefined before its first. */
  dreamState(workspaceId: string, observerId: string, observedId: string): Promise<DreamState | undefined>;
  saveDreamState(workspaceId: string, observerId: string, observedId: string, state: DreamState): Promise<void>;
  /**
   * The live explicit conclusions stored in the session that peers drew about themselves
   * (observer = observed, scopes left out): what a scope's backfill copies.
   */
  ownExplicitConclusions(workspaceId: string, sessionId: string): Promise<ConclusionRecord[]>;
  /** The ids the observer's live conclusions of the session were copied from. */
  copiedSources(workspaceId: string, observerId: string, sessionId: string): Promise<Set<string>>;
  /**
   * Soft-deletes the observer's live explicit conclusions of the session, then, until none is
   * left, its live derived conclusions drawn from any conclusion so deleted. Returns the deleted
   * ids and the observed peers whose collections lost some.
   */
  retireSessionConclusions(workspaceId: string, observerId: string, sessionId: string, now: Date): Promise<{ ids: string[]; observedIds: string[] }>;
  /** undefined when the observer has no card for the target. */
  findPeerCard(workspaceId: string, observerId: string, targetId: string): Promise<string[] | undefined>;
  /** Inserts or replaces the card; the observer peer must exist. */
  savePeerCard(workspaceId: string, observerId: string, targetId: string, card: string[], now: Date): Promise<void>;
}

export type {
  FilterComparison,
  FilterInstant,
  FilterNode,
  FilterNumber,
  FilterTarget,
  FilterValue,
} from './filter.js';
export { VectorSizeError, MAX_NEIGHBOURS } from './vector-index.js';
export type {
  VectorIndex,
  ConclusionVector,
  ConclusionVectorQuery,
  MessageChunkVector,
  MessageVectorQuery,
  Neighbour,
} from './vector-index.js';
export { StoreUnavailableError, isStoreUnavailable } from './unavailable.js';
export { FilterTimeLimitError } from './filter-time-limit.js';

/** What deleting a peer removes (counted the same way the purge removes it). */
export interface PeerFootprint {
  messages: number;
  /** Every conclusion the peer made or that is about it, soft-deleted ones included. */
  conclusions: number;
  /** Scopes' copies of those, made by other observers about other peers. */
  scopeCopies: number;
  /** Cards the peer holds and cards about it. */
  peerCards: number;
  memberships: number;
  metamessages: number;
  /** Summaries of sessions the peer wrote in, removed and queued to be written again. */
  summaries: number;
}

/** A forget's preview as stored: the token's hash, never the token. */
export interface ForgetPreviewRecord {
  tokenHash: string;
  workspaceId: string;
  requestHash: string;
  conclusionIds: string[];
  messageIds: string[];
  createdAt: Date;
  expiresAt: Date;
}

export type RedeemedPreview =
  | { kind: 'ok'; conclusionIds: string[]; messageIds: string[] }
  | { kind: 'unknown' }
  | { kind: 'used' }
  | { kind: 'expired' }
  | { kind: 'mismatch' };

/** One forget carried out: who, when, whose memory, how much; never the content. */
export interface ForgetRecord {
  id: string;
  workspaceId: string;
  observedId: string;
  observerId: string | null;
  /** The key's scope: "admin", "workspace:<id>", or "auth-off". */
  actor: string;
  conclusionsRemoved: number;
  messagesRemoved: number;
  createdAt: Date;
}

/** Removing memory: a peer's deletion and forgetting (docs/forgetting.md). */
export interface ErasureStore {
  /** Marks the peer as being deleted; false when it is absent or already marked. */
  markPeerDeleting(workspaceId: string, peerId: string, now: Date): Promise<boolean>;
  isDeleting(workspaceId: string, peerId: string): Promise<boolean>;
  peerFootprint(workspaceId: string, peerId: string): Promise<PeerFootprint>;
  /** A session the peer still has messages in (its oldest message's). */
  nextMessageSession(workspaceId: string, peerId: string): Promise<string | undefined>;
  /** Deletes up to `limit` of the peer's messages in the session; `left`: some remain there. */
  deletePeerMessages(workspaceId: string, peerId: string, sessionId: string, limit: number): Promise<{ deleted: number; left: boolean }>;
  clearSummaries(workspaceId: string, sessionId: string): Promise<number>;
  /** Deletes up to `limit` conclusions by or about the peer, scopes' copies of them first. */
  deletePeerConclusions(workspaceId: string, peerId: string, limit: number): Promise<number>;
  /** Deletes up to about `limit` of the rest: memberships, metamessages, cards, collection bookkeeping. */
  deletePeerRest(workspaceId: string, peerId: string, limit: number): Promise<number>;
  /** Deletes the marked peer's row (and whatever is left with it). */
  deletePeerRow(workspaceId: string, peerId: string): Promise<boolean>;
  /** The observers holding live conclusions about the peer, in id order (its collections' counts). */
  observersOf(workspaceId: string, observedId: string): Promise<string[]>;
  saveForgetPreview(preview: ForgetPreviewRecord): Promise<void>;
  /** Takes a preview once: marked used in the caller's transaction. */
  redeemForgetPreview(workspaceId: string, tokenHash: string, requestHash: string, now: Date): Promise<RedeemedPreview>;
  /** Deletes the conclusions (and scopes' copies of them); how many rows went. */
  deleteConclusions(workspaceId: string, ids: readonly string[]): Promise<number>;
  deleteMessages(workspaceId: string, ids: readonly string[]): Promise<number>;
  recordForget(record: ForgetRecord): Promise<void>;
  /** Newest first. */
  listForgets(workspaceId: string, page: number, size: number): Promise<Page<ForgetRecord>>;
}
