import { PeerDeletingError } from '../peer-deleting.js';
import type {
  JsonObject,
  MessageRecord,
  Page,
  V1AppRecord,
  V1ListQuery,
  V1MetamessageChanges,
  V1MetamessageRecord,
  V1SessionRecord,
  V1Store,
  V1UserRecord,
} from '../store.js';
import type { Dialect } from './dialect.js';
import { DIALECTS } from './dialects.js';
import type { SqlExecutor } from './driver.js';
import { countPeerMetamessages, countPeerSessions, countPeers, countSessionMessages, countWorkspaces } from './kept-counts.js';
import { listPage } from './list-page.js';
import { sessionMessagesVersion } from './message-store.js';
import { peersVersion } from './peer-store.js';
import type { SeekPoints } from './seek-points.js';
import { lockWorkspaceRow, workspacesVersion } from './workspace-store.js';
import { MESSAGE_COLUMNS, messageFromRow, type MessageRow, peerListVersion } from './rows.js';
import { sessionMessages } from './session-messages.js';

/*
 * The v1 generation's queries over the workspace tables (contract-v1 §5): apps are workspaces
 * (`v1_id`, name = `id`), users are peers, sessions are sessions reached through the user's
 * membership row, messages are the one messages table, metamessages have their own table.
 * Every list is in insertion order (`pk`), as v1 lists are (§0.1).
 */

interface AppRow {
  v1_id: string;
  id: string;
  metadata: unknown;
  created_at: unknown;
}
interface UserRow extends AppRow {
  app_v1_id: string;
  workspace_id: string;
}
interface SessionRow extends AppRow {
  workspace_id: string;
  is_active: unknown;
}
interface MetamessageRow {
  id: string;
  workspace_id: string;
  peer_id: string;
  app_v1_id: string;
  user_v1_id: string;
  label: string;
  content: string;
  session_id: string | null;
  session_v1_id: string | null;
  message_id: string | null;
  metadata: unknown;
  created_at: unknown;
}

const APP_COLUMNS = 'w.v1_id, w.id, w.metadata, w.created_at';
// a peer being deleted (docs/forgetting.md) is no user any more
const USER_FROM = 'peers p JOIN workspaces w ON w.id = p.workspace_id AND p.deleting_at IS NULL';
const USER_COLUMNS = 'p.v1_id, p.id, w.v1_id AS app_v1_id, p.workspace_id, p.metadata, p.created_at';
const SESSION_COLUMNS = 's.v1_id, s.id, s.workspace_id, s.is_active, s.metadata, s.created_at';
/** A session the peer (the extra `?`) has a membership row in, left or not. */
const MEMBER_OF_SESSION = `EXISTS (SELECT 1 FROM session_peers sp
  WHERE sp.workspace_id = s.workspace_id AND sp.session_id = s.id AND sp.peer_id = ?)`;
/*
 * The app's and the user's v1 ids are read per row by key, not joined: joined on
 * `p.id = mm.peer_id`, the user stays a constant to PostgreSQL's planner however the page names it,
 * and a user holding most of an app's older metamessages had its pages walked along the primary
 * key (Dialect.orderedWithin, session-messages.ts). The rows always exist (foreign keys).
 */
const METAMESSAGE_FROM = `metamessages mm
  LEFT JOIN sessions s ON s.workspace_id = mm.workspace_id AND s.id = mm.session_id`;
const METAMESSAGE_COLUMNS = `mm.id, mm.workspace_id, mm.peer_id,
  (SELECT w.v1_id FROM workspaces w WHERE w.id = mm.workspace_id) AS app_v1_id,
  (SELECT p.v1_id FROM peers p WHERE p.workspace_id = mm.workspace_id AND p.id = mm.peer_id) AS user_v1_id,
  mm.label, mm.content, mm.session_id, s.v1_id AS session_v1_id, mm.message_id, mm.metadata, mm.created_at`;

export class SqlV1Store implements V1Store {
  private readonly dialect: Dialect;

  /** `seekPoints`: where earlier pages of its lists ended (seek-points.ts); none inside a transaction. */
  constructor(
    private readonly db: SqlExecutor,
    private readonly seekPoints?: SeekPoints,
  ) {
    this.dialect = DIALECTS[db.dialect];
  }

