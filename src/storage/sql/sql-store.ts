import type { FilterLimits, Store } from '../store.js';
import { SeekPoints } from './seek-points.js';
import type { VectorIndex, VectorSizeMemo } from '../vector-index.js';
import type { Dialect } from './dialect.js';
import { DIALECTS } from './dialects.js';
import type { SqlDriver, SqlExecutor } from './driver.js';
import { SqlJobStore } from './job-store.js';
import { SqlMemoryStore } from './memory-store.js';
import { SqlMessageStore } from './message-store.js';
import { SqlPeerStore } from './peer-store.js';
import { SqlPortableStore } from './portable-store.js';
import { SqlReasoningStore } from './reasoning-store.js';
import { SqlScopeStore } from './scope-store.js';
import { SqlErasureStore } from './erasure-store.js';
import { SqlSessionStore } from './session-store.js';
import { SqlV1Store } from './v1-store.js';
import { EndpointMemo, SqlWebhookStore } from './webhook-store.js';
import { SqlWorkspaceStore } from './workspace-store.js';
import { SearchStatistics } from '../postgres/search-statistics.js';

/** The listeners of one store and its transactions for "jobs were queued and committed". */
class JobsQueued {
  private readonly listeners = new Set<() => void>();

  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  tell(): void {
    for (const listener of this.listeners) listener();
  }
}

/**
 * The one Store implementation: a store per resource (one file of SQL each: workspace-store.ts,
 * peer-store.ts ...), each made on first use and bound to this store's connection or
 * transaction. The Store itself keeps transactions, availability and the jobs-queued listeners.
 */
export class SqlStore implements Store {
  readonly dialect: 'sqlite' | 'postgres';
  readonly filterLimits: FilterLimits;
  private readonly sqlDialect: Dialect;

  /**
   * `queued` is shared by a store and the stores of its transactions; `onQueued` is what this
   * store's job queue calls after an enqueue: tell at once outside a transaction, after the
   * commit inside one. `walkFirst` (the job claims' hint, job-store.ts) is shared alike.
   */
  constructor(
    private readonly db: SqlExecutor,
    private readonly driver?: SqlDriver,
    private readonly queued = new JobsQueued(),
    private readonly onQueued: () => void = () => queued.tell(),
    private readonly walkFirst = new Set<string>(),
    /** PostgreSQL's, shared with the stores of its transactions; null: none (every search walks, bench/search-plans.ts). */
    private readonly searchStatistics: SearchStatistics | null | undefined = db.dialect === 'postgres' ? new SearchStatistics() : undefined,
    /** The vectors' size once read and the webhook endpoints found, shared with the stores of its transactions. */
    private readonly vectorSizes: VectorSizeMemo = { size: undefined },
    private readonly endpoints = new EndpointMemo(),
  ) {
    this.dialect = db.dialect;
    this.sqlDialect = DIALECTS[db.dialect];
    this.filterLimits = { likePatternBytes: this.sqlDialect.likePatternBytes };
    // a transaction's own writes may be rolled back: its lists keep no points
    this.seekPoints = driver === undefined ? undefined : new SeekPoints();
  }

  /** Where earlier pages of the lists ended (seek-points.ts), outside transactions only. */
  private readonly seekPoints: SeekPoints | undefined;

  static over(driver: SqlDriver): SqlStore {
    return new SqlStore(driver, driver);
  }

  private workspaceStore: SqlWorkspaceStore | undefined;

  get workspaces(): SqlWorkspaceStore {
    this.workspaceStore ??= new SqlWorkspaceStore(this.db, this.sqlDialect, this.seekPoints);
    return this.workspaceStore;
  }

  private peerStore: SqlPeerStore | undefined;

  get peers(): SqlPeerStore {
    this.peerStore ??= new SqlPeerStore(this.db, this.sqlDialect, this.seekPoints);
    return this.peerStore;
  }

  private sessionStore: SqlSessionStore | undefined;

  get sessions(): SqlSessionStore {
    this.sessionStore ??= new SqlSessionStore(this.db, this.sqlDialect, this.seekPoints);
    return this.sessionStore;
  }

  private messageStore: SqlMessageStore | undefined;

  get messages(): SqlMessageStore {
    this.messageStore ??= new SqlMessageStore(this.db, this.sqlDialect, this.seekPoints, this.searchStatistics ?? undefined);
    return this.messageStore;
  }

  private webhookStore: SqlWebhookStore | undefined;

  get webhooks(): SqlWebhookStore {
    this.webhookStore ??= new SqlWebhookStore(this.db, this.sqlDialect, this.endpoints, this.driver !== undefined);
    return this.webhookStore;
  }

  private jobStore: SqlJobStore | undefined;

  get jobs(): SqlJobStore {
    this.jobStore ??= new SqlJobStore(this.db, this.onQueued, this.walkFirst, (fn) => (this.driver === undefined ? fn(this.db) : this.driver.transaction(fn)));
    return this.jobStore;
  }

  private v1Store: SqlV1Store | undefined;

  get v1(): SqlV1Store {
    this.v1Store ??= new SqlV1Store(this.db, this.seekPoints);
    return this.v1Store;
  }

  private reasoningStore: SqlReasoningStore | undefined;

  get reasoning(): SqlReasoningStore {
    this.reasoningStore ??= new SqlReasoningStore(this.db);
    return this.reasoningStore;
  }

  private scopeStore: SqlScopeStore | undefined;

  get scopes(): SqlScopeStore {
    this.scopeStore ??= new SqlScopeStore(this.db, this.sqlDialect);
    return this.scopeStore;
  }

  private erasureStore: SqlErasureStore | undefined;

  get erasure(): SqlErasureStore {
    this.erasureStore ??= new SqlErasureStore(this.db, this.sqlDialect);
    return this.erasureStore;
  }

  private portableStore: SqlPortableStore | undefined;

  get portable(): SqlPortableStore {
    this.portableStore ??= new SqlPortableStore(this.db, this.sqlDialect);
    return this.portableStore;
  }

  private memoryStore: SqlMemoryStore | undefined;

  get memory(): SqlMemoryStore {
    this.memoryStore ??= new SqlMemoryStore(this.db, (fn) => (this.driver === undefined ? fn(this.db) : this.driver.transaction(fn)), this.seekPoints);
    return this.memoryStore;
  }

  private vectorIndex: VectorIndex | undefined;

  get vectors(): VectorIndex {
    this.vectorIndex ??= this.sqlDialect.vectorIndex(this.db, this.vectorSizes, this.driver);
    return this.vectorIndex;
  }

  onJobsQueued(listener: () => void): () => void {
    return this.queued.listen(listener);
  }

  async transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    // Already inside one: join it.
    if (this.driver === undefined) return fn(this);
    let queuedJobs = false;
    const result = await this.driver.transaction((tx) => fn(new SqlStore(tx, undefined, this.queued, () => (queuedJobs = true), this.walkFirst, this.searchStatistics, this.vectorSizes, this.endpoints)));
    if (queuedJobs) this.queued.tell();
    return result;
  }

  changeToken(): string | undefined {
    // inside a transaction its own uncommitted writes would not show
    return this.driver?.changeToken();
  }

  async checkAvailable(): Promise<void> {
    // inside a transaction the database has already answered
    if (this.driver !== undefined) await this.driver.probe();
  }
}
