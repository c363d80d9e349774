import type { SqlDriver, SqlExecutor } from '../sql/driver.js';
import { messageVectorParts, PART_DEFAULTS, upkeepMessageVectors, type PartOptions, type PartStep } from './message-vector-parts.js';
import {
  DIMENSIONS_SETTING,
  VectorDimensions,
  type VectorSizeMemo,
  MAX_NEIGHBOURS,
  memberSessions,
  vectorSize,
  checkChunkNumbers,
  putBatches,
  vectorText,
  type ConclusionVector,
  type ConclusionVectorQuery,
  type MessageChunkVector,
  type MessageVectorQuery,
  type Neighbour,
  type VectorIndex,
  type VectorExportPage,
  type VectorLayout,
  exportedFloats,
} from '../vector-index.js';

/*
 * pgvector (migration 0009). The `embedding` columns are created without a size; when the first
 * vector is stored they take it (`vector(n)`) and the conclusions' get their HNSW index (cosine,
 * m 16, ef_construction 64), which needs a fixed size. Message vectors are kept in parts
 * (migration 0048, message-vector-parts.ts): the newest in an open part searched exactly, the
 * rest in sealed parts whose HNSW indexes are built at once by the worker's upkeep. A query names
 * its collection (workspace, observer, observed; or workspace and session): the planner reads a
 * small collection through its B-tree index and sorts it exactly, and a large one through HNSW,
 * with iterative index scans (set per connection by postgres-driver.ts) so that filtered searches
 * still return k rows, in distance order, which lets the planner merge the parts' scans. A
 * conclusion search orders by distance and pk, which keeps it on the exact plan for collections
 * of tens of thousands (docs/decisions/0003-vectors-sqlite-vec-pgvector.md).
 */

const CONCLUSION_INDEX =
  'CREATE INDEX IF NOT EXISTS conclusion_vectors_hnsw ON conclusion_vectors USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)';

/** Vectors stored by one statement (a statement's parameters hold them as text: about 20 KB each at 1,536 dimensions). */
const PUT_BATCH = 100;

/** A peer's sessions up to this many are passed to a message search as a list, more by a subquery. */
export const MEMBER_SESSIONS_LISTED = 1000;

/** What a fixed size needs: the columns typed, the conclusions' HNSW index built. */
async function typeColumns(db: SqlExecutor, size: number): Promise<void> {
  const n = Math.trunc(size);
  await db.run(`ALTER TABLE conclusion_vectors ALTER COLUMN embedding TYPE vector(${n})`);
  await db.run(`ALTER TABLE message_vectors ALTER COLUMN embedding TYPE vector(${n})`);
  await db.run(CONCLUSION_INDEX);
}

export class PostgresVectorIndex implements VectorIndex {
  /** A put of up to PUT_BATCH chunks is one INSERT. */
  readonly chunksInOneStatement = PUT_BATCH;

  private readonly sizes: VectorDimensions;

  private readonly parts: PartOptions;

  /**
   * `driver`: the connections of a store outside a transaction (the upkeep opens its own);
   * `parts`: the parts' thresholds (tests make them small).
   */
  constructor(
    private readonly db: SqlExecutor,
    known?: VectorSizeMemo,
    private readonly driver?: SqlDriver,
    parts?: Partial<PartOptions>,
  ) {
    const fills = driver !== undefined;
    this.parts = { ...PART_DEFAULTS, ...parts };
    // the size is fixed, the columns typed and indexed, by the first vector stored
    this.sizes = new VectorDimensions(db, (size) => typeColumns(db, size), known, fills);
  }

  async fixDimensions(size: number): Promise<void> {
    const driver = this.driver;
    if (driver === undefined || (await this.sizes.stored()) !== undefined) return this.sizes.fix(size);
    // The first vectors: the columns typed in a transaction of their own. Inside the caller's,
    // ALTER TABLE holds the vector tables ACCESS EXCLUSIVE until that commit while the put waits
    // for the message rows it refers to: a purge that had deleted some of them and goes on
    // deleting waited for the vector table, a deadlock (background-locks.test.ts found it once
    // in about a dozen runs).
    await driver.transaction((tx) => new VectorDimensions(tx, (n) => typeColumns(tx, n)).fix(size));
  }

  dimensions(): Promise<number | undefined> {
    return this.sizes.stored();
  }

