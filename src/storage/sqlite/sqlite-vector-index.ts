import type { SqlExecutor } from '../sql/driver.js';
import {
  DIMENSIONS_SETTING,
  VectorDimensions,
  type VectorSizeMemo,
  MAX_CHUNKS_PER_MESSAGE,
  MAX_NEIGHBOURS,
  memberSessions,
  vectorSize,
  checkChunkNumbers,
  putBatches,
  type ConclusionVector,
  type ConclusionVectorQuery,
  type MessageChunkVector,
  type MessageVectorQuery,
  type Neighbour,
  type VectorIndex,
  type VectorExportPage,
  exportedFloats,
} from '../vector-index.js';

/*
 * sqlite-vec `vec0` tables (the extension is loaded by sqlite-driver.ts). A vec0 column has a
 * fixed size, so the tables are created with the first vector, and dropped by `clear`.
 * - conclusion_vectors: rowid = conclusions.pk; partition key `collection` (workspace, observer,
 *   observed as a JSON array), so a query reads only that collection's chunks; metadata columns
 *   `level` and `session_id` ('' for none) narrow the scan. Searched exactly.
 * - message chunks, rowid = messages.pk * 1024 + chunk, in two tables: `message_embeddings` (a
 *   plain table: the float32 vector by rowid) and `message_embedding_signs` (vec0: one bit per
 *   dimension, its sign; partition keys workspace and session, metadata the sender and the
 *   session's pk, which a search of a long list of sessions filters on; a short list is searched
 *   partition by partition). A search
 *   scans the signs (Hamming distance, 32 times less to read than the floats and no arithmetic),
 *   then computes the exact cosine distance of the best `candidates` of them from the floats:
 *   exact whenever the partition holds no more vectors than that, approximate beyond (as
 *   PostgreSQL's HNSW index is). A workspace of 100,000 chunks of 1536 dimensions was scanned in
 *   about 207 ms as floats, 36 ms this way (bench/README.md, "Vector search").
 * Small chunks (16 vectors) keep a collection of a few conclusions from reserving space for a
 * thousand; bench/README.md has the measurements. Triggers drop the vectors of soft-deleted and
 * deleted conclusions and of deleted messages (cascades from sessions, peers and workspaces
 * included: SQLite runs triggers for foreign-key actions). A vec0 table finds rows by rowid only
 * one at a time (a range or IN scans the whole table), so a message's chunks are deleted by range
 * from the plain table, whose own trigger deletes each one's signs by its rowid.
 */

const CHUNK_SIZE = 16;

const COLLECTION = 'json_array(?, ?, ?)';

function blob(vector: ArrayLike<number>): Buffer {
  const floats = Float32Array.from(vector);
  return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength);
}

/** The sign of each dimension, one bit each (lowest bit first), padded to whole bytes. */
export function signBits(vector: ArrayLike<number>): Buffer {
  const bits = Buffer.alloc(Math.ceil(vector.length / 8));
  for (let i = 0; i < vector.length; i++) if (vector[i] > 0) bits[i >> 3] |= 1 << (i & 7);
  return bits;
}

/**
 * How many sign-nearest chunks a message search rescores exactly, for `k` chunks wanted: a
 * partition of at most this many vectors is searched exactly. With these, all of the exact ten
 * nearest were found among 100,000 clustered vectors of 1536 dimensions (bench/vectors.ts; 98 %
 * in a scratch run with looser clusters).
 */
export function signCandidates(k: number): number {
  return Math.min(MAX_NEIGHBOURS, Math.max(MIN_SIGN_CANDIDATES, k * 8));
}

const MIN_SIGN_CANDIDATES = 512;

/**
 * A search of at most this many sessions (a list, or a peer's sessions) reads only their
 * partitions, with a search of each; more are filtered during a scan of the workspace. Measured
 * over 100,000 chunks (scratch): 1 session 0.7 against 13 ms, 8 sessions 6.7 (sessions of 100
 * chunks) to 10 ms (of 1,000) against 19 to 20, with all or nearly all of the exact ten nearest
 * found (docs/decisions/0003-vectors-sqlite-vec-pgvector.md).
 */
export const PARTITION_SEARCHES = 8;

/**
 * The sign candidates each of `sessions` partition searches keeps, for `k` messages wanted: an
 * even share of twice a workspace search's candidates, at least 64, so the rescoring stays about
 * as large as one search's however many sessions are listed.
 */
