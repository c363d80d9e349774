import type { WorkCounts } from './jobs.js';
import type { MessageRecord } from './records.js';

/* The deriver's representation items and the sessions' summaries. */

export interface RepresentationScope {
  sessionId?: string;
  observerId?: string;
  senderId?: string;
}

/** A session's representation items counted by state (its units added up). */
export interface RepresentationCounts extends WorkCounts {
  sessionId: string;
}

/** A message waiting for the deriver to form conclusions about its sender (reasoning.md R2). */
export interface NewRepresentationItem {
  workspaceId: string;
  sessionId: string;
  /** The sender: whom the conclusions are about. */
  observedId: string;
  messageId: string;
  /** The message's pk when the caller has it (it just stored the message): saves looking it up. */
  messagePk?: number;
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
  /**
   * addRepresentationItems of one session's items, with its units' open totals after them
   * (openUnitsTotals of the items' observed peers): one statement on PostgreSQL.
   */
  addItemsWithTotals(items: NewRepresentationItem[], now: Date): Promise<{ added: number; totals: Map<string, UnitTotals> }>;
  openUnitTotals(workspaceId: string, sessionId: string, observedId: string): Promise<UnitTotals>;
  /** `openUnitTotals` of several units of one session in one statement, by observed peer (a unit without open items is left out). */
  openUnitsTotals(workspaceId: string, sessionId: string, observedIds: readonly string[]): Promise<Map<string, UnitTotals>>;
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
   * The workspace's representation items counted per session: processed without error
   * (completed) or with one (failed) in the hour of `finishedSince` or later, open in a unit
   * whose job is running under a live lease (in progress), other open ones (pending). `scope`
   * narrows them to one session, and to the units (session, observed peer, observers)
   * `observerId` is an observer of or (when both are given) `senderId` is the observed peer of.
   */
  representationCounts(workspaceId: string, scope: RepresentationScope, now: Date, finishedSince: Date): Promise<RepresentationCounts[]>;
  /** Deletes up to `limit` of the processed items' counters of hours before `before`'s: how many. */
  purgeCounters(before: Date, limit: number): Promise<number>;
  summaries(workspaceId: string, sessionId: string): Promise<SessionSummaryRecord[]>;
  /** Stores a summary unless the stored one of its kind covers a later message. */
  saveSummary(workspaceId: string, sessionId: string, summary: SessionSummaryRecord): Promise<void>;
}