  // ------------------------------------------------------------ mapping

  private app(row: AppRow): V1AppRecord {
    return { v1Id: row.v1_id, name: row.id, metadata: this.dialect.readJson(row.metadata), createdAt: this.dialect.readTime(row.created_at) };
  }

  private user(row: UserRow): V1UserRecord {
    return {
      v1Id: row.v1_id,
      name: row.id,
      appV1Id: row.app_v1_id,
      workspaceId: row.workspace_id,
      metadata: this.dialect.readJson(row.metadata),
      createdAt: this.dialect.readTime(row.created_at),
    };
  }

  private session(row: SessionRow): V1SessionRecord {
    return {
      v1Id: row.v1_id,
      id: row.id,
      workspaceId: row.workspace_id,
      isActive: this.dialect.readBool(row.is_active),
      metadata: this.dialect.readJson(row.metadata),
      createdAt: this.dialect.readTime(row.created_at),
    };
  }

  private message(row: MessageRow): MessageRecord {
    return messageFromRow(this.dialect, row);
  }

  private metamessage(row: MetamessageRow): V1MetamessageRecord {
    return {
      id: row.id,
      workspaceId: row.workspace_id,
      peerId: row.peer_id,
      appV1Id: row.app_v1_id,
      userV1Id: row.user_v1_id,
      label: row.label,
      content: row.content,
      sessionId: row.session_id,
      sessionV1Id: row.session_v1_id,
      messageId: row.message_id,
      metadata: this.dialect.readJson(row.metadata),
      createdAt: this.dialect.readTime(row.created_at),
    };
  }

  // ------------------------------------------------------------ shared pieces

  /**
   * A v1 list page in insertion order (`order`: the listed table's row key, or columns ending
   * with it); the filter is metadata containment (§0.4) on `metadata`. `knownTotal`, a count
   * kept by triggers, is the total of a page without a filter (listPage); `version`, the list's
   * data version, lets its deep pages start from where earlier ones ended (seek-points.ts).
   */
  private page<R, T>(
    base: { from: string; where: string; params: unknown[]; order: readonly string[]; metadata: string },
    select: string,
    query: V1ListQuery,
    map: (row: R) => T,
    knownTotal?: () => Promise<number>,
    version?: () => Promise<string | undefined>,
  ): Promise<Page<T>> {
    const { order } = base;
    return listPage<R, T>(
      this.db,
      this.dialect,
      { from: base.from, where: base.where, params: base.params, select, order, filterColumns: { columns: {}, metadata: base.metadata, key: order[order.length - 1] } },
      query,
      map,
      knownTotal,
      version && this.seekPoints && { points: this.seekPoints, version },
    );
  }

  // ------------------------------------------------------------ apps

  async findApp(v1Id: string): Promise<V1AppRecord | undefined> {
    const row = await this.db.get<AppRow>(`SELECT ${APP_COLUMNS} FROM workspaces w WHERE w.v1_id = ?`, [v1Id]);
    return row && this.app(row);
  }

  async findAppByName(name: string): Promise<V1AppRecord | undefined> {
    const row = await this.db.get<AppRow>(`SELECT ${APP_COLUMNS} FROM workspaces w WHERE w.id = ?`, [name]);
    return row && this.app(row);
  }

  async insertApp(v1Id: string, name: string, metadata: JsonObject, now: Date): Promise<V1AppRecord | undefined> {
    const row = await this.db.get<AppRow>(
      `INSERT INTO workspaces (id, v1_id, metadata, configuration, created_at) VALUES (?, ?, ?, '{}', ?)
       ON CONFLICT (id) DO NOTHING RETURNING v1_id, id, metadata, created_at`,
      [name, v1Id, this.dialect.json(metadata), this.dialect.time(now)],
    );
    return row && this.app(row);
  }

  async updateAppMetadata(name: string, metadata: JsonObject): Promise<void> {
    await this.db.run('UPDATE workspaces SET metadata = ? WHERE id = ?', [this.dialect.json(metadata), name]);
  }

