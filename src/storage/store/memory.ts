import type { FilterNode } from '../filter.js';
import type { JsonObject, ListQuery, Page } from './records.js';

/* Conclusions, their vectors' scopes and peer cards. */

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
