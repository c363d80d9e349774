import type { SqlExecutor } from './sql/driver.js';
import type { ConclusionLevel } from './store.js';

/**
 * Embeddings of conclusions and message chunks, searched by cosine distance. One implementation
 * per dialect (storage/sqlite/sqlite-vector-index.ts: sqlite-vec; storage/postgres/
 * postgres-vector-index.ts: pgvector). Every vector of a store has one size, fixed when the
 * first vector is stored; a vector of another size is refused with VectorSizeError.
 * A query reads one collection: a conclusion search one (workspace, observer, observed); a
 * message search one session, or one workspace when no session is named.
 */
export interface VectorIndex {
  /** The size of the stored vectors; undefined until the first vector is stored (or after `clear`). */
  dimensions(): Promise<number | undefined>;
  /**
   * Throws VectorSizeError when vectors of another size than `configured` are stored (start-up
   * calls it with EMBEDDING_VECTOR_DIMENSIONS); passes when none are stored yet.
   */
  checkDimensions(configured: number): Promise<void>;
  /**
   * Before a transaction that stores vectors of `size`: fixes the size if no vector is stored yet
   * (PostgreSQL: the columns typed and indexed in a transaction of their own, which the first
   * put would do inside the caller's), or throws VectorSizeError for another size. SQLite does
   * nothing ahead: its put fixes the size as before.
   */
  fixDimensions(size: number): Promise<void>;
  /** Stores (or replaces) the vectors of live conclusions; fixes the size on the first call. */
  putConclusions(rows: ConclusionVector[]): Promise<void>;
  /**
   * Gives each live conclusion `toId` the stored vector of `fromId` (a scope's copy of a
   * conclusion); returns the `toId`s whose source has no vector.
   */
  copyConclusionVectors(workspaceId: string, pairs: readonly { fromId: string; toId: string }[]): Promise<string[]>;
  /** Nearest live conclusions of one collection, nearest first. */
  nearestConclusions(query: ConclusionVectorQuery): Promise<Neighbour<'conclusionId'>[]>;
  /** Stores (or replaces) the vectors of message chunks; fixes the size on the first call. */
  putMessageChunks(rows: MessageChunkVector[]): Promise<void>;
  /**
   * The most chunks putMessageChunks stores in one statement, atomic without a transaction
   * around it (PostgreSQL, once fixDimensions has run); 0 where a put is several statements
   * (SQLite), which belong in a transaction.
   */
  readonly chunksInOneStatement: number;
  /**
   * Nearest messages of a session (or of the workspace when `sessionId` is undefined), nearest
   * first; a message with several chunks appears once, at the distance of its nearest chunk.
   */
  nearestMessages(query: MessageVectorQuery): Promise<Neighbour<'messageId'>[]>;
  /** Removes every vector and the fixed size (`engram reembed` then embeds everything again). */
  clear(): Promise<void>;
  /**
   * One step of the index's background upkeep, if one is due (PostgreSQL: the newest message
   * vectors sealed into a part indexed at once, or parts merged; storage/postgres/
   * message-vector-parts.ts); undefined when none is, another process is at it, or the store is
   * bound to a transaction. Absent where there is none (SQLite). The worker calls it beside its claims;
   * `signal` stops a step under way (rolled back).
   */
  upkeep?(signal?: AbortSignal): Promise<VectorUpkeepStep | undefined>;
  /**
   * Where the message vectors are, where they are kept in parts (PostgreSQL): the sealed parts by
   * level and the vectors waiting in the open part (searched exactly until sealed). Absent where
   * there are no parts (SQLite). `/metrics` shows it.
   */
  layout?(): Promise<VectorLayout>;
  /**
   * A page of the stored vectors of live conclusions or of message chunks of the workspaces
   * `workspaceIds` (undefined: all), in the owners' storage order then by chunk, after `after`
   * (the previous page's `next`): `engram export --with-vectors`.
   */
  exportPage(what: 'conclusions' | 'messages', workspaceIds: readonly string[] | undefined, after: readonly (string | number)[] | undefined, limit: number): Promise<VectorExportPage>;
}

/** What one upkeep step did. `busy`: the lock it needs was not free within its wait; nothing changed. */
export type VectorUpkeepStep =
  | { kind: 'sealed' | 'merged'; part: { name: string; level: number; rows: number }; from: number; ms: number; lockedMs: number }
  | { kind: 'busy'; waitedMs: number };