  listApps(query: V1ListQuery): Promise<Page<V1AppRecord>> {
    return this.page<AppRow, V1AppRecord>(
      { from: 'workspaces w', where: '1 = 1', params: [], order: ['w.pk'], metadata: 'w.metadata' },
      APP_COLUMNS,
      query,
      (row) => this.app(row),
      () => countWorkspaces(this.db),
      () => workspacesVersion(this.db),
    );
  }

  // ------------------------------------------------------------ users

  async findUser(appV1Id: string, userV1Id: string): Promise<V1UserRecord | undefined> {
    const row = await this.db.get<UserRow>(`SELECT ${USER_COLUMNS} FROM ${USER_FROM} WHERE w.v1_id = ? AND p.v1_id = ?`, [
      appV1Id,
      userV1Id,
    ]);
    return row && this.user(row);
  }

  async findUserByName(workspaceId: string, name: string): Promise<V1UserRecord | undefined> {
    const row = await this.db.get<UserRow>(`SELECT ${USER_COLUMNS} FROM ${USER_FROM} WHERE p.workspace_id = ? AND p.id = ?`, [
      workspaceId,
      name,
    ]);
    return row && this.user(row);
  }

  async insertUser(
    workspaceId: string,
    v1Id: string,
    name: string,
    metadata: JsonObject,
    now: Date,
  ): Promise<V1UserRecord | undefined> {
    // the workspace row before the new peer's (SqlPeerStore.ensure)
    await lockWorkspaceRow(this.db, this.dialect, workspaceId);
    const inserted = await this.db.get<{ v1_id: string }>(
      `INSERT INTO peers (workspace_id, id, v1_id, metadata, configuration, created_at) VALUES (?, ?, ?, ?, '{}', ?)
       ON CONFLICT (workspace_id, id) DO NOTHING RETURNING v1_id`,
      [workspaceId, name, v1Id, this.dialect.json(metadata), this.dialect.time(now)],
    );
    if (inserted === undefined) {
      const deleting = await this.db.get('SELECT 1 AS one FROM peers WHERE workspace_id = ? AND id = ? AND deleting_at IS NOT NULL', [workspaceId, name]);
      if (deleting !== undefined) throw new PeerDeletingError(name);
      return undefined;
    }
    return this.findUserByName(workspaceId, name);
  }

  async updateUserMetadata(workspaceId: string, name: string, metadata: JsonObject): Promise<void> {
    await lockWorkspaceRow(this.db, this.dialect, workspaceId);
    await this.db.run('UPDATE peers SET metadata = ? WHERE workspace_id = ? AND id = ? AND deleting_at IS NULL', [this.dialect.json(metadata), workspaceId, name]);
  }

  listUsers(workspaceId: string, hiddenPeerIds: string[], query: V1ListQuery): Promise<Page<V1UserRecord>> {
    const hidden = hiddenPeerIds.length === 0 ? '' : ` AND p.id NOT IN (${hiddenPeerIds.map(() => '?').join(', ')})`;
    return this.page<UserRow, V1UserRecord>(
      {
        from: USER_FROM,
        // scopes are no users (kept_counts' peer_count leaves them out too)
        where: `p.workspace_id = ? AND p.kind IS NULL${hidden}`,
        params: [workspaceId, ...hiddenPeerIds],
        order: ['p.pk'],
        metadata: 'p.metadata',
      },
      USER_COLUMNS,
      query,
      (row) => this.user(row),
      // the workspace's peers but the hidden ones that exist
      async () => {
        const total = await countPeers(this.db, workspaceId);
        if (hiddenPeerIds.length === 0) return total;
        const hiddenRows = await this.db.get<{ n: number | string }>(
          `SELECT COUNT(*) AS n FROM peers WHERE workspace_id = ? AND kind IS NULL AND deleting_at IS NULL AND id IN (${hiddenPeerIds.map(() => '?').join(', ')})`,
          [workspaceId, ...hiddenPeerIds],
        );
        return total - Number(hiddenRows?.n ?? 0);
      },
      () => peersVersion(this.db, workspaceId),
    );
  }

