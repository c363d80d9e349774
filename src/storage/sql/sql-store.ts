import type {
  Created,
  FieldChanges,
  JsonObject,
  ListQuery,
  MembershipRecord,
  MessageRecord,
  MessageSearch,
  NewRow,
  Page,
  PeerRecord,
  SearchCandidate,
  SearchMatch,
  SessionListQuery,
  SessionOrder,
  SessionRecord,
  Store,
  FilterLimits,
  WebhookEndpointRecord,
  WorkspaceRecord,
} from '../store.js';
import { filterCondition, type FilterColumns } from './compile-filter.js';
import type { Dialect } from './dialect.js';
import { DIALECTS } from './dialects.js';
import type { SqlDriver, SqlExecutor } from './driver.js';
import { SqlJobStore } from './job-store.js';
import { SqlMemoryStore } from './memory-store.js';
import { SqlReasoningStore } from './reasoning-store.js';
import { SqlV1Store } from './v1-store.js';
import type { VectorIndex } from '../vector-index.js';
import { pageOffset } from './page-offset.js';
import { jsonText } from './json-text.js';
import { messageFromRow, type MessageRow } from './message-row.js';

interface WorkspaceRow {
  id: string;
  metadata: unknown;
  configuration: unknown;
  created_at: unknown;
}
interface PeerRow extends WorkspaceRow {
  workspace_id: string;
}
interface SessionRow extends PeerRow {
  is_active: unknown;
}
interface MembershipRow {
  peer_id: string;
  configuration: unknown;
  joined_at: unknown;
  left_at: unknown;
}
interface WebhookRow {
  id: string;
  workspace_id: string;
  url: string;
  created_at: unknown;
}

function filterColumns(alias: string, columns: string[]): FilterColumns {
  return { columns: Object.fromEntries(columns.map((c) => [c, `${alias}.${c}`])), metadata: `${alias}.metadata` };
}

const WORKSPACE_FILTER = filterColumns('w', ['id', 'created_at']);
const PEER_FILTER = filterColumns('p', ['id', 'created_at', 'workspace_id']);
const SESSION_FILTER = filterColumns('s', ['id', 'created_at', 'is_active', 'workspace_id']);
const MESSAGE_FILTER = filterColumns('m', ['workspace_id', 'session_id', 'peer_id', 'token_count', 'created_at']);

/** Orders of a session list (SessionOrder). */
const SESSION_ORDER: Record<SessionOrder, string[]> = {
  created: ['s.created_at'],
  'created-then-insertion': ['s.created_at', 's.pk'],
};

const MESSAGE_COLUMNS = 'm.id, m.workspace_id, m.session_id, m.peer_id, m.content, m.metadata, m.token_count, m.created_at';
const WORKSPACE_COLUMNS = 'w.id, w.metadata, w.configuration, w.created_at';
const PEER_COLUMNS = 'p.id, p.workspace_id, p.metadata, p.configuration, p.created_at';
const SESSION_COLUMNS = 's.id, s.workspace_id, s.is_active, s.metadata, s.configuration, s.created_at';

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

/** The one Store implementation: queries written once, dialect differences in the codec. */
export class SqlStore implements Store {
  readonly dialect: 'sqlite' | 'postgres';
  readonly filterLimits: FilterLimits;
  private readonly codec: Dialect;

  /**
   * `queued` is shared by a store and the stores of its transactions; `onQueued` is what this
   * store's job queue calls after an enqueue: tell at once outside a transaction, after the
   * commit inside one.
   */
  constructor(
    private readonly db: SqlExecutor,
    private readonly driver?: SqlDriver,
    private readonly queued = new JobsQueued(),
    private readonly onQueued: () => void = () => queued.tell(),
  ) {
    this.dialect = db.dialect;
    this.codec = DIALECTS[db.dialect];
    this.filterLimits = { likePatternBytes: this.codec.likePatternBytes };
  }

  private jobStore: SqlJobStore | undefined;

  get jobs(): SqlJobStore {
    this.jobStore ??= new SqlJobStore(this.db, this.onQueued);
    return this.jobStore;
  }

  onJobsQueued(listener: () => void): () => void {
    return this.queued.listen(listener);
  }

  private v1Store: SqlV1Store | undefined;

  get v1(): SqlV1Store {
    this.v1Store ??= new SqlV1Store(this.db);
    return this.v1Store;
  }

