import type {
  Created,
  FieldChanges,
  MembershipRecord,
  MessageWriteTarget,
  NewRow,
  Page,
  PeerRecord,
  SessionListQuery,
  SessionOrder,
  SessionRecord,
  SessionStore,
} from '../store.js';
import type { FilterColumns } from './compile-filter.js';
import type { Dialect } from './dialect.js';
import { RowVanishedError, type SqlExecutor } from './driver.js';
import { fieldChanges } from './field-changes.js';
import { readTextList } from './json-text.js';
import { listPage } from './list-page.js';
import type { SeekPoints } from './seek-points.js';
import { pageOffset } from './page-offset.js';
import { countActiveSessions, countPeerSessions } from './kept-counts.js';
import { MEMBERSHIP_COLUMNS, MEMBERSHIP_FROM, membershipFromRow, PEER_COLUMNS, peerFromRow, SESSION_COLUMNS, sessionFromRow, type MembershipRow, type PeerRow, type SessionRow, type VersionRow, versionText, peerListVersion } from './rows.js';

const SESSION_FILTER: FilterColumns = {
  columns: { id: 's.id', created_at: 's.created_at', is_active: 's.is_active', workspace_id: 's.workspace_id' },
  metadata: 's.metadata',
  key: 's.pk',
};

const SESSION_ORDER: Record<SessionOrder, string[]> = {
  created: ['s.created_at'],
  'created-then-insertion': ['s.created_at', 's.pk'],
};

/** SESSION_ORDER through the session's created_at and pk copied into its memberships. */
const MEMBERSHIP_ORDER: Record<SessionOrder, string[]> = {
  created: ['m.session_created_at'],
  'created-then-insertion': ['m.session_created_at', 'm.session_pk'],
};

/** The `sessions` table and its members (`session_peers`). */
export class SqlSessionStore implements SessionStore {
  /** `seekPoints`: where earlier pages of its lists ended (seek-points.ts); none inside a transaction. */
  constructor(
    private readonly db: SqlExecutor,
    private readonly d: Dialect,
    private readonly seekPoints?: SeekPoints,
  ) {}

  find(workspaceId: string, id: string): Promise<SessionRecord | undefined> {
    return this.findLocking(workspaceId, id, '');
  }

  findForWrite(workspaceId: string, id: string): Promise<SessionRecord | undefined> {
    return this.findLocking(workspaceId, id, this.d.forWrite);
  }

  async findForMessages(workspaceId: string, id: string, waitingKind: string): Promise<MessageWriteTarget | undefined> {
    const d = this.d;
    // The kind is written into the statement, not bound: a job kind is a name of ours, and bound,
    // PostgreSQL planned the statement again at 70 % of its runs under the soak (a generic plan,
    // costed for any kind, looked dearer than the plans made for this one, which has few jobs).
    if (!/^[a-z][a-z._]*$/.test(waitingKind)) throw new Error(`not a job kind: ${waitingKind}`);
    // the workspace's parts as subqueries, not a join: the lock takes the session's row alone; the
    // waiting jobs through jobs_open_kind (the open jobs' condition word for word, for SQLite)
    const row = await this.db.get<SessionRow & { message_count: number | string; workspace_configuration: unknown; webhook_endpoint_ids: unknown; waiting_keys: unknown }>(
      `SELECT ${SESSION_COLUMNS}, s.message_count,
         (SELECT w.configuration FROM workspaces w WHERE w.id = s.workspace_id) AS workspace_configuration,
         (SELECT ${d.orderedArrayOf('e.id', 'e.pk')} FROM webhook_endpoints e WHERE e.workspace_id = s.workspace_id) AS webhook_endpoint_ids,
         (SELECT ${d.orderedArrayOf('j.queue_key', 'j.queue_key')} FROM jobs j
          WHERE j.kind = '${waitingKind}' AND j.status IN ('pending', 'running') AND j.status = 'pending' AND j.workspace_id = s.workspace_id) AS waiting_keys
       FROM sessions s WHERE s.workspace_id = ? AND s.id = ?${d.forWrite}`,
      [workspaceId, id],
    );
    if (row === undefined) return undefined;
    return {
      session: sessionFromRow(d, row),
      messageCount: Number(row.message_count),
      workspaceConfiguration: row.workspace_configuration === null || row.workspace_configuration === undefined ? {} : d.readJson(row.workspace_configuration),
      webhookEndpointIds: readTextList(row.webhook_endpoint_ids),
      waitingKeys: readTextList(row.waiting_keys),
    };
  }