  // ------------------------------------------------------------ sessions

  async findSession(workspaceId: string, peerId: string, v1Id: string): Promise<V1SessionRecord | undefined> {
    const row = await this.db.get<SessionRow>(
      `SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.workspace_id = ? AND s.v1_id = ? AND ${MEMBER_OF_SESSION}`,
      [workspaceId, v1Id, peerId],
    );
    return row && this.session(row);
  }

  async insertSession(
    workspaceId: string,
    id: string,
    metadata: JsonObject,
    configuration: JsonObject,
    now: Date,
  ): Promise<V1SessionRecord> {
    const c = this.dialect;
    const row = await this.db.get<SessionRow>(
      `INSERT INTO sessions (workspace_id, id, v1_id, is_active, metadata, configuration, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       RETURNING v1_id, id, workspace_id, is_active, metadata, created_at`,
      [workspaceId, id, id, c.bool(true), c.json(metadata), c.json(configuration), c.time(now)],
    );
    if (row === undefined) throw new Error(`session ${id} was not inserted`);
    return this.session(row);
  }

  listSessions(workspaceId: string, peerId: string, activeOnly: boolean, query: V1ListQuery): Promise<Page<V1SessionRecord>> {
    const params: unknown[] = [workspaceId, peerId];
    // the user's memberships in their sessions' insertion order through session_peers_peer_session_pk
    // (migration 0037/0039), each session looked up by its key: a page reads what it returns.
    // CROSS JOIN keeps SQLite from starting at the app's (active) sessions.
    let where = 's.workspace_id = sp.workspace_id AND s.id = sp.session_id AND sp.workspace_id = ? AND sp.peer_id = ?';
    if (activeOnly) {
      where += ' AND s.is_active = ?';
      params.push(this.dialect.bool(true));
    }
    return this.page<SessionRow, V1SessionRecord>(
      // the membership's copy of its session's pk (0021): the same order as s.pk, from the index
      { from: 'session_peers sp CROSS JOIN sessions s', where, params, order: ['sp.session_pk'], metadata: 's.metadata' },
      SESSION_COLUMNS,
      query,
      (row) => this.session(row),
      // all the user's memberships are counted on the peer; its active ones are not
      activeOnly ? undefined : () => countPeerSessions(this.db, workspaceId, peerId),
      // moves with the user's memberships and with any change of its sessions, (de)activation among them
      () => peerListVersion(this.db, 'sessions_version', workspaceId, peerId),
    );
  }

  async updateSessionMetadata(workspaceId: string, sessionId: string, metadata: JsonObject): Promise<void> {
    await this.db.run('UPDATE sessions SET metadata = ? WHERE workspace_id = ? AND id = ?', [
      this.dialect.json(metadata),
      workspaceId,
      sessionId,
    ]);
  }

  // ------------------------------------------------------------ messages