export function partitionCandidates(k: number, sessions: number): number {
  const candidates = signCandidates(k);
  return Math.min(candidates, Math.max(MIN_PARTITION_CANDIDATES, Math.ceil((2 * candidates) / sessions)));
}

const MIN_PARTITION_CANDIDATES = 64;

/** Vectors stored at a time: a statement's rows (its parameters stay under SQLite's limit of 32,766). */
const PUT_BATCH = 100;

/** Deletes the chunks of the message whose pk is bound twice, through the primary key. */
export const DELETE_MESSAGE_CHUNKS = `DELETE FROM message_embeddings WHERE rowid BETWEEN ? * ${MAX_CHUNKS_PER_MESSAGE} AND ? * ${MAX_CHUNKS_PER_MESSAGE} + ${MAX_CHUNKS_PER_MESSAGE - 1}`;
/** Deletes one chunk's signs, by rowid (the only lookup a vec0 table does without a scan). */
export const DELETE_CHUNK_SIGNS = 'DELETE FROM message_embedding_signs WHERE rowid = ?';

function messageTables(dimensions: number): string[] {
  const bits = Math.ceil(Math.trunc(dimensions) / 8) * 8;
  return [
    'CREATE TABLE IF NOT EXISTS message_embeddings (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL)',
    // the session twice: as a partition key, so one session's search reads only its chunks, and as
    // metadata (its pk), so a search of a list of sessions filters during the workspace's scan (a
    // partition key's IN runs one search per session, each returning its own candidates). An
    // integer: sqlite-vec tests a text value longer than 12 bytes against an IN list by reading it
    // from another table, row by row (100 session ids of 36 characters over 100,000 chunks: 3 s,
    // against 20 ms for their pks; scratch measurement)
    `CREATE VIRTUAL TABLE IF NOT EXISTS message_embedding_signs USING vec0(
      workspace_id TEXT PARTITION KEY, session_id TEXT PARTITION KEY, embedding bit[${bits}],
      peer_id TEXT, session_pk INTEGER, chunk_size=${CHUNK_SIZE})`,
    `CREATE TRIGGER IF NOT EXISTS message_embeddings_delete AFTER DELETE ON message_embeddings BEGIN
        ${DELETE_CHUNK_SIGNS.replace('?', 'OLD.rowid')};
      END`,
    `CREATE TRIGGER IF NOT EXISTS messages_vector_delete AFTER DELETE ON messages BEGIN
        ${DELETE_MESSAGE_CHUNKS.replaceAll('?', 'OLD.pk')};
      END`,
  ];
}

function tables(dimensions: number): string[] {
  const n = Math.trunc(dimensions);
  return [
    `CREATE VIRTUAL TABLE IF NOT EXISTS conclusion_vectors USING vec0(
      collection TEXT PARTITION KEY, embedding float[${n}] distance_metric=cosine,
      level TEXT, session_id TEXT, chunk_size=${CHUNK_SIZE})`,
    `CREATE TRIGGER IF NOT EXISTS conclusions_vector_forget AFTER UPDATE OF deleted_at ON conclusions
      WHEN NEW.deleted_at IS NOT NULL BEGIN
        DELETE FROM conclusion_vectors WHERE rowid = NEW.pk;
      END`,
    `CREATE TRIGGER IF NOT EXISTS conclusions_vector_delete AFTER DELETE ON conclusions BEGIN
        DELETE FROM conclusion_vectors WHERE rowid = OLD.pk;
      END`,
    ...messageTables(dimensions),
  ];
}

const DROP = [
  'DROP TRIGGER IF EXISTS conclusions_vector_forget',
  'DROP TRIGGER IF EXISTS conclusions_vector_delete',
  'DROP TRIGGER IF EXISTS messages_vector_delete',
  'DROP TRIGGER IF EXISTS message_embeddings_delete',
  'DROP TABLE IF EXISTS conclusion_vectors',
  'DROP TABLE IF EXISTS message_embedding_signs',
  'DROP TABLE IF EXISTS message_embeddings',
];

/**
 * Migration 0025 (code: the vec0 column's size is known only from the data): a store whose
 * message chunks are in the earlier layout, one vec0 table of floats (`message_vectors`), gets
 * them copied into `message_embeddings` and `message_embedding_signs`, and the old table and
 * trigger dropped. The old table is read by rowid one chunk at a time (a vec0 range read scans
 * the table): 9 s for 100,000 chunks.
 */