  findAndKeep(workspaceId: string, id: string): Promise<SessionRecord | undefined> {
    return this.findLocking(workspaceId, id, this.d.forKeyShare);
  }

  private async findLocking(workspaceId: string, id: string, lock: string): Promise<SessionRecord | undefined> {
    const row = await this.db.get<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.workspace_id = ? AND s.id = ?${lock}`, [workspaceId, id]);
    return row && sessionFromRow(this.d, row);
  }

  async createIfAbsent(workspaceId: string, row: NewRow, now: Date): Promise<Created<SessionRecord>> {
    const d = this.d;
    const inserted = await this.db.get<SessionRow>(
      `INSERT INTO sessions (workspace_id, id, is_active, metadata, configuration, created_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (workspace_id, id) DO NOTHING
       RETURNING id, workspace_id, is_active, metadata, configuration, created_at`,
      [workspaceId, row.id, d.bool(true), d.json(row.metadata), d.json(row.configuration), d.time(now)],
    );
    if (inserted !== undefined) return { record: sessionFromRow(d, inserted), created: true };
    // Created by another transaction meanwhile: locked as findForWrite does, so that this one holds
    // the session's row before the workspace's and the peers' rows either way (a message to a
    // session created at the same moment otherwise took the session's row last, and deadlocked
    // with a writer of the session that took it first).
    const existing = await this.findLocking(workspaceId, row.id, d.forWrite);
    if (existing === undefined) throw new RowVanishedError(`session ${row.id} vanished during get-or-create`);
    return { record: existing, created: false };
  }

  async update(workspaceId: string, id: string, changes: FieldChanges): Promise<SessionRecord | undefined> {
    const { sets, params } = fieldChanges(this.d, changes);
    if (sets.length === 0) return this.find(workspaceId, id);
    const row = await this.db.get<SessionRow>(
      `UPDATE sessions SET ${sets.join(', ')} WHERE workspace_id = ? AND id = ?
       RETURNING id, workspace_id, is_active, metadata, configuration, created_at`,
      [...params, workspaceId, id],
    );
    return row && sessionFromRow(this.d, row);
  }

  list(workspaceId: string, query: SessionListQuery): Promise<Page<SessionRecord>> {
    return listPage<SessionRow, SessionRecord>(
      this.db,
      this.d,
      {
        from: 'sessions s',
        where: 's.workspace_id = ? AND s.is_active = ?',
        params: [workspaceId, this.d.bool(true)],
        select: SESSION_COLUMNS,
        order: SESSION_ORDER[query.order],
        filterColumns: SESSION_FILTER,
      },
      query,
      (row) => sessionFromRow(this.d, row),
      () => countActiveSessions(this.db, workspaceId),
      // only an order ending with a unique key says where a page ended
      query.order === 'created-then-insertion' && this.seekPoints !== undefined
        ? { points: this.seekPoints, version: () => this.activeVersion(workspaceId) }
        : undefined,
    );
  }

  /** The version of the workspace's list of active sessions (migration 0034) with the workspace row's incarnation. */
  async activeVersion(workspaceId: string): Promise<string | undefined> {
    // v1_id is random per workspace row: a recreated workspace never matches an old token
    const row = await this.db.get<VersionRow>('SELECT v1_id AS incarnation, active_sessions_version AS v FROM workspaces WHERE id = ?', [workspaceId]);
    return versionText(row);
  }

  ofPeer(workspaceId: string, peerId: string, query: SessionListQuery): Promise<Page<SessionRecord>> {
    return listPage<SessionRow, SessionRecord>(
      this.db,
      this.d,
      {
        from: 'session_peers m JOIN sessions s ON s.workspace_id = m.workspace_id AND s.id = m.session_id',
        where: 'm.workspace_id = ? AND m.peer_id = ?',
        params: [workspaceId, peerId],
        select: SESSION_COLUMNS,
        // the sessions' order as the memberships carry it (migration 0021, index session_peers_peer_order)
        order: MEMBERSHIP_ORDER[query.order],
        filterColumns: SESSION_FILTER,
      },
      query,
      (row) => sessionFromRow(this.d, row),
      () => countPeerSessions(this.db, workspaceId, peerId),
      // only an order ending with a unique key says where a page ended
      query.order === 'created-then-insertion' && this.seekPoints !== undefined
        ? { points: this.seekPoints, version: () => this.ofPeerVersion(workspaceId, peerId) }
        : undefined,
    );
  }

  ofPeerVersion(workspaceId: string, peerId: string): Promise<string | undefined> {
    return peerListVersion(this.db, 'sessions_version', workspaceId, peerId);
  }

  async deactivate(workspaceId: string, id: string): Promise<boolean> {
    const d = this.d;
    const changed = await this.db.run('UPDATE sessions SET is_active = ? WHERE workspace_id = ? AND id = ? AND is_active = ?', [
      d.bool(false),
      workspaceId,
      id,
      d.bool(true),
    ]);
    return changed > 0;
  }

  async purgeInactiveBatch(workspaceId: string, id: string, limit: number): Promise<number> {
    const count = Math.max(1, Math.trunc(limit));
    let deleted = 0;
    for (const table of ['messages', 'conclusions']) {
      // The rows that cascade from each (full-text entries, vectors, sources, metamessages) go
      // with it. The session's row is locked (the one-time test of the subquery, before any row is
      // deleted) ahead of the rows whose triggers write it, the order of the session's other
      // writers and of a workspace delete (SqlWorkspaceStore.delete); otherwise a purge and a
      // workspace delete each hold what the other waits for. `FOR UPDATE`, which also waits for
      // a background writer keeping the session (findAndKeep): a purge taking the batch's items
      // and conclusions from under a deriver that goes on to write them would close a cycle.
      // Conclusions on PostgreSQL: then their collections' count rows, in the triggers' order,
      // before any conclusion's row (counted all, so every one is locked), as every other writer
      // of conclusions takes them; deleting the rows first and taking the counts in the trigger
      // deadlocked with a conclusion's delete, which holds its count while it waits for the row.
      const counts =
        table === 'conclusions' && this.db.dialect === 'postgres'
          ? `AND (SELECT count(*) FROM (SELECT 1 FROM conclusion_counts k WHERE k.workspace_id = ? AND (k.observer_id, k.observed_id, k.level) IN (
               SELECT x.observer_id, x.observed_id, x.level FROM conclusions x WHERE x.workspace_id = ? AND x.session_id = ?)
               ORDER BY k.workspace_id, k.observer_id, k.observed_id, k.level FOR NO KEY UPDATE) locked) >= 0`
          : '';
      deleted += await this.db.run(
        `DELETE FROM ${table} WHERE pk IN (
           SELECT c.pk FROM ${table} c
           WHERE c.workspace_id = ? AND c.session_id = ?
             AND EXISTS (SELECT 1 FROM sessions s WHERE s.workspace_id = ? AND s.id = ? AND s.is_active = ?${this.d.forDelete})
             ${counts}
           LIMIT ${count - deleted})`,
        [workspaceId, id, workspaceId, id, this.d.bool(false), ...(counts === '' ? [] : [workspaceId, workspaceId, id])],
      );
      if (deleted >= count) break;
    }
    return deleted;
  }

  async purgeInactive(workspaceId: string, id: string): Promise<boolean> {
    // messages, memberships, conclusions and metamessages go with the row (ON DELETE CASCADE)
    const deleted = await this.db.run('DELETE FROM sessions WHERE workspace_id = ? AND id = ? AND is_active = ?', [workspaceId, id, this.d.bool(false)]);
    return deleted > 0;
  }

  // ------------------------------------------------------------ members

  async memberships(workspaceId: string, sessionId: string): Promise<MembershipRecord[]> {
    const rows = await this.db.all<MembershipRow>(`SELECT ${MEMBERSHIP_COLUMNS} FROM ${MEMBERSHIP_FROM} WHERE m.workspace_id = ? AND m.session_id = ?`, [
      workspaceId,
      sessionId,
    ]);
    return rows.map((row) => membershipFromRow(this.d, row));
  }

  async findMembership(workspaceId: string, sessionId: string, peerId: string): Promise<MembershipRecord | undefined> {
    const row = await this.db.get<MembershipRow>(
      `SELECT ${MEMBERSHIP_COLUMNS} FROM ${MEMBERSHIP_FROM} WHERE m.workspace_id = ? AND m.session_id = ? AND m.peer_id = ?`,
      [workspaceId, sessionId, peerId],
    );
    return row && membershipFromRow(this.d, row);
  }

  async saveMemberships(workspaceId: string, sessionId: string, rows: MembershipRecord[]): Promise<void> {
    if (rows.length === 0) return;
    const d = this.d;
    const sorted = [...rows].sort((a, b) => (a.peerId < b.peerId ? -1 : a.peerId > b.peerId ? 1 : 0));
    const values = sorted.map(() => '(?, ?, ?, ?, ?, ?)').join(', ');
    const params = sorted.flatMap((row) => [
      workspaceId,
      sessionId,
      row.peerId,
      d.json(row.configuration),
      d.time(row.joinedAt),
      row.leftAt === null ? null : d.time(row.leftAt),
    ]);
    await this.db.run(
      `INSERT INTO session_peers (workspace_id, session_id, peer_id, configuration, joined_at, left_at) VALUES ${values}
       ON CONFLICT (workspace_id, session_id, peer_id) DO UPDATE SET
         configuration = excluded.configuration, joined_at = excluded.joined_at, left_at = excluded.left_at`,
      params,
    );
  }

  async markMembersLeft(workspaceId: string, sessionId: string, peerIds: string[] | undefined, now: Date): Promise<void> {
    const params: unknown[] = [this.d.time(now), workspaceId, sessionId];
    let only = '';
    if (peerIds !== undefined) {
      if (peerIds.length === 0) return;
      only = ` AND peer_id IN (${peerIds.map(() => '?').join(', ')})`;
      params.push(...peerIds);
    }
    await this.db.run(`UPDATE session_peers SET left_at = ? WHERE workspace_id = ? AND session_id = ? AND left_at IS NULL${only}`, params);
  }

  async activeOfMember(workspaceId: string, peerId: string, page: number, size: number, reverse: boolean): Promise<Page<SessionRecord>> {
    const from = `session_peers m JOIN sessions s ON s.workspace_id = m.workspace_id AND s.id = m.session_id
      WHERE m.workspace_id = ? AND m.peer_id = ? AND m.left_at IS NULL AND s.is_active = ?`;
    const params = [workspaceId, peerId, this.d.bool(true)];
    const direction = reverse ? 'DESC' : 'ASC';
    // sessions added in one request share a joined_at: the session's insertion order comes next
    const rows = await this.db.all<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM ${from} ORDER BY m.joined_at ${direction}, s.pk ${direction} LIMIT ? OFFSET ?`, [
      ...params,
      size,
      pageOffset(page, size),
    ]);
    const total =
      page === 1 && rows.length < size ? rows.length : Number((await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${from}`, params))?.n ?? 0);
    return { items: rows.map((row) => sessionFromRow(this.d, row)), total };
  }

  async sessionIdsOfPeer(workspaceId: string, peerId: string, cap: number): Promise<string[]> {
    const rows = await this.db.all<{ session_id: string }>(
      'SELECT session_id FROM session_peers WHERE workspace_id = ? AND peer_id = ? ORDER BY session_created_at, session_pk LIMIT ?',
      [workspaceId, peerId, cap],
    );
    return rows.map((row) => row.session_id);
  }

  async activeAmong(workspaceId: string, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db.all<{ id: string }>(`SELECT id FROM sessions WHERE workspace_id = ? AND is_active = ? AND id IN (${ids.map(() => '?').join(', ')})`, [
      workspaceId,
      this.d.bool(true),
      ...ids,
    ]);
    return new Set(rows.map((row) => row.id));
  }

  async activeMemberPeers(workspaceId: string, sessionId: string, page: number, size: number): Promise<Page<PeerRecord>> {
    const from = `session_peers m JOIN peers p ON p.workspace_id = m.workspace_id AND p.id = m.peer_id
      WHERE m.workspace_id = ? AND m.session_id = ? AND m.left_at IS NULL AND p.kind IS NULL AND p.deleting_at IS NULL`;
    const rows = await this.db.all<PeerRow>(`SELECT ${PEER_COLUMNS} FROM ${from} LIMIT ? OFFSET ?`, [workspaceId, sessionId, size, pageOffset(page, size)]);
    const counted = await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${from}`, [workspaceId, sessionId]);
    return { items: rows.map((row) => peerFromRow(this.d, row)), total: Number(counted?.n ?? 0) };
  }

  async isActiveMember(workspaceId: string, sessionId: string, peerId: string): Promise<boolean> {
    const row = await this.db.get(`SELECT 1 AS one FROM session_peers WHERE workspace_id = ? AND session_id = ? AND peer_id = ? AND left_at IS NULL`, [
      workspaceId,
      sessionId,
      peerId,
    ]);
    return row !== undefined;
  }
}