  async exportPage(what: 'conclusions' | 'messages', workspaceIds: readonly string[] | undefined, after: readonly (string | number)[] | undefined, limit: number): Promise<VectorExportPage> {
    if ((await this.sizes.stored()) === undefined) return { rows: [], next: undefined };
    const floats = (text: string): number[] => exportedFloats(JSON.parse(text) as number[]);
    const chosen = (alias: string) => (workspaceIds === undefined ? '' : ` AND ${alias}.workspace_id IN (SELECT jsonb_array_elements_text(?::jsonb))`);
    const ids = workspaceIds === undefined ? [] : [JSON.stringify(workspaceIds)];
    if (what === 'conclusions') {
      const rows = await this.db.all<{ pk: number; id: string; workspace_id: string; embedding: string }>(
        `SELECT c.pk, c.id, c.workspace_id, v.embedding::text AS embedding FROM conclusions c JOIN conclusion_vectors v ON v.conclusion_pk = c.pk
         WHERE c.pk > ? AND c.deleted_at IS NULL${chosen('c')} ORDER BY c.pk LIMIT ?`,
        [after === undefined ? 0 : Number(after[0]), ...ids, limit],
      );
      return {
        rows: rows.map((r) => ({ id: r.id, workspaceId: r.workspace_id, chunk: 0, vector: floats(r.embedding) })),
        next: rows.length < limit ? undefined : [Number(rows[rows.length - 1].pk)],
      };
    }
    const [afterPk, afterChunk] = after === undefined ? [0, -1] : [Number(after[0]), Number(after[1])];
    const rows = await this.db.all<{ pk: number; id: string; workspace_id: string; chunk: number; embedding: string }>(
      `SELECT m.pk, m.id, m.workspace_id, v.chunk, v.embedding::text AS embedding FROM message_vectors v JOIN messages m ON m.pk = v.message_pk
       WHERE (v.message_pk > ? OR (v.message_pk = ? AND v.chunk > ?))${chosen('m')} ORDER BY v.message_pk, v.chunk LIMIT ?`,
      [afterPk, afterPk, afterChunk, ...ids, limit],
    );
    const last = rows[rows.length - 1];
    return {
      rows: rows.map((r) => ({ id: r.id, workspaceId: r.workspace_id, chunk: Number(r.chunk), vector: floats(r.embedding) })),
      next: rows.length < limit ? undefined : [Number(last.pk), Number(last.chunk)],
    };
  }

  checkDimensions(configured: number): Promise<void> {
    return this.sizes.check(configured);
  }

  async putConclusions(rows: ConclusionVector[]): Promise<void> {
    if (rows.length === 0) return;
    await this.sizes.fix(vectorSize(rows));
    // PUT_BATCH rows a statement (one row a statement was one round trip each: 121 vectors a
    // second under the soak's load); a conclusion named twice keeps its last vector, as one
    // statement a row did (ON CONFLICT DO UPDATE may not touch a row twice in one statement)
    for (const chunk of putBatches(rows, (row) => [row.workspaceId, row.conclusionId], PUT_BATCH)) {
      await this.db.run(
        `INSERT INTO conclusion_vectors (conclusion_pk, workspace_id, observer_id, observed_id, level, session_id, embedding)
         SELECT c.pk, c.workspace_id, c.observer_id, c.observed_id, c.level, c.session_id, r.embedding::vector
         FROM unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS r(workspace_id, id, embedding, at)
         JOIN conclusions c ON c.workspace_id = r.workspace_id AND c.id = r.id AND c.deleted_at IS NULL
         ORDER BY r.at
         ON CONFLICT (conclusion_pk) DO UPDATE SET embedding = excluded.embedding`,
        [chunk.map((row) => row.workspaceId), chunk.map((row) => row.conclusionId), chunk.map((row) => vectorText(row.vector))],
      );
    }
  }