  async findMessage(workspaceId: string, sessionId: string, id: string): Promise<MessageRecord | undefined> {
    const row = await this.db.get<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.workspace_id = ? AND m.session_id = ? AND m.id = ?`,
      [workspaceId, sessionId, id],
    );
    return row && this.message(row);
  }

  listMessages(workspaceId: string, sessionId: string, query: V1ListQuery): Promise<Page<MessageRecord>> {
    const session = sessionMessages(this.dialect, workspaceId, sessionId);
    return this.page<MessageRow, MessageRecord>(
      { from: 'messages m', where: session.where, params: session.params, order: session.order, metadata: 'm.metadata' },
      MESSAGE_COLUMNS,
      query,
      (row) => this.message(row),
      () => countSessionMessages(this.db, workspaceId, sessionId),
      () => sessionMessagesVersion(this.db, workspaceId, sessionId),
    );
  }

  async messagesUpTo(workspaceId: string, sessionId: string, untilMessageId: string | undefined): Promise<MessageRecord[]> {
    const params: unknown[] = [workspaceId, sessionId];
    let until = '';
    if (untilMessageId !== undefined) {
      until = ' AND m.pk <= (SELECT pk FROM messages WHERE id = ?)';
      params.push(untilMessageId);
    }
    const rows = await this.db.all<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.workspace_id = ? AND m.session_id = ?${until} ORDER BY m.pk`,
      params,
    );
    return rows.map((row) => this.message(row));
  }

  // ------------------------------------------------------------ metamessages

  async insertMetamessage(record: V1MetamessageRecord): Promise<void> {
    const c = this.dialect;
    await this.db.run(
      `INSERT INTO metamessages (id, workspace_id, peer_id, session_id, message_id, label, content, metadata, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        record.id,
        record.workspaceId,
        record.peerId,
        record.sessionId,
        record.messageId,
        record.label,
        record.content,
        c.json(record.metadata),
        c.time(record.createdAt),
      ],
    );
  }

  async findMetamessage(workspaceId: string, peerId: string, id: string): Promise<V1MetamessageRecord | undefined> {
    const row = await this.db.get<MetamessageRow>(
      `SELECT ${METAMESSAGE_COLUMNS} FROM ${METAMESSAGE_FROM} WHERE mm.workspace_id = ? AND mm.peer_id = ? AND mm.id = ?`,
      [workspaceId, peerId, id],
    );
    return row && this.metamessage(row);
  }

  async updateMetamessage(id: string, changes: V1MetamessageChanges): Promise<void> {
    const sets: string[] = [];
    const params: unknown[] = [];
    const set = (column: string, value: unknown) => {
      sets.push(`${column} = ?`);
      params.push(value);
    };
    if (changes.sessionId !== undefined) set('session_id', changes.sessionId);
    if (changes.messageId !== undefined) set('message_id', changes.messageId);
    if (changes.label !== undefined) set('label', changes.label);
    if (changes.metadata !== undefined) set('metadata', this.dialect.json(changes.metadata));
    if (sets.length === 0) return;
    await this.db.run(`UPDATE metamessages SET ${sets.join(', ')} WHERE id = ?`, [...params, id]);
  }

  listMetamessages(
    workspaceId: string,
    peerId: string,
    match: { label?: string; sessionV1Id?: string; messageId?: string },
    query: V1ListQuery,
  ): Promise<Page<V1MetamessageRecord>> {
    // the user's metamessages in order through metamessages_peer (workspace_id, peer_id, pk)
    const user = this.dialect.orderedWithin('mm.peer_id', 'mm.pk', peerId);
    const all = match.label === undefined && match.sessionV1Id === undefined && match.messageId === undefined;
    let where = `mm.workspace_id = ? AND ${user.where}`;
    const params: unknown[] = [workspaceId, ...user.params];
    if (match.label !== undefined) {
      where += ' AND mm.label = ?';
      params.push(match.label);
    }
    if (match.sessionV1Id !== undefined) {
      where += ' AND s.v1_id = ?';
      params.push(match.sessionV1Id);
    }
    if (match.messageId !== undefined) {
      where += ' AND mm.message_id = ?';
      params.push(match.messageId);
    }
    return this.page<MetamessageRow, V1MetamessageRecord>(
      { from: METAMESSAGE_FROM, where, params, order: user.order, metadata: 'mm.metadata' },
      METAMESSAGE_COLUMNS,
      query,
      (row) => this.metamessage(row),
      // all the user's metamessages are counted on its peer; a selection of them is counted here
      all ? () => countPeerMetamessages(this.db, workspaceId, peerId) : undefined,
      // the version moves when the user's list does (0038/0040); a label or link changed in place
      // would move a metamessage in or out of a selection without it
      all ? () => peerListVersion(this.db, 'metamessages_version', workspaceId, peerId) : undefined,
    );
  }

  async metamessagesOfSession(workspaceId: string, peerId: string, sessionId: string): Promise<V1MetamessageRecord[]> {
    const rows = await this.db.all<MetamessageRow>(
      `SELECT ${METAMESSAGE_COLUMNS} FROM ${METAMESSAGE_FROM}
       WHERE mm.workspace_id = ? AND mm.peer_id = ? AND mm.session_id = ? ORDER BY mm.pk`,
      [workspaceId, peerId, sessionId],
    );
    return rows.map((row) => this.metamessage(row));
  }
}
