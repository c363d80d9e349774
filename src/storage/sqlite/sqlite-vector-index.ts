import type { SqlExecutor } from '../sql/driver.js';
import {
  DIMENSIONS_SETTING,
  VectorDimensions,
  MAX_CHUNKS_PER_MESSAGE,
  MAX_NEIGHBOURS,
  vectorSize,
  type ConclusionVector,
  type ConclusionVectorQuery,
  type MessageChunkVector,
  type MessageVectorQuery,
  type Neighbour,
  type VectorIndex,
} from '../vector-index.js';

/*
 * sqlite-vec `vec0` tables (the extension is loaded by sqlite-driver.ts). A vec0 column has a
 * fixed size, so the tables are created with the first vector, and dropped by `clear`.
 * - conclusion_vectors: rowid = conclusions.pk; partition key `collection` (workspace, observer,
 *   observed as a JSON array), so a query reads only that collection's chunks; metadata columns
 *   `level` and `session_id` ('' for none) narrow the scan.
 * - message_vectors: rowid = messages.pk * 1024 + chunk; partition keys workspace and session.
 * Small chunks (16 vectors) keep a collection of a few conclusions from reserving space for a
 * thousand; bench/README.md has the measurements. Triggers drop the vectors of soft-deleted and
 * deleted conclusions and of deleted messages (cascades from sessions, peers and workspaces
 * included: SQLite runs triggers for foreign-key actions).
 */

const CHUNK_SIZE = 16;

const COLLECTION = 'json_array(?, ?, ?)';

function blob(vector: ArrayLike<number>): Buffer {
  const floats = Float32Array.from(vector);
  return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength);
}

function tables(dimensions: number): string[] {
  const n = Math.trunc(dimensions);
  return [
    `CREATE VIRTUAL TABLE IF NOT EXISTS conclusion_vectors USING vec0(
      collection TEXT PARTITION KEY, embedding float[${n}] distance_metric=cosine,
      level TEXT, session_id TEXT, chunk_size=${CHUNK_SIZE})`,
    `CREATE VIRTUAL TABLE IF NOT EXISTS message_vectors USING vec0(
      workspace_id TEXT PARTITION KEY, session_id TEXT PARTITION KEY, embedding float[${n}] distance_metric=cosine,
      peer_id TEXT, chunk_size=${CHUNK_SIZE})`,
    `CREATE TRIGGER IF NOT EXISTS conclusions_vector_forget AFTER UPDATE OF deleted_at ON conclusions
      WHEN NEW.deleted_at IS NOT NULL BEGIN
        DELETE FROM conclusion_vectors WHERE rowid = NEW.pk;
      END`,
    `CREATE TRIGGER IF NOT EXISTS conclusions_vector_delete AFTER DELETE ON conclusions BEGIN
        DELETE FROM conclusion_vectors WHERE rowid = OLD.pk;
      END`,
    `CREATE TRIGGER IF NOT EXISTS messages_vector_delete AFTER DELETE ON messages BEGIN
        DELETE FROM message_vectors WHERE rowid BETWEEN OLD.pk * ${MAX_CHUNKS_PER_MESSAGE} AND OLD.pk * ${MAX_CHUNKS_PER_MESSAGE} + ${MAX_CHUNKS_PER_MESSAGE - 1};
      END`,
  ];
}

const DROP = [
  'DROP TRIGGER IF EXISTS conclusions_vector_forget',
  'DROP TRIGGER IF EXISTS conclusions_vector_delete',
  'DROP TRIGGER IF EXISTS messages_vector_delete',
  'DROP TABLE IF EXISTS conclusion_vectors',
  'DROP TABLE IF EXISTS message_vectors',
];

export class SqliteVectorIndex implements VectorIndex {
  private readonly sizes: VectorDimensions;

  constructor(private readonly db: SqlExecutor) {
    // the size is fixed, and the tables made, by the first vector stored
    this.sizes = new VectorDimensions(db, async (size) => {
      for (const statement of tables(size)) await this.db.run(statement);
    });
  }

  dimensions(): Promise<number | undefined> {
    return this.sizes.stored();
  }

  checkDimensions(configured: number): Promise<void> {
    return this.sizes.check(configured);
  }

  async putConclusions(rows: ConclusionVector[]): Promise<void> {
    if (rows.length === 0) return;
    await this.sizes.fix(vectorSize(rows));
    for (const row of rows) {
      const found = await this.db.get<{ pk: number }>('SELECT pk FROM conclusions WHERE workspace_id = ? AND id = ? AND deleted_at IS NULL', [row.workspaceId, row.conclusionId]);
      if (found === undefined) continue;
      await this.db.run('DELETE FROM conclusion_vectors WHERE rowid = ?', [BigInt(found.pk)]);
      await this.db.run(
        `INSERT INTO conclusion_vectors (rowid, collection, embedding, level, session_id)
         SELECT c.pk, json_array(c.workspace_id, c.observer_id, c.observed_id), ?, c.level, coalesce(c.session_id, '')
         FROM conclusions c WHERE c.pk = ?`,
        [blob(row.vector), found.pk],
      );
    }
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
    const rows = await this.db.all<{ id: string; distance: number }>(
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
    for (const row of rows) {
      if (!Number.isInteger(row.chunk) || row.chunk < 0 || row.chunk >= MAX_CHUNKS_PER_MESSAGE) throw new RangeError(`Chunk numbers run from 0 to ${MAX_CHUNKS_PER_MESSAGE - 1}`);
      const found = await this.db.get<{ pk: number }>('SELECT pk FROM messages WHERE workspace_id = ? AND id = ?', [row.workspaceId, row.messageId]);
      if (found === undefined) continue;
      const rowid = BigInt(found.pk) * BigInt(MAX_CHUNKS_PER_MESSAGE) + BigInt(row.chunk);
      await this.db.run('DELETE FROM message_vectors WHERE rowid = ?', [rowid]);
      await this.db.run(
        `INSERT INTO message_vectors (rowid, workspace_id, session_id, peer_id, embedding)
         SELECT ?, m.workspace_id, m.session_id, m.peer_id, ? FROM messages m WHERE m.pk = ?`,
        [rowid, blob(row.vector), found.pk],
      );
    }
  }

  async nearestMessages(query: MessageVectorQuery): Promise<Neighbour<'messageId'>[]> {
    if (query.k <= 0 || (await this.dimensions()) === undefined) return [];
    // a message may have several chunks: ask for more, keep each message's nearest
    const k = Math.min(MAX_NEIGHBOURS, query.k * 4);
    const where = ['v.embedding MATCH ?', 'v.k = ?', 'v.workspace_id = ?'];
    const params: unknown[] = [blob(query.vector), k, query.workspaceId];
    if (query.sessionId !== undefined) {
      where.push('v.session_id = ?');
      params.push(query.sessionId);
    }
    if (query.peerId !== undefined) {
      where.push('v.peer_id = ?');
      params.push(query.peerId);
    }
    const rows = await this.db.all<{ id: string; distance: number }>(
      `SELECT m.id, n.distance FROM (SELECT v.rowid AS vid, v.distance FROM message_vectors v WHERE ${where.join(' AND ')}) n
       JOIN messages m ON m.pk = n.vid / ${MAX_CHUNKS_PER_MESSAGE} ORDER BY n.distance, m.pk`,
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

  async clear(): Promise<void> {
    for (const statement of DROP) await this.db.run(statement);
    await this.db.run('DELETE FROM store_settings WHERE name = ?', [DIMENSIONS_SETTING]);
  }
}