  async copyConclusionVectors(workspaceId: string, pairs: readonly { fromId: string; toId: string }[]): Promise<string[]> {
    const missing: string[] = [];
    for (const { fromId, toId } of pairs) {
      const copied = await this.db.run(
        `INSERT INTO conclusion_vectors (conclusion_pk, workspace_id, observer_id, observed_id, level, session_id, embedding)
         SELECT t.pk, t.workspace_id, t.observer_id, t.observed_id, t.level, t.session_id, v.embedding
         FROM conclusions t, conclusions f JOIN conclusion_vectors v ON v.conclusion_pk = f.pk
         WHERE t.workspace_id = ? AND t.id = ? AND t.deleted_at IS NULL AND f.workspace_id = ? AND f.id = ?
         ON CONFLICT (conclusion_pk) DO UPDATE SET embedding = excluded.embedding`,
        [workspaceId, toId, workspaceId, fromId],
      );
      if (copied === 0) missing.push(toId);
    }
    return missing;
  }

  async nearestConclusions(query: ConclusionVectorQuery): Promise<Neighbour<'conclusionId'>[]> {
    const exclude = new Set(query.excludeIds ?? []);
    const k = Math.min(MAX_NEIGHBOURS, query.k + exclude.size);
    if (k <= 0 || (await this.dimensions()) === undefined) return [];
    const vector = vectorText(query.vector);
    const where = ['v.workspace_id = ?', 'v.observer_id = ?', 'v.observed_id = ?'];
    const params: unknown[] = [vector, query.workspaceId, query.observerId, query.observedId];
    if (query.levels !== undefined) {
      if (query.levels.length === 0) return [];
      where.push('v.level = ANY (?::text[])');
      params.push(query.levels);
    }
    if (query.sessionId !== undefined) {
      where.push(query.sessionId === null ? 'v.session_id IS NULL' : 'v.session_id = ?');
      if (query.sessionId !== null) params.push(query.sessionId);
    }
    if (query.maxDistance !== undefined) {
      where.push('(v.embedding <=> ?::vector) <= ?');
      params.push(vector, query.maxDistance);
    }
    // the k nearest of the collection first, then their conclusions by primary key: joined before
    // the limit, the planner hashed every conclusion of the store to join a large collection's
    // rows (19 ms for a collection of 10,000 among 110,000, growing with the table; 5.7 ms now).
    // The pk after the distance keeps ties in one order, and the plan exact (the collection's
    // B-tree, then a sort). A soft-deleted conclusion's vector is deleted by a trigger; the check
    // stays for safety.
    const rows = await this.db.all<{ id: string; distance: number }>(
      `SELECT c.id, n.distance FROM (
         SELECT v.conclusion_pk, v.embedding <=> ?::vector AS distance FROM conclusion_vectors v
         WHERE ${where.join(' AND ')} ORDER BY v.embedding <=> ?::vector, v.conclusion_pk LIMIT ?
       ) n JOIN conclusions c ON c.pk = n.conclusion_pk WHERE c.deleted_at IS NULL ORDER BY n.distance, c.pk`,
      [...params, vector, k],
    );
    return rows
      .filter((row) => !exclude.has(row.id))
      .slice(0, query.k)
      .map((row) => ({ conclusionId: row.id, distance: Number(row.distance) }));
  }

  async putMessageChunks(rows: MessageChunkVector[]): Promise<void> {
    if (rows.length === 0) return;
    await this.sizes.fix(vectorSize(rows));
    checkChunkNumbers(rows);
    // as putConclusions: PUT_BATCH rows a statement, a chunk named twice keeps its last vector;
    // the messages locked against deletion until the commit (their deletion's trigger deletes
    // their vectors, and would not see these yet)
    for (const chunk of putBatches(rows, (row) => [row.workspaceId, row.messageId, row.chunk], PUT_BATCH)) {
      await this.db.run(
        `INSERT INTO message_vectors (message_pk, chunk, workspace_id, session_id, peer_id, embedding)
         SELECT m.pk, r.chunk, m.workspace_id, m.session_id, m.peer_id, r.embedding::vector
         FROM unnest(?::text[], ?::text[], ?::int[], ?::text[]) WITH ORDINALITY AS r(workspace_id, id, chunk, embedding, at)
         JOIN messages m ON m.workspace_id = r.workspace_id AND m.id = r.id
         ORDER BY r.at
         FOR KEY SHARE OF m
         ON CONFLICT (message_pk, chunk) DO UPDATE SET embedding = excluded.embedding`,
        [chunk.map((row) => row.workspaceId), chunk.map((row) => row.messageId), chunk.map((row) => row.chunk), chunk.map((row) => vectorText(row.vector))],
      );
    }
  }

