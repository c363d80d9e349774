import type { JsonObject } from './store.js';

/**
 * The rows of a store as `engram export` writes them and `engram import` reads them back
 * (docs/portability.md): every column a user's memory is in, with times as `Date`s (a
 * PreciseDate keeps the microseconds) and JSON objects parsed. What a store keeps for itself
 * (counters, list versions, the work queue, search indexes) is not among them: the target's
 * triggers make it again as the rows go in.
 */
export interface PortableRows {
  workspace: { id: string; v1_id: string; metadata: JsonObject; configuration: JsonObject; created_at: Date };
  peer: { workspace_id: string; id: string; v1_id: string; kind: 'scope' | null; metadata: JsonObject; configuration: JsonObject; created_at: Date };
  session: { workspace_id: string; id: string; v1_id: string; is_active: boolean; metadata: JsonObject; configuration: JsonObject; created_at: Date };
  membership: { workspace_id: string; session_id: string; peer_id: string; configuration: JsonObject; joined_at: Date; left_at: Date | null };
  message: {
    workspace_id: string;
    session_id: string;
    id: string;
    peer_id: string;
    content: string;
    metadata: JsonObject;
    token_count: number;
    created_at: Date;
  };
  metamessage: {
    workspace_id: string;
    id: string;
    peer_id: string;
    session_id: string | null;
    message_id: string | null;
    label: string;
    content: string;
    metadata: JsonObject;
    created_at: Date;
  };
  conclusion: {
    workspace_id: string;
    id: string;
    observer_id: string;
    observed_id: string;
    session_id: string | null;
    level: 'explicit' | 'deductive' | 'inductive' | 'contradiction';
    content: string;
    source_ids: string[] | null;
    source_session_ids: string[] | null;
    times_derived: number;
    metadata: JsonObject;
    copied_from: string | null;
    created_at: Date;
    valid_from: Date | null;
    superseded_at: Date | null;
    superseded_by: string | null;
  };
  peer_card: { workspace_id: string; observer_id: string; target_id: string; card: string[]; updated_at: Date };
  summary: {
    workspace_id: string;
    session_id: string;
    summary_type: 'short' | 'long';
    content: string;
    message_id: string;
    message_seq: number;
    token_count: number;
    created_at: Date;
  };
  dream_state: { workspace_id: string; observer_id: string; observed_id: string; last_dream_at: Date; explicit_at_last_dream: number };
  scope_backfill: {
    workspace_id: string;
    scope_peer_id: string;
    session_id: string;
    state: 'pending' | 'completed' | 'failed';
    updated_at: Date;
    docs_copied: number | null;
  };
  webhook: { workspace_id: string; id: string; url: string; created_at: Date };
  conclusion_vector: { workspace_id: string; conclusion_id: string; vector: number[] };
  message_vector: { workspace_id: string; message_id: string; chunk: number; vector: number[] };
}

export type PortableKind = keyof PortableRows;

/**
 * The order of an export (each kind refers only to kinds before it): the workspaces; each one's
 * peers, sessions and memberships (SETUP_KINDS, read workspace by workspace); the messages and
 * conclusions of all of them (WALKED_KINDS, read in one walk of each table in storage order, which
 * keeps their order across workspaces and costs one pass however many workspaces are chosen); each
 * workspace's remaining rows (REST_KINDS); the vectors (VECTOR_KINDS, walked).
 */
export const SETUP_KINDS = ['peer', 'session', 'membership'] as const satisfies readonly PortableKind[];
export const WALKED_KINDS = ['message', 'conclusion'] as const satisfies readonly PortableKind[];
export const REST_KINDS = ['metamessage', 'peer_card', 'summary', 'dream_state', 'scope_backfill', 'webhook'] as const satisfies readonly PortableKind[];
export const VECTOR_KINDS = ['conclusion_vector', 'message_vector'] as const satisfies readonly PortableKind[];

export type WorkspaceKind = (typeof SETUP_KINDS)[number] | (typeof REST_KINDS)[number];
export type WalkedKind = (typeof WALKED_KINDS)[number] | (typeof VECTOR_KINDS)[number];

/** Where a page of rows continues: opaque to the caller, undefined for the first page. */
export type PortableCursor = readonly (string | number)[] | undefined;

export interface PortablePage<K extends PortableKind> {
  rows: PortableRows[K][];
  /** Where the next page starts; undefined when this was the last. */
  next: PortableCursor;
}

/**
 * Reads and writes of whole rows, for export and import. Reads are keyset pages (each costs
 * O(page) however far into the table it is); writes insert what is missing and leave every
 * row already there as it is (same key: the same row), so a second import changes nothing.
 */
export interface PortableStore {
  /** Workspaces in storage order, only those of `ids` when given. */
  workspaces(ids: readonly string[] | undefined, after: PortableCursor, limit: number): Promise<PortablePage<'workspace'>>;
  /** A page of one workspace's rows of one kind, in storage order. */
  page<K extends WorkspaceKind>(kind: K, workspaceId: string, after: PortableCursor, limit: number): Promise<PortablePage<K>>;
  /**
   * A page of a walk of a whole table in storage order, keeping the rows of `workspaceIds`
   * (undefined: every workspace's): each page continues where the last ended, so the walk reads
   * the table once.
   */
  walk<K extends WalkedKind>(kind: K, workspaceIds: readonly string[] | undefined, after: PortableCursor, limit: number): Promise<PortablePage<K>>;
  /**
   * Inserts the rows that are not stored yet (by their key) and returns the keys (`id`s, or for
   * a vector its owner's id) of those it inserted. Vectors go through the store's vector index.
   */
  insert<K extends PortableKind>(kind: K, rows: readonly PortableRows[K][]): Promise<string[]>;
}