  private reasoningStore: SqlReasoningStore | undefined;

  get reasoning(): SqlReasoningStore {
    this.reasoningStore ??= new SqlReasoningStore(this.db);
    return this.reasoningStore;
  }

  private memoryStore: SqlMemoryStore | undefined;

  get memory(): SqlMemoryStore {
    this.memoryStore ??= new SqlMemoryStore(this.db, (fn) => (this.driver === undefined ? fn(this.db) : this.driver.transaction(fn)));
    return this.memoryStore;
  }

  private vectorIndex: VectorIndex | undefined;

  get vectors(): VectorIndex {
    this.vectorIndex ??= this.codec.vectorIndex(this.db);
    return this.vectorIndex;
  }

  static over(driver: SqlDriver): SqlStore {
    return new SqlStore(driver, driver);
  }

  async transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    // Already inside one: join it.
    if (this.driver === undefined) return fn(this);
    let queuedJobs = false;
    const result = await this.driver.transaction((tx) => fn(new SqlStore(tx, undefined, this.queued, () => (queuedJobs = true))));
    if (queuedJobs) this.queued.tell();
    return result;
  }

  async checkAvailable(): Promise<void> {
    // inside a transaction the database has already answered
    if (this.driver !== undefined) await this.driver.probe();
  }

  // ------------------------------------------------------------ mapping

  private workspace(row: WorkspaceRow): WorkspaceRecord {
    const c = this.codec;
    return {
      id: row.id,
      metadata: c.readJson(row.metadata),
      configuration: c.readJson(row.configuration),
      createdAt: c.readTime(row.created_at),
    };
  }

  private peer(row: PeerRow): PeerRecord {
    const c = this.codec;
    return {
      id: row.id,
      workspaceId: row.workspace_id,
      metadata: c.readJson(row.metadata),
      configuration: c.readJson(row.configuration),
      createdAt: c.readTime(row.created_at),
    };
  }

  private session(row: SessionRow): SessionRecord {
    const c = this.codec;
    return {
      id: row.id,
      workspaceId: row.workspace_id,
      isActive: c.readBool(row.is_active),
      metadata: c.readJson(row.metadata),
      configuration: c.readJson(row.configuration),
      createdAt: c.readTime(row.created_at),
    };
  }

  private membership(row: MembershipRow): MembershipRecord {
    const c = this.codec;
    return {
      peerId: row.peer_id,
      configuration: c.readJson(row.configuration),
      joinedAt: c.readTime(row.joined_at),
      leftAt: row.left_at === null ? null : c.readTime(row.left_at),
    };
  }

  private message(row: MessageRow): MessageRecord {
    return messageFromRow(this.codec, row);
  }

  private webhook(row: WebhookRow): WebhookEndpointRecord {
    return { id: row.id, workspaceId: row.workspace_id, url: row.url, createdAt: this.codec.readTime(row.created_at) };
  }

  /**
   * Runs a page query and its count. `knownTotal` (a trigger-maintained counter) replaces the
   * count when there is no filter, so unfiltered pages cost O(page), not O(table).
   */
  private async page<R, T>(
    base: { from: string; where: string; params: unknown[]; order: string[] },
    select: string,
    query: ListQuery,
    model: FilterColumns,
    map: (row: R) => T,
    knownTotal?: () => Promise<number>,
  ): Promise<Page<T>> {
    const params = [...base.params];
    const filterSql = filterCondition(query.filter, model, this.codec, params);
    const where = filterSql === null ? base.where : `${base.where} AND (${filterSql})`;
    const direction = query.reverse ? 'DESC' : 'ASC';
    const order = base.order.map((column) => `${column} ${direction}`).join(', ');
    const offset = pageOffset(query.page, query.size);
    const rows = await this.db.all<R>(
      `SELECT ${select} FROM ${base.from} WHERE ${where} ORDER BY ${order} LIMIT ? OFFSET ?`,
      [...params, query.size, offset],
    );
    let total: number;
    if (filterSql === null && knownTotal !== undefined) {
      total = await knownTotal();
    } else if (offset === 0 && rows.length < query.size) {
      total = rows.length;
    } else {
      const counted = await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${base.from} WHERE ${where}`, params);
      total = Number(counted?.n ?? 0);
    }
    return { items: rows.map(map), total };
  }

  // ------------------------------------------------------------ workspaces

  async findWorkspace(id: string): Promise<WorkspaceRecord | undefined> {
    const row = await this.db.get<WorkspaceRow>(`SELECT ${WORKSPACE_COLUMNS} FROM workspaces w WHERE w.id = ?`, [id]);
    return row && this.workspace(row);
  }

  async createWorkspaceIfAbsent(row: NewRow, now: Date): Promise<Created<WorkspaceRecord>> {
    const c = this.codec;
    const inserted = await this.db.get<WorkspaceRow>(
      `INSERT INTO workspaces (id, metadata, configuration, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (id) DO NOTHING RETURNING id, metadata, configuration, created_at`,
      [row.id, c.json(row.metadata), c.json(row.configuration), c.time(now)],
    );
    if (inserted !== undefined) return { record: this.workspace(inserted), created: true };
    const existing = await this.findWorkspace(row.id);
    if (existing === undefined) throw new Error(`workspace ${row.id} vanished during get-or-create`);
    return { record: existing, created: false };
  }

  async updateWorkspace(id: string, changes: FieldChanges): Promise<WorkspaceRecord | undefined> {
    const { sets, params } = this.changes(changes);
    if (sets.length === 0) return this.findWorkspace(id);
    const row = await this.db.get<WorkspaceRow>(
      `UPDATE workspaces SET ${sets.join(', ')} WHERE id = ? RETURNING id, metadata, configuration, created_at`,
      [...params, id],
    );
    return row && this.workspace(row);
  }

  listWorkspaces(query: ListQuery): Promise<Page<WorkspaceRecord>> {
    return this.page<WorkspaceRow, WorkspaceRecord>(
      { from: 'workspaces w', where: '1 = 1', params: [], order: ['w.created_at', 'w.pk'] },
      WORKSPACE_COLUMNS,
      query,
      WORKSPACE_FILTER,
      (row) => this.workspace(row),
    );
  }

  async deleteWorkspace(id: string): Promise<boolean> {
    // Children first so the counters' triggers find the workspace row still present.
    await this.db.run('DELETE FROM messages WHERE workspace_id = ?', [id]);
    await this.db.run('DELETE FROM session_peers WHERE workspace_id = ?', [id]);
    return (await this.db.run('DELETE FROM workspaces WHERE id = ?', [id])) > 0;
  }

  async countActiveSessions(workspaceId: string): Promise<number> {
    const row = await this.db.get<{ n: number }>('SELECT active_session_count AS n FROM workspaces WHERE id = ?', [workspaceId]);
    return Number(row?.n ?? 0);
  }

  private changes(changes: FieldChanges): { sets: string[]; params: unknown[] } {
    const sets: string[] = [];
    const params: unknown[] = [];
    if (changes.metadata !== undefined) {
      sets.push('metadata = ?');
      params.push(this.codec.json(changes.metadata));
    }
    if (changes.configuration !== undefined) {
      sets.push('configuration = ?');
      params.push(this.codec.json(changes.configuration));
    }
    return { sets, params };
  }

  // ------------------------------------------------------------ peers

  async findPeer(workspaceId: string, id: string): Promise<PeerRecord | undefined> {
    const row = await this.db.get<PeerRow>(`SELECT ${PEER_COLUMNS} FROM peers p WHERE p.workspace_id = ? AND p.id = ?`, [
      workspaceId,
      id,
    ]);
    return row && this.peer(row);
  }

  async createPeerIfAbsent(workspaceId: string, row: NewRow, now: Date): Promise<Created<PeerRecord>> {
    const c = this.codec;
    const inserted = await this.db.get<PeerRow>(
      `INSERT INTO peers (workspace_id, id, metadata, configuration, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (workspace_id, id) DO NOTHING RETURNING id, workspace_id, metadata, configuration, created_at`,
      [workspaceId, row.id, c.json(row.metadata), c.json(row.configuration), c.time(now)],
    );
    if (inserted !== undefined) return { record: this.peer(inserted), created: true };
    const existing = await this.findPeer(workspaceId, row.id);
    if (existing === undefined) throw new Error(`peer ${row.id} vanished during get-or-create`);
    return { record: existing, created: false };
  }

  async ensurePeers(workspaceId: string, ids: string[], now: Date): Promise<void> {
    if (ids.length === 0) return;
    // Sorted, so concurrent transactions lock rows in one order and cannot deadlock.
    const sorted = [...new Set(ids)].sort();
    const time = this.codec.time(now);
    const values = sorted.map(() => "(?, ?, '{}', '{}', ?)").join(', ');
    const params = sorted.flatMap((id) => [workspaceId, id, time]);
    await this.db.run(
      `INSERT INTO peers (workspace_id, id, metadata, configuration, created_at) VALUES ${values}
       ON CONFLICT (workspace_id, id) DO NOTHING`,
      params,
    );
  }

  async updatePeer(workspaceId: string, id: string, changes: FieldChanges): Promise<PeerRecord | undefined> {
    const { sets, params } = this.changes(changes);
    if (sets.length === 0) return this.findPeer(workspaceId, id);
    const row = await this.db.get<PeerRow>(
      `UPDATE peers SET ${sets.join(', ')} WHERE workspace_id = ? AND id = ?
       RETURNING id, workspace_id, metadata, configuration, created_at`,
      [...params, workspaceId, id],
    );
    return row && this.peer(row);
  }

  listPeers(workspaceId: string, query: ListQuery): Promise<Page<PeerRecord>> {
    return this.page<PeerRow, PeerRecord>(
      { from: 'peers p', where: 'p.workspace_id = ?', params: [workspaceId], order: ['p.created_at', 'p.pk'] },
      PEER_COLUMNS,
      query,
      PEER_FILTER,
      (row) => this.peer(row),
      async () => {
        const row = await this.db.get<{ n: number }>('SELECT peer_count AS n FROM workspaces WHERE id = ?', [workspaceId]);
        return Number(row?.n ?? 0);
      },
    );
  }

  async peersVersion(workspaceId: string): Promise<string | undefined> {
    // v1_id is random per workspace row: a recreated workspace never matches an old token
    const row = await this.db.get<{ incarnation: string; v: number }>(
      'SELECT v1_id AS incarnation, peers_version AS v FROM workspaces WHERE id = ?',
      [workspaceId],
    );
    return row === undefined ? undefined : `${row.incarnation}.${row.v}`;
  }

  listSessionsOfPeer(workspaceId: string, peerId: string, query: SessionListQuery): Promise<Page<SessionRecord>> {
    const order = SESSION_ORDER[query.order];
    return this.page<SessionRow, SessionRecord>(
      {
        from: 'session_peers m JOIN sessions s ON s.workspace_id = m.workspace_id AND s.id = m.session_id',
        where: 'm.workspace_id = ? AND m.peer_id = ?',
        params: [workspaceId, peerId],
        order,
      },
      SESSION_COLUMNS,
      query,
      SESSION_FILTER,
      (row) => this.session(row),
    );
  }

  // ------------------------------------------------------------ sessions

  async findSession(workspaceId: string, id: string): Promise<SessionRecord | undefined> {
    const row = await this.db.get<SessionRow>(
      `SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.workspace_id = ? AND s.id = ?`,
      [workspaceId, id],
    );
    return row && this.session(row);
  }

  async createSessionIfAbsent(workspaceId: string, row: NewRow, now: Date): Promise<Created<SessionRecord>> {
    const c = this.codec;
    const inserted = await this.db.get<SessionRow>(
      `INSERT INTO sessions (workspace_id, id, is_active, metadata, configuration, created_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (workspace_id, id) DO NOTHING
       RETURNING id, workspace_id, is_active, metadata, configuration, created_at`,
      [workspaceId, row.id, c.bool(true), c.json(row.metadata), c.json(row.configuration), c.time(now)],
    );
    if (inserted !== undefined) return { record: this.session(inserted), created: true };
    const existing = await this.findSession(workspaceId, row.id);
    if (existing === undefined) throw new Error(`session ${row.id} vanished during get-or-create`);
    return { record: existing, created: false };
  }

  async updateSession(workspaceId: string, id: string, changes: FieldChanges): Promise<SessionRecord | undefined> {
    const { sets, params } = this.changes(changes);
    if (sets.length === 0) return this.findSession(workspaceId, id);
    const row = await this.db.get<SessionRow>(
      `UPDATE sessions SET ${sets.join(', ')} WHERE workspace_id = ? AND id = ?
       RETURNING id, workspace_id, is_active, metadata, configuration, created_at`,
      [...params, workspaceId, id],
    );
    return row && this.session(row);
  }

  listSessions(workspaceId: string, query: SessionListQuery): Promise<Page<SessionRecord>> {
    const order = SESSION_ORDER[query.order];
    return this.page<SessionRow, SessionRecord>(
      {
        from: 'sessions s',
        where: 's.workspace_id = ? AND s.is_active = ?',
        params: [workspaceId, this.codec.bool(true)],
        order,
      },
      SESSION_COLUMNS,
      query,
      SESSION_FILTER,
      (row) => this.session(row),
      () => this.countActiveSessions(workspaceId),
    );
  }

  async deactivateSession(workspaceId: string, id: string): Promise<boolean> {
    const changed = await this.db.run('UPDATE sessions SET is_active = ? WHERE workspace_id = ? AND id = ? AND is_active = ?', [
      this.codec.bool(false),
      workspaceId,
      id,
      this.codec.bool(true),
    ]);
    return changed > 0;
  }

  async purgeInactiveSession(workspaceId: string, id: string): Promise<boolean> {
    // messages, memberships, conclusions and metamessages go with the row (ON DELETE CASCADE)
    const deleted = await this.db.run('DELETE FROM sessions WHERE workspace_id = ? AND id = ? AND is_active = ?', [
      workspaceId,
      id,
      this.codec.bool(false),
    ]);
    return deleted > 0;
  }

  // ------------------------------------------------------------ memberships

  async listMemberships(workspaceId: string, sessionId: string): Promise<MembershipRecord[]> {
    const rows = await this.db.all<MembershipRow>(
      'SELECT peer_id, configuration, joined_at, left_at FROM session_peers WHERE workspace_id = ? AND session_id = ?',
      [workspaceId, sessionId],
    );
    return rows.map((row) => this.membership(row));
  }

  async findMembership(workspaceId: string, sessionId: string, peerId: string): Promise<MembershipRecord | undefined> {
    const row = await this.db.get<MembershipRow>(
      `SELECT peer_id, configuration, joined_at, left_at FROM session_peers
       WHERE workspace_id = ? AND session_id = ? AND peer_id = ?`,
      [workspaceId, sessionId, peerId],
    );
    return row && this.membership(row);
  }

  async saveMemberships(workspaceId: string, sessionId: string, rows: MembershipRecord[]): Promise<void> {
    if (rows.length === 0) return;
    const c = this.codec;
    const sorted = [...rows].sort((a, b) => (a.peerId < b.peerId ? -1 : a.peerId > b.peerId ? 1 : 0));
    const values = sorted.map(() => '(?, ?, ?, ?, ?, ?)').join(', ');
    const params = sorted.flatMap((row) => [
      workspaceId,
      sessionId,
      row.peerId,
      c.json(row.configuration),
      c.time(row.joinedAt),
      row.leftAt === null ? null : c.time(row.leftAt),
    ]);
    await this.db.run(
      `INSERT INTO session_peers (workspace_id, session_id, peer_id, configuration, joined_at, left_at) VALUES ${values}
       ON CONFLICT (workspace_id, session_id, peer_id) DO UPDATE SET
         configuration = excluded.configuration, joined_at = excluded.joined_at, left_at = excluded.left_at`,
      params,
    );
  }

  async markMembersLeft(workspaceId: string, sessionId: string, peerIds: string[] | undefined, now: Date): Promise<void> {
    const params: unknown[] = [this.codec.time(now), workspaceId, sessionId];
    let only = '';
    if (peerIds !== undefined) {
      if (peerIds.length === 0) return;
      only = ` AND peer_id IN (${peerIds.map(() => '?').join(', ')})`;
      params.push(...peerIds);
    }
    await this.db.run(
      `UPDATE session_peers SET left_at = ? WHERE workspace_id = ? AND session_id = ? AND left_at IS NULL${only}`,
      params,
    );
  }

  async listActiveMemberPeers(workspaceId: string, sessionId: string, page: number, size: number): Promise<Page<PeerRecord>> {
    const from = `session_peers m JOIN peers p ON p.workspace_id = m.workspace_id AND p.id = m.peer_id
      WHERE m.workspace_id = ? AND m.session_id = ? AND m.left_at IS NULL`;
    const rows = await this.db.all<PeerRow>(`SELECT ${PEER_COLUMNS} FROM ${from} LIMIT ? OFFSET ?`, [
      workspaceId,
      sessionId,
      size,
      pageOffset(page, size),
    ]);
    const counted = await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${from}`, [workspaceId, sessionId]);
    return { items: rows.map((row) => this.peer(row)), total: Number(counted?.n ?? 0) };
  }

  async isActiveMember(workspaceId: string, sessionId: string, peerId: string): Promise<boolean> {
    const row = await this.db.get(
      `SELECT 1 AS one FROM session_peers WHERE workspace_id = ? AND session_id = ? AND peer_id = ? AND left_at IS NULL`,
      [workspaceId, sessionId, peerId],
    );
    return row !== undefined;
  }

  async messageInSession(workspaceId: string, sessionId: string, messageId: string): Promise<boolean> {
    const row = await this.db.get('SELECT 1 AS one FROM messages WHERE workspace_id = ? AND session_id = ? AND id = ?', [
      workspaceId,
      sessionId,
      messageId,
    ]);
    return row !== undefined;
  }

  async copyMessages(
    workspaceId: string,
    fromSessionId: string,
    toSessionId: string,
    untilMessageId: string | undefined,
    now: Date,
    newId: () => string,
  ): Promise<void> {
    const params: unknown[] = [workspaceId, fromSessionId];
    let until = '';
    if (untilMessageId !== undefined) {
      until = ' AND pk <= (SELECT pk FROM messages WHERE id = ?)';
      params.push(untilMessageId);
    }
    const rows = await this.db.all<{ peer_id: string; content: string; metadata: unknown; token_count: number }>(
      `SELECT peer_id, content, metadata, token_count FROM messages WHERE workspace_id = ? AND session_id = ?${until} ORDER BY pk`,
      params,
    );
    const c = this.codec;
    for (const row of rows) {
      await this.db.run(
        `INSERT INTO messages (id, workspace_id, session_id, peer_id, content, metadata, token_count, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        [newId(), workspaceId, toSessionId, row.peer_id, row.content, c.json(c.readJson(row.metadata)), row.token_count, c.time(now)],
      );
    }
  }

  // ------------------------------------------------------------ messages

  async insertMessages(rows: MessageRecord[]): Promise<void> {
    const c = this.codec;
    // Multi-row inserts keep a 100-message batch to a few statements; pk order = request order.
    for (let start = 0; start < rows.length; start += 50) {
      const chunk = rows.slice(start, start + 50);
      await this.db.run(
        `INSERT INTO messages (id, workspace_id, session_id, peer_id, content, metadata, token_count, created_at)
         VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
        chunk.flatMap((m) => [m.id, m.workspaceId, m.sessionId, m.peerId, m.content, c.json(m.metadata), m.tokenCount, c.time(m.createdAt)]),
      );
    }
  }

  listMessages(
    workspaceId: string,
    sessionId: string,
    query: ListQuery & { peerPerspective?: string },
  ): Promise<Page<MessageRecord>> {
    let where = 'm.workspace_id = ? AND m.session_id = ?';
    const params: unknown[] = [workspaceId, sessionId];
    if (query.peerPerspective !== undefined) {
      // messages sent while the peer was a member of the session
      where += ` AND EXISTS (SELECT 1 FROM session_peers sp WHERE sp.workspace_id = m.workspace_id
        AND sp.session_id = m.session_id AND sp.peer_id = ? AND m.created_at >= sp.joined_at
        AND (sp.left_at IS NULL OR m.created_at <= sp.left_at))`;
      params.push(query.peerPerspective);
    }
    return this.page<MessageRow, MessageRecord>(
      { from: 'messages m', where, params, order: ['m.pk'] },
      MESSAGE_COLUMNS,
      query,
      MESSAGE_FILTER,
      (row) => this.message(row),
      query.peerPerspective === undefined
        ? async () => {
            const row = await this.db.get<{ n: number }>('SELECT message_count AS n FROM sessions WHERE workspace_id = ? AND id = ?', [
              workspaceId,
              sessionId,
            ]);
            return Number(row?.n ?? 0);
          }
        : undefined,
    );
  }

  async findMessage(workspaceId: string, sessionId: string, id: string): Promise<MessageRecord | undefined> {
    const row = await this.db.get<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.workspace_id = ? AND m.session_id = ? AND m.id = ?`,
      [workspaceId, sessionId, id],
    );
    return row && this.message(row);
  }

  async updateMessageMetadata(
    workspaceId: string,
    sessionId: string,
    id: string,
    metadata: JsonObject,
  ): Promise<MessageRecord | undefined> {
    const row = await this.db.get<MessageRow>(
      `UPDATE messages SET metadata = ? WHERE workspace_id = ? AND session_id = ? AND id = ?
       RETURNING id, workspace_id, session_id, peer_id, content, metadata, token_count, created_at`,
      [this.codec.json(metadata), workspaceId, sessionId, id],
    );
    return row && this.message(row);
  }

  async searchCandidates(search: MessageSearch): Promise<SearchCandidate[]> {
    if (search.terms.length === 0) return [];
    const { sql, params } = this.searchQuery(search, 'm.id, m.content');
    return this.db.all<SearchCandidate>(sql, params);
  }

  async searchMatches(search: MessageSearch): Promise<SearchMatch[]> {
    if (search.terms.length === 0) return [];
    const { sql, params } = this.searchQuery(search, 'm.id, m.pk AS seq');
    const rows = await this.db.all<{ id: string; seq: number | string }>(sql, params);
    return rows.map((row) => ({ id: row.id, seq: Number(row.seq) }));
  }

  async countMessagesInScope(scope: { workspaceId: string; sessionId?: string; peerId?: string }, cap: number): Promise<number> {
    const where = ['workspace_id = ?'];
    const params: unknown[] = [scope.workspaceId];
    if (scope.sessionId !== undefined) {
      where.push('session_id = ?');
      params.push(scope.sessionId);
    }
    if (scope.peerId !== undefined) {
      where.push('peer_id = ?');
      params.push(scope.peerId);
    }
    params.push(cap);
    const row = await this.db.get<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM (SELECT 1 FROM messages WHERE ${where.join(' AND ')} LIMIT ?) s`,
      params,
    );
    return Number(row?.n ?? 0);
  }

  async filterMessageIds(search: Omit<MessageSearch, 'terms' | 'candidates'>, ids: readonly string[]): Promise<Set<string>> {
    const params: unknown[] = [jsonText([...ids]), search.workspaceId];
    const where = [this.codec.inJsonArray('m.id'), 'm.workspace_id = ?'];
    const filterSql = this.messageScope(search, where, params);
    if (ids.length === 0) return new Set();
    if (filterSql !== null) where.push(`(${filterSql})`);
    const rows = await this.db.all<{ id: string }>(`SELECT m.id FROM messages m WHERE ${where.join(' AND ')}`, params);
    return new Set(rows.map((row) => row.id));
  }

  /**
   * Adds a message search's session, sender and `peer_perspective` conditions (messages `m`) to
   * `where`, compiles its filters, and returns their SQL (null: none).
   */
  private messageScope(search: Omit<MessageSearch, 'terms' | 'candidates'>, where: string[], params: unknown[]): string | null {
    if (search.sessionId !== undefined) {
      where.push('m.session_id = ?');
      params.push(search.sessionId);
    }
    if (search.peerId !== undefined) {
      where.push('m.peer_id = ?');
      params.push(search.peerId);
    }
    if (search.peerPerspective !== undefined) {
      where.push(`EXISTS (SELECT 1 FROM session_peers sp WHERE sp.workspace_id = m.workspace_id
        AND sp.session_id = m.session_id AND sp.peer_id = ? AND m.created_at >= sp.joined_at
        AND (sp.left_at IS NULL OR m.created_at <= sp.left_at))`);
      params.push(search.peerPerspective);
    }
    return filterCondition(search.filter, MESSAGE_FILTER, this.codec, params);
  }

  /** The newest messages of the scope holding every word of the search, filtered, newest first. */
  private searchQuery(search: MessageSearch, columns: string): { sql: string; params: unknown[] } {
    const match = this.codec.messageSearch(search);
    const params: unknown[] = [...match.where.values];
    const where: string[] = [match.where.text];
    const { from, newestFirst } = match;
    where.push('m.workspace_id = ?');
    params.push(search.workspaceId);
    const filterSql = this.messageScope(search, where, params);
    if (filterSql !== null) where.push(`(${filterSql})`);
    params.push(search.candidates);
    return { sql: `SELECT ${columns} FROM ${from} WHERE ${where.join(' AND ')} ORDER BY ${newestFirst} LIMIT ?`, params };
  }

  async searchContents(workspaceId: string, ids: readonly string[]): Promise<SearchCandidate[]> {
    if (ids.length === 0) return [];
    // by id alone, as messagesByIds: the unique index on id
    const rows = await this.db.all<SearchCandidate & { workspace_id: string }>(
      `SELECT m.id, m.content, m.workspace_id FROM messages m WHERE m.id IN (${ids.map(() => '?').join(', ')})`,
      ids,
    );
    return rows.filter((row) => row.workspace_id === workspaceId).map((row) => ({ id: row.id, content: row.content }));
  }

  async messagesByIds(workspaceId: string, ids: readonly string[]): Promise<MessageRecord[]> {
    if (ids.length === 0) return [];
    // by id alone, so the unique index on id is used (ids are unique across workspaces); with the
    // workspace in the WHERE clause SQLite reads the workspace's whole index range instead
    const rows = await this.db.all<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.id IN (${ids.map(() => '?').join(', ')})`, ids);
    return rows.filter((row) => row.workspace_id === workspaceId).map((row) => this.message(row));
  }

  async recentMessages(
    workspaceId: string,
    sessionId: string,
    limit: number,
    before?: number,
  ): Promise<(MessageRecord & { seq: number })[]> {
    const params: unknown[] = [workspaceId, sessionId];
    let older = '';
    if (before !== undefined) {
      older = ' AND m.pk < ?';
      params.push(before);
    }
    const rows = await this.db.all<MessageRow & { pk: number }>(
      `SELECT ${MESSAGE_COLUMNS}, m.pk FROM messages m WHERE m.workspace_id = ? AND m.session_id = ?${older}
       ORDER BY m.pk DESC LIMIT ?`,
      [...params, limit],
    );
    return rows.map((row) => ({ ...this.message(row), seq: Number(row.pk) }));
  }

  // ------------------------------------------------------------ webhooks

  async countWebhookEndpoints(workspaceId: string): Promise<number> {
    const row = await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM webhook_endpoints WHERE workspace_id = ?', [
      workspaceId,
    ]);
    return Number(row?.n ?? 0);
  }

  async webhookEndpointIds(workspaceId: string): Promise<string[]> {
    const rows = await this.db.all<{ id: string }>('SELECT id FROM webhook_endpoints WHERE workspace_id = ? ORDER BY pk', [workspaceId]);
    return rows.map((row) => row.id);
  }

  async findWebhookEndpointByUrl(workspaceId: string, url: string): Promise<WebhookEndpointRecord | undefined> {
    const row = await this.db.get<WebhookRow>(
      'SELECT id, workspace_id, url, created_at FROM webhook_endpoints WHERE workspace_id = ? AND url = ?',
      [workspaceId, url],
    );
    return row && this.webhook(row);
  }

  async findWebhookEndpoint(id: string): Promise<WebhookEndpointRecord | undefined> {
    const row = await this.db.get<WebhookRow>('SELECT id, workspace_id, url, created_at FROM webhook_endpoints WHERE id = ?', [id]);
    return row && this.webhook(row);
  }

  async insertWebhookEndpoint(record: WebhookEndpointRecord): Promise<WebhookEndpointRecord | undefined> {
    const row = await this.db.get<WebhookRow>(
      `INSERT INTO webhook_endpoints (id, workspace_id, url, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (workspace_id, url) DO NOTHING RETURNING id, workspace_id, url, created_at`,
      [record.id, record.workspaceId, record.url, this.codec.time(record.createdAt)],
    );
    return row && this.webhook(row);
  }

  async listWebhookEndpoints(workspaceId: string, page: number, size: number): Promise<Page<WebhookEndpointRecord>> {
    const rows = await this.db.all<WebhookRow>(
      'SELECT id, workspace_id, url, created_at FROM webhook_endpoints WHERE workspace_id = ? LIMIT ? OFFSET ?',
      [workspaceId, size, pageOffset(page, size)],
    );
    return { items: rows.map((row) => this.webhook(row)), total: await this.countWebhookEndpoints(workspaceId) };
  }

  async deleteWebhookEndpoint(workspaceId: string, id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM webhook_endpoints WHERE workspace_id = ? AND id = ?', [workspaceId, id])) > 0;
  }
}

export type { JsonObject };