export interface VectorLayout {
  /** Sealed parts by level, lowest first: how many, and their vectors as counted when each was sealed or merged. */
  levels: { level: number; parts: number; rows: number }[];
  /** Vectors in the open part. */
  openRows: number;
}

export interface VectorExportPage {
  /** The owner's id and workspace, the chunk (0 for a conclusion) and the floats. */
  rows: { id: string; workspaceId: string; chunk: number; vector: number[] }[];
  next: readonly number[] | undefined;
}

/** The floats of a stored float32 vector in one form whichever database read them (9 significant digits restore a float32 exactly). */
export function exportedFloats(values: ArrayLike<number>): number[] {
  return Array.from(values, (x) => Number(Math.fround(x).toPrecision(9)));
}

export interface ConclusionVector {
  conclusionId: string;
  workspaceId: string;
  observerId: string;
  observedId: string;
  level: ConclusionLevel;
  sessionId: string | null;
  vector: ArrayLike<number>;
}

export interface ConclusionVectorQuery {
  workspaceId: string;
  observerId: string;
  observedId: string;
  vector: ArrayLike<number>;
  /** Most results (1 to 4096). */
  k: number;
  /** Largest cosine distance to return (0 to 2). */
  maxDistance?: number;
  /** Only conclusions of these levels (none: no conclusion). */
  levels?: readonly ConclusionLevel[];
  /** Only conclusions stored in this session (null: only those stored without one). */
  sessionId?: string | null;
  /** Conclusions to leave out (they do not count towards `k`). */
  excludeIds?: readonly string[];
}

export interface MessageChunkVector {
  messageId: string;
  /** The chunk's number within its message, from 0. */
  chunk: number;
  workspaceId: string;
  sessionId: string;
  /** The sender. */
  peerId: string;
  vector: ArrayLike<number>;
}

export interface MessageVectorQuery {
  workspaceId: string;
  sessionId?: string;
  /** Only messages of these sessions (none: no message); applied by the search itself, so k counts only these. */
  sessionIds?: readonly string[];
  /** Only messages of the sessions this peer is or was a member of; applied by the search itself. */
  memberOf?: string;
  /** Only messages of this sender. */
  peerId?: string;
  vector: ArrayLike<number>;
  /** Most results (1 to 4096). */
  k: number;
}

export type Neighbour<K extends string> = { [key in K]: string } & { distance: number };

/** Most results one vector query returns (sqlite-vec's limit on `k`). */
export const MAX_NEIGHBOURS = 4096;

/**
 * The ids of the sessions `peerId` is or was a member of, when there are at most `atMost` of them
 * (undefined: more), for a message search limited to that peer's sessions (`memberOf`).
 */
export async function memberSessions(db: SqlExecutor, workspaceId: string, peerId: string, atMost: number): Promise<string[] | undefined> {
  const rows = await db.all<{ session_id: string }>('SELECT session_id FROM session_peers WHERE workspace_id = ? AND peer_id = ? LIMIT ?', [
    workspaceId,
    peerId,
    atMost + 1,
  ]);
  return rows.length > atMost ? undefined : rows.map((row) => row.session_id);
}

/** The chunk number is kept below this, so (message, chunk) fits one SQLite rowid. */
export const MAX_CHUNKS_PER_MESSAGE = 1024;

/** A vector whose size differs from the size the store's vectors were fixed at. */
export class VectorSizeError extends Error {
  constructor(
    readonly stored: number,
    readonly given: number,
    origin: 'configured' | 'vector',
  ) {
    super(
      origin === 'configured'
        ? `EMBEDDING_VECTOR_DIMENSIONS is ${given}, but the stored vectors have ${stored} dimensions. ` +
            `Set EMBEDDING_VECTOR_DIMENSIONS=${stored} (the embedding model the vectors were made with), ` +
            'or run `engram reembed` to drop the stored vectors and embed everything again with the new model.'
        : `A vector of ${given} dimensions cannot be stored: the stored vectors have ${stored}. ` +
            'Check EMBEDDING_VECTOR_DIMENSIONS and the embedding model, or run `engram reembed` to rebuild the vectors.',
    );
    this.name = 'VectorSizeError';
  }
}

/** Checks the chunk numbers of message vectors: whole numbers below MAX_CHUNKS_PER_MESSAGE. */
export function checkChunkNumbers(rows: readonly MessageChunkVector[]): void {
  for (const row of rows) {
    if (!Number.isInteger(row.chunk) || row.chunk < 0 || row.chunk >= MAX_CHUNKS_PER_MESSAGE) throw new RangeError(`Chunk numbers run from 0 to ${MAX_CHUNKS_PER_MESSAGE - 1}`);
  }
}