  async nearestMessages(query: MessageVectorQuery): Promise<Neighbour<'messageId'>[]> {
    const k = Math.min(MAX_NEIGHBOURS, query.k);
    if (k <= 0 || (await this.dimensions()) === undefined) return [];
    const vector = vectorText(query.vector);
    const where = ['v.workspace_id = ?'];
    const params: unknown[] = [vector, query.workspaceId];
    if (query.sessionId !== undefined) {
      where.push('v.session_id = ?');
      params.push(query.sessionId);
    }
    if (query.sessionIds !== undefined) {
      if (query.sessionIds.length === 0) return [];
      where.push('v.session_id = ANY (?::text[])');
      params.push(query.sessionIds);
    }
    if (query.memberOf !== undefined) {
      // the peer's sessions as a list, so the planner sees how many rows they hold (as for
      // sessionIds): behind a subquery it took the HNSW index for a peer of 4 sessions among
      // 1,000 and walked it 170 ms (100,000 chunks; a list: 1 ms through the session index)
      const sessions = await memberSessions(this.db, query.workspaceId, query.memberOf, MEMBER_SESSIONS_LISTED);
      if (sessions?.length === 0) return [];
      if (sessions !== undefined) {
        where.push('v.session_id = ANY (?::text[])');
        params.push(sessions);
      } else {
        where.push('v.session_id IN (SELECT sp.session_id FROM session_peers sp WHERE sp.workspace_id = v.workspace_id AND sp.peer_id = ?)');
        params.push(query.memberOf);
      }
    }
    if (query.peerId !== undefined) {
      where.push('v.peer_id = ?');
      params.push(query.peerId);
    }
    // a message may have several chunks: take more, keep each message's nearest
    const rows = await this.db.all<{ id: string; distance: number }>(
      `SELECT m.id, n.distance FROM (
         SELECT c.message_pk, min(c.distance) AS distance FROM (
           SELECT v.message_pk, v.embedding <=> ?::vector AS distance
           FROM message_vectors v WHERE ${where.join(' AND ')} ORDER BY v.embedding <=> ?::vector LIMIT ?
         ) c GROUP BY c.message_pk
       ) n JOIN messages m ON m.pk = n.message_pk ORDER BY n.distance, m.pk LIMIT ?`,
      [...params, vector, Math.min(MAX_NEIGHBOURS, k * 4), k],
    );
    return rows.map((row) => ({ messageId: row.id, distance: Number(row.distance) }));
  }

  upkeep(signal?: AbortSignal): Promise<PartStep | undefined> {
    if (this.driver === undefined) return Promise.resolve(undefined);
    return upkeepMessageVectors(this.driver, this.parts, signal);
  }

  async layout(): Promise<VectorLayout> {
    const levels = new Map<number, { level: number; parts: number; rows: number }>();
    for (const part of await messageVectorParts(this.db)) {
      const at = levels.get(part.level) ?? levels.set(part.level, { level: part.level, parts: 0, rows: 0 }).get(part.level)!;
      at.parts++;
      at.rows += part.rows;
    }
    // the open part holds at most a seal's worth while the upkeep keeps up: counted, not estimated
    const [open] = await this.db.all<{ n: string }>('SELECT count(*) AS n FROM message_vectors_open');
    return { levels: [...levels.values()].sort((a, b) => a.level - b.level), openRows: Number(open.n) };
  }

  async clear(): Promise<void> {
    this.sizes.forget();
    await this.db.run('DROP INDEX IF EXISTS conclusion_vectors_hnsw');
    // the sealed parts go with their indexes; the open part is emptied
    for (const part of await messageVectorParts(this.db)) {
      await this.db.run(`ALTER TABLE message_vectors DETACH PARTITION ${part.name}`);
      await this.db.run(`DROP TABLE ${part.name}`);
    }
    await this.db.run('DELETE FROM message_vector_parts');
    await this.db.run('TRUNCATE conclusion_vectors, message_vectors');
    await this.db.run('ALTER TABLE conclusion_vectors ALTER COLUMN embedding TYPE vector');
    await this.db.run('ALTER TABLE message_vectors ALTER COLUMN embedding TYPE vector');
    await this.db.run('DELETE FROM store_settings WHERE name = ?', [DIMENSIONS_SETTING]);
  }
}