export async function upgradeMessageVectors(tx: SqlExecutor): Promise<void> {
  const old = await tx.get<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'message_vectors'");
  if (old === undefined) return;
  const size = await tx.get<{ value: string }>('SELECT value FROM store_settings WHERE name = ?', [DIMENSIONS_SETTING]);
  await tx.run('DROP TRIGGER IF EXISTS messages_vector_delete');
  if (size !== undefined) {
    for (const statement of messageTables(Number(size.value))) await tx.run(statement);
    const rowids = await tx.all<{ rowid: number | bigint }>('SELECT rowid FROM message_vectors');
    for (const { rowid } of rowids) {
      const row = await tx.get<{ workspace_id: string; session_id: string; peer_id: string; session_pk: number; embedding: Buffer }>(
        `SELECT v.workspace_id, v.session_id, v.peer_id, s.pk AS session_pk, v.embedding FROM message_vectors v
         JOIN sessions s ON s.workspace_id = v.workspace_id AND s.id = v.session_id WHERE v.rowid = ?`,
        [rowid],
      );
      if (row === undefined) continue;
      await insertChunk(tx, BigInt(rowid), row, row.embedding);
    }
  }
  await tx.run('DROP TABLE message_vectors');
}

interface ChunkPlace {
  workspace_id: string;
  session_id: string;
  peer_id: string;
  session_pk: number;
}

/** Stores chunks' floats and signs, two statements for them all. */
async function insertChunks(db: SqlExecutor, chunks: readonly { rowid: bigint; place: ChunkPlace; floats: Buffer }[]): Promise<void> {
  await db.run(`INSERT INTO message_embeddings (rowid, embedding) VALUES ${chunks.map(() => '(?, ?)').join(', ')}`, chunks.flatMap((c) => [c.rowid, c.floats]));
  await db.run(
    `INSERT INTO message_embedding_signs (rowid, workspace_id, session_id, peer_id, session_pk, embedding) VALUES ${chunks.map(() => '(?, ?, ?, ?, ?, vec_bit(?))').join(', ')}`,
    chunks.flatMap((c) => {
      // a Buffer from the driver need not be 4-byte aligned for a Float32Array over it
      const vector = new Float32Array(c.floats.byteLength / 4);
      for (let i = 0; i < vector.length; i++) vector[i] = c.floats.readFloatLE(i * 4);
      return [c.rowid, c.place.workspace_id, c.place.session_id, c.place.peer_id, BigInt(c.place.session_pk), signBits(vector)];
    }),
  );
}

async function insertChunk(db: SqlExecutor, rowid: bigint, place: ChunkPlace, floats: Buffer): Promise<void> {
  // a Buffer from the driver need not be 4-byte aligned for a Float32Array over it
  const vector = new Float32Array(floats.byteLength / 4);
  for (let i = 0; i < vector.length; i++) vector[i] = floats.readFloatLE(i * 4);
  await db.run('INSERT INTO message_embeddings (rowid, embedding) VALUES (?, ?)', [rowid, floats]);
  await db.run('INSERT INTO message_embedding_signs (rowid, workspace_id, session_id, peer_id, session_pk, embedding) VALUES (?, ?, ?, ?, ?, vec_bit(?))', [
    rowid,
    place.workspace_id,
    place.session_id,
    place.peer_id,
    BigInt(place.session_pk),
    signBits(vector),
  ]);
}

export class SqliteVectorIndex implements VectorIndex {
  /** A put reads the messages, deletes and inserts: always several statements. */
  readonly chunksInOneStatement = 0;

  private readonly sizes: VectorDimensions;

  constructor(
    private readonly db: SqlExecutor,
    known?: VectorSizeMemo,
    fills?: boolean,
  ) {
    // the size is fixed, and the tables made, by the first vector stored
    this.sizes = new VectorDimensions(
      db,
      async (size) => {
        for (const statement of tables(size)) await this.db.run(statement);
      },
      known,
      fills,
    );
  }

