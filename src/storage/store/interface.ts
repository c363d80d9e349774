import type { VectorIndex } from '../vector-index.js';
import type { PortableStore } from '../portable.js';
import type { ErasureStore } from './erasure.js';
import type { JobStore } from './jobs.js';
import type { MemoryStore } from './memory.js';
import type { ReasoningStore } from './reasoning.js';
import type { MessageStore, PeerStore, ScopeStore, SessionStore, WebhookStore, WorkspaceStore } from './resources.js';
import type { V1Store } from './v1.js';

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