/**
 * Vectors to store, in batches of `size` (one statement, or one round of statements, each): a
 * row whose `key` repeats an earlier one's replaces it, so that what is named twice keeps its
 * last vector.
 */
export function putBatches<T>(rows: readonly T[], key: (row: T) => unknown[], size: number): T[][] {
  const last = [...new Map(rows.map((row) => [JSON.stringify(key(row)), row])).values()];
  const batches: T[][] = [];
  for (let start = 0; start < last.length; start += size) batches.push(last.slice(start, start + size));
  return batches;
}

/** Checks a batch of vectors: every one of the same positive size, finite numbers only. */
export function vectorSize(rows: readonly { vector: ArrayLike<number> }[]): number {
  const size = rows[0].vector.length;
  for (const row of rows) {
    if (row.vector.length !== size || size === 0) throw new RangeError(`Vectors of one batch must share one positive size (got ${row.vector.length} and ${size})`);
    for (let i = 0; i < size; i++) if (!Number.isFinite(row.vector[i])) throw new RangeError('A vector holds a value that is not a finite number');
  }
  return size;
}

/**
 * pgvector's text form of a vector, `[0.1,0.2,...]`: each value as the float32 the database
 * keeps, in 9 significant digits (enough for every float32 to come back exactly). The shortest
 * text of each value as a double, as before, took three times as long (1,536 dimensions: 530
 * against 160 µs a vector, on the event loop for every search and every vector stored) and
 * was a third longer for the database to parse.
 */
export function vectorText(vector: ArrayLike<number>): string {
  let text = '[';
  for (let i = 0; i < vector.length; i++) text += (i === 0 ? '' : ',') + Math.fround(vector[i]).toPrecision(9);
  return `${text}]`;
}

/** The vectors' size as a store last read it (VectorDimensions). */
export interface VectorSizeMemo {
  size: number | undefined;
}

/** The setting row that holds the fixed size. */
export const DIMENSIONS_SETTING = 'vector_dimensions';

/**
 * The size a store's vectors are fixed at, kept in the settings row by both indexes alike. The
 * first vector stored fixes it and runs `create` with it (what a fixed size needs: PostgreSQL's
 * typed columns and HNSW indexes, SQLite's vec0 tables); a later vector of another size is a
 * VectorSizeError.
 */
export class VectorDimensions {
  /**
   * `known`: the size once read, shared by a store and the stores of its transactions, so that
   * a search or a vector write does not read the settings row again (one statement each, a
   * sixteenth of all under the soak's load). Filled only by a read outside a transaction
   * (`fills`): a transaction may read its own uncommitted first size and then roll back. A
   * size changes only through `clear` (`engram reembed`, run while the servers are stopped).
   */
  constructor(
    private readonly db: SqlExecutor,
    private readonly create: (size: number) => Promise<void>,
    private readonly known: VectorSizeMemo = { size: undefined },
    private readonly fills = false,
  ) {}

  /** The fixed size; undefined before the first vector. */
  async stored(): Promise<number | undefined> {
    if (this.known.size !== undefined) return this.known.size;
    const row = await this.db.get<{ value: string }>('SELECT value FROM store_settings WHERE name = ?', [DIMENSIONS_SETTING]);
    const size = row === undefined ? undefined : Number(row.value);
    if (this.fills) this.known.size = size;
    return size;
  }

  /** Forgets the size read (the vectors are being dropped). */
  forget(): void {
    this.known.size = undefined;
  }

  /** Refuses a configured size that differs from the stored vectors'. */
  async check(configured: number): Promise<void> {
    const stored = await this.stored();
    if (stored !== undefined && stored !== configured) throw new VectorSizeError(stored, configured, 'configured');
  }

  /** Fixes the size with the first vector, or checks a later one against it. */
  async fix(size: number): Promise<void> {
    const stored = await this.stored();
    if (stored === size) return;
    if (stored !== undefined) throw new VectorSizeError(stored, size, 'vector');
    // another writer may have fixed it since the read (on PostgreSQL a concurrent first store
    // waits here on the other's uncommitted row): the insert then changes nothing, read it again
    const changed = await this.db.run('INSERT INTO store_settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', [DIMENSIONS_SETTING, String(size)]);
    if (changed === 0) return this.fix(size);
    await this.create(size);
  }
}