  /**
   * A statement that scans vectors: on the driver's read thread where it has one, so the scan
   * holds no other work of the process (SqlExecutor.allAside; in a transaction, here).
   */
  private scan<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
    return this.db.allAside !== undefined ? this.db.allAside<T>(sql, params) : this.db.all<T>(sql, params);
  }

  dimensions(): Promise<number | undefined> {
    return this.sizes.stored();
  }

  async exportPage(what: 'conclusions' | 'messages', workspaceIds: readonly string[] | undefined, after: readonly (string | number)[] | undefined, limit: number): Promise<VectorExportPage> {
    if ((await this.sizes.stored()) === undefined) return { rows: [], next: undefined };
    const floats = (bytes: Uint8Array): number[] => {
      // the read thread hands a Uint8Array, the connection a Buffer
      const blob = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const out = new Array<number>(blob.byteLength / 4);
      for (let i = 0; i < out.length; i++) out[i] = blob.readFloatLE(i * 4);
      return exportedFloats(out);
    };
    // `+`: the walk keeps to the table's own order (see SqlPortableStore.walk)
    const chosen = (alias: string) => (workspaceIds === undefined ? '' : ` AND +${alias}.workspace_id IN (SELECT value FROM json_each(?))`);
    const ids = workspaceIds === undefined ? [] : [JSON.stringify(workspaceIds)];
    if (what === 'conclusions') {
      const rows = await this.scan<{ pk: number; id: string; workspace_id: string; embedding: Uint8Array }>(
        `SELECT c.pk, c.id, c.workspace_id, v.embedding FROM conclusions c JOIN conclusion_vectors v ON v.rowid = c.pk
         WHERE c.pk > ? AND c.deleted_at IS NULL${chosen('c')} ORDER BY c.pk LIMIT ?`,
        [after === undefined ? 0 : Number(after[0]), ...ids, limit],
      );
      return {
        rows: rows.map((r) => ({ id: r.id, workspaceId: r.workspace_id, chunk: 0, vector: floats(r.embedding) })),
        next: rows.length < limit ? undefined : [Number(rows[rows.length - 1].pk)],
      };
    }
    // a chunk's rowid is its message's pk * MAX_CHUNKS_PER_MESSAGE + the chunk
    const from = after === undefined ? 0 : Number(after[0]) * MAX_CHUNKS_PER_MESSAGE + Number(after[1]) + 1;
    const rows = await this.scan<{ pk: number; id: string; workspace_id: string; rowid: number; embedding: Uint8Array }>(
      `SELECT m.pk, m.id, m.workspace_id, e.rowid, e.embedding FROM message_embeddings e JOIN messages m ON m.pk = e.rowid / ${MAX_CHUNKS_PER_MESSAGE}
       WHERE e.rowid >= ?${chosen('m')} ORDER BY e.rowid LIMIT ?`,
      [from, ...ids, limit],
    );
    const last = rows[rows.length - 1];
    return {
      rows: rows.map((r) => ({ id: r.id, workspaceId: r.workspace_id, chunk: Number(r.rowid) % MAX_CHUNKS_PER_MESSAGE, vector: floats(r.embedding) })),
      next: rows.length < limit ? undefined : [Number(last.pk), Number(last.rowid) % MAX_CHUNKS_PER_MESSAGE],
    };
  }

  checkDimensions(configured: number): Promise<void> {
    return this.sizes.check(configured);
  }

  async fixDimensions(): Promise<void> {
    // one writer at a time: the put fixes the size inside its transaction, as it always did
  }

  async putConclusions(rows: ConclusionVector[]): Promise<void> {
    if (rows.length === 0) return;
    await this.sizes.fix(vectorSize(rows));
    // PUT_BATCH rows at a time: their conclusions in one statement, their vectors inserted by one
    // (a vec0 table deletes by rowid only one at a time, so a vector replaced goes on its own); a
    // conclusion named twice keeps its last vector
    for (const chunk of putBatches(rows, (row) => [row.workspaceId, row.conclusionId], PUT_BATCH)) {
      const found = await this.db.all<{ at: number; pk: number; collection: string; level: string; session_id: string }>(
        `SELECT r.key AS at, c.pk, json_array(c.workspace_id, c.observer_id, c.observed_id) AS collection, c.level, coalesce(c.session_id, '') AS session_id
         FROM json_each(?) r JOIN conclusions c ON c.workspace_id = r.value ->> 0 AND c.id = r.value ->> 1 AND c.deleted_at IS NULL ORDER BY r.key`,
        [JSON.stringify(chunk.map((row) => [row.workspaceId, row.conclusionId]))],
      );
      if (found.length === 0) continue;
      for (const f of found) await this.db.run('DELETE FROM conclusion_vectors WHERE rowid = ?', [BigInt(f.pk)]);
      await this.db.run(
        `INSERT INTO conclusion_vectors (rowid, collection, embedding, level, session_id) VALUES ${found.map(() => '(?, ?, ?, ?, ?)').join(', ')}`,
        found.flatMap((f) => [BigInt(f.pk), f.collection, blob(chunk[Number(f.at)].vector), f.level, f.session_id]),
      );
    }
  }

  async copyConclusionVectors(workspaceId: string, pairs: readonly { fromId: string; toId: string }[]): Promise<string[]> {
    const missing: string[] = [];
    if ((await this.dimensions()) === undefined) return pairs.map((pair) => pair.toId);
    for (const { fromId, toId } of pairs) {
      const source = await this.db.get<{ embedding: Buffer }>(
        'SELECT v.embedding FROM conclusions c JOIN conclusion_vectors v ON v.rowid = c.pk WHERE c.workspace_id = ? AND c.id = ?',
        [workspaceId, fromId],
      );
      const target = await this.db.get<{ pk: number }>('SELECT pk FROM conclusions WHERE workspace_id = ? AND id = ? AND deleted_at IS NULL', [workspaceId, toId]);
      if (target === undefined) continue;
      if (source === undefined) {
        missing.push(toId);
        continue;
      }
      await this.db.run('DELETE FROM conclusion_vectors WHERE rowid = ?', [BigInt(target.pk)]);
      await this.db.run(
        `INSERT INTO conclusion_vectors (rowid, collection, embedding, level, session_id)
         SELECT c.pk, json_array(c.workspace_id, c.observer_id, c.observed_id), ?, c.level, coalesce(c.session_id, '')
         FROM conclusions c WHERE c.pk = ?`,
        [source.embedding, target.pk],
      );
    }
    return missing;
  }

  async nearestConclusions(query: ConclusionVectorQuery): Promise<Neighbour<'conclusionId'>[]> {
    const exclude = new Set(query.excludeIds ?? []);
    const k = Math.min(MAX_NEIGHBOURS, query.k + exclude.size);
    if (k <= 0 || (await this.dimensions()) === undefined) return [];
    const where = ['v.embedding MATCH ?', 'v.k = ?', `v.collection = ${COLLECTION}`];
    const params: unknown[] = [blob(query.vector), k, query.workspaceId, query.observerId, query.observedId];
    if (query.levels !== undefined) {
      // a metadata column: sqlite-vec applies it during the KNN scan, so k counts only these
      if (query.levels.length === 0) return [];
      where.push(`v.level IN (${query.levels.map(() => '?').join(', ')})`);
      params.push(...query.levels);
    }
    if (query.sessionId !== undefined) {
      where.push('v.session_id = ?');
      params.push(query.sessionId ?? '');
    }
    const rows = await this.scan<{ id: string; distance: number }>(
      `SELECT c.id, n.distance FROM (SELECT v.rowid AS pk, v.distance FROM conclusion_vectors v WHERE ${where.join(' AND ')}) n
       JOIN conclusions c ON c.pk = n.pk WHERE c.deleted_at IS NULL ORDER BY n.distance, c.pk`,
      params,
    );
    return rows
      .filter((row) => !exclude.has(row.id) && (query.maxDistance === undefined || row.distance <= query.maxDistance))
      .slice(0, query.k)
      .map((row) => ({ conclusionId: row.id, distance: row.distance }));
  }

  async putMessageChunks(rows: MessageChunkVector[]): Promise<void> {
    if (rows.length === 0) return;
    await this.sizes.fix(vectorSize(rows));
    checkChunkNumbers(rows);
    // as putConclusions: PUT_BATCH rows at a time, a chunk named twice keeps its last vector
    for (const chunk of putBatches(rows, (row) => [row.workspaceId, row.messageId, row.chunk], PUT_BATCH)) {
      const found = await this.db.all<ChunkPlace & { at: number; pk: number }>(
        `SELECT r.key AS at, m.pk, m.workspace_id, m.session_id, m.peer_id, s.pk AS session_pk
         FROM json_each(?) r JOIN messages m ON m.workspace_id = r.value ->> 0 AND m.id = r.value ->> 1
         JOIN sessions s ON s.workspace_id = m.workspace_id AND s.id = m.session_id ORDER BY r.key`,
        [JSON.stringify(chunk.map((row) => [row.workspaceId, row.messageId]))],
      );
      if (found.length === 0) continue;
      const rowids = found.map((f) => BigInt(f.pk) * BigInt(MAX_CHUNKS_PER_MESSAGE) + BigInt(chunk[Number(f.at)].chunk));
      // the plain table by its primary key; its trigger deletes each one's signs by rowid
      await this.db.run(`DELETE FROM message_embeddings WHERE rowid IN (${rowids.map(() => '?').join(', ')})`, rowids);
      await insertChunks(
        this.db,
        found.map((f, i) => ({ rowid: rowids[i], place: f, floats: blob(chunk[Number(f.at)].vector) })),
      );
    }
  }

  async nearestMessages(query: MessageVectorQuery): Promise<Neighbour<'messageId'>[]> {
    if (query.k <= 0 || (await this.dimensions()) === undefined) return [];
    // a message may have several chunks: ask for more, keep each message's nearest
    const k = Math.min(MAX_NEIGHBOURS, query.k * 4);
    if (query.sessionIds?.length === 0) return [];
    const partitions = await this.partitionsOf(query);
    if (partitions?.sessions.length === 0) return [];
    const vector = blob(query.vector);
    const where = ['s.embedding MATCH vec_bit(?)', 's.k = ?', 's.workspace_id = ?'];
    const candidates = partitions === undefined ? signCandidates(query.k) : partitionCandidates(query.k, partitions.sessions.length);
    const params: unknown[] = [vector, signBits(query.vector), candidates, query.workspaceId];
    if (query.sessionId !== undefined) {
      where.push('s.session_id = ?');
      params.push(query.sessionId);
    }
    if (partitions !== undefined) {
      // each partition is searched apart and keeps its own candidates
      where.push(`s.session_id IN (${partitions.sessions.map(() => '?').join(', ')})`);
      params.push(...partitions.sessions);
    }
    if (query.sessionIds !== undefined && partitions?.from !== 'sessionIds') {
      where.push('s.session_pk IN (SELECT x.pk FROM sessions x WHERE x.workspace_id = ? AND x.id IN (SELECT value FROM json_each(?)))');
      params.push(query.workspaceId, JSON.stringify(query.sessionIds));
    }
    if (query.memberOf !== undefined && partitions?.from !== 'memberOf') {
      // index-only through session_peers_peer_order
      where.push('s.session_pk IN (SELECT sp.session_pk FROM session_peers sp WHERE sp.workspace_id = ? AND sp.peer_id = ?)');
      params.push(query.workspaceId, query.memberOf);
    }
    if (query.peerId !== undefined) {
      where.push('s.peer_id = ?');
      params.push(query.peerId);
    }
    params.push(k);
    const rows = await this.scan<{ id: string; distance: number }>(
      `SELECT m.id, vec_distance_cosine(e.embedding, ?) AS distance
       FROM (SELECT s.rowid AS vid FROM message_embedding_signs s WHERE ${where.join(' AND ')}) n
       JOIN message_embeddings e ON e.rowid = n.vid
       JOIN messages m ON m.pk = n.vid / ${MAX_CHUNKS_PER_MESSAGE}
       ORDER BY distance, m.pk LIMIT ?`,
      params,
    );
    const seen = new Set<string>();
    const out: Neighbour<'messageId'>[] = [];
    for (const row of rows) {
      if (seen.has(row.id)) continue;
      seen.add(row.id);
      out.push({ messageId: row.id, distance: row.distance });
      if (out.length === query.k) break;
    }
    return out;
  }

  /**
   * The sessions whose partitions a search reads when it is of at most PARTITION_SEARCHES of
   * them: its list of sessions, else the sessions of the peer it is limited to. Undefined: the
   * workspace is scanned.
   */
  private async partitionsOf(query: MessageVectorQuery): Promise<{ sessions: string[]; from: 'sessionIds' | 'memberOf' } | undefined> {
    if (query.sessionId !== undefined) return undefined;
    if (query.sessionIds !== undefined && query.sessionIds.length <= PARTITION_SEARCHES) return { sessions: [...new Set(query.sessionIds)], from: 'sessionIds' };
    if (query.memberOf === undefined) return undefined;
    const sessions = await memberSessions(this.db, query.workspaceId, query.memberOf, PARTITION_SEARCHES);
    return sessions === undefined ? undefined : { sessions, from: 'memberOf' };
  }

  async clear(): Promise<void> {
    this.sizes.forget();
    for (const statement of DROP) await this.db.run(statement);
    await this.db.run('DELETE FROM store_settings WHERE name = ?', [DIMENSIONS_SETTING]);
  }
}
