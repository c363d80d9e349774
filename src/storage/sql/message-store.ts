import type { MessageRecord, MessageScope, MessageSearch, MessageStore, Page, SearchCandidate, SeqCandidate, MessageListQuery } from '../store.js';
import type { FilterColumns } from './compile-filter.js';
import { filterCondition } from './compile-filter.js';
import { keyIn, type Dialect, type MatchKeys } from './dialect.js';
import { firstColumn, type SqlExecutor } from './driver.js';
import { jsonText } from './json-text.js';
import { countSessionMessages, countWorkspaceMessages } from './kept-counts.js';
import { listPage } from './list-page.js';
import type { SeekPoints } from './seek-points.js';
import { raw, sql } from './sql.js';
import type { SearchStatistics } from '../postgres/search-statistics.js';
import { MESSAGE_COLUMNS, messageFromRow, type MessageRow, type VersionRow, versionText } from './rows.js';
import { orderBy, sessionMessages } from './session-messages.js';

const MESSAGE_FILTER: FilterColumns = {
  columns: { workspace_id: 'm.workspace_id', session_id: 'm.session_id', peer_id: 'm.peer_id', token_count: 'm.token_count', created_at: 'm.created_at' },
  metadata: 'm.metadata',
  key: 'm.pk',
};

/** Message `m` was sent while the peer (the `?`) was a member of its session: what that peer could see. */
const SEEN_BY_PEER = `EXISTS (SELECT 1 FROM session_peers sp WHERE sp.workspace_id = m.workspace_id
  AND sp.session_id = m.session_id AND sp.peer_id = ? AND m.created_at >= sp.joined_at
  AND (sp.left_at IS NULL OR m.created_at <= sp.left_at))`;

/**
 * A workspace holding at most this part of the database's messages (and at most the dialect's
 * `searchSessionTokens` sessions) is searched through its sessions' tokens: FTS5 walks a term's
 * matches in those sessions instead of its matches in the whole database, each one's workspace
 * read from its row (docs/decisions/0021-search.md).
 */
const NARROWED_SHARE = 1 / 8;

/**
 * A workspace among others is searched through its keys (SqlMessageStore.amongOthers) up to this
 * many sessions (their message counts summed) and messages (its keys built in about 15 ms).
 */
const AMONG_OTHERS_SESSIONS = 256;
const AMONG_OTHERS_MESSAGES = 100_000;

/** A search as the store narrowed it (Dialect MessageTextSearch.amongOthers). */
type NarrowedSearch = MessageSearch & { amongOthers?: boolean };

/** The largest key (a 64-bit integer), as SQL text. */
const MAX_KEY = '9223372036854775807';

/** The `messages` table and its full-text index. */
export class SqlMessageStore implements MessageStore {
  /** `seekPoints`: where earlier pages of its lists ended (seek-points.ts); none inside a transaction. */
  constructor(
    private readonly db: SqlExecutor,
    private readonly d: Dialect,
    private readonly seekPoints?: SeekPoints,
    /** PostgreSQL: what tells a rare word's search from a common one's (search-statistics.ts). */
    private readonly searchStatistics?: SearchStatistics,
  ) {}

  async insert(rows: MessageRecord[]): Promise<number[]> {
    const d = this.d;
    const pks = new Map<string, number>();
    // Multi-row inserts keep a 100-message batch to a few statements; pk order = request order.
    for (let start = 0; start < rows.length; start += 50) {
      const chunk = rows.slice(start, start + 50);
      const inserted = await this.db.all<{ id: string; pk: number | string }>(
        `INSERT INTO messages (id, workspace_id, session_id, peer_id, content, metadata, token_count, created_at)
         VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}
         RETURNING id, pk`,
        chunk.flatMap((m) => [m.id, m.workspaceId, m.sessionId, m.peerId, m.content, d.json(m.metadata), m.tokenCount, d.time(m.createdAt)]),
      );
      for (const row of inserted) pks.set(row.id, Number(row.pk));
    }
    return rows.map((row) => pks.get(row.id)!);
  }

  list(workspaceId: string, sessionId: string, query: MessageListQuery): Promise<Page<MessageRecord>> {
    const session = sessionMessages(this.d, workspaceId, sessionId);
    let where = session.where;
    const params = session.params;
    if (query.peerPerspective !== undefined) {
      where += ` AND ${SEEN_BY_PEER}`;
      params.push(query.peerPerspective);
    }
    return listPage<MessageRow, MessageRecord>(
      this.db,
      this.d,
      { from: 'messages m', where, params, select: MESSAGE_COLUMNS, order: session.order, filterColumns: MESSAGE_FILTER },
      query,
      (row) => messageFromRow(this.d, row),
      query.peerPerspective === undefined ? () => countSessionMessages(this.db, workspaceId, sessionId) : undefined,
      // a peer's perspective depends on memberships, which the messages' version does not follow
      query.peerPerspective === undefined && this.seekPoints !== undefined
        ? { points: this.seekPoints, version: () => this.version(workspaceId, sessionId) }
        : undefined,
    );
  }

  version(workspaceId: string, sessionId: string): Promise<string | undefined> {
    return sessionMessagesVersion(this.db, workspaceId, sessionId);
  }

  async find(workspaceId: string, sessionId: string, id: string): Promise<MessageRecord | undefined> {
    const row = await this.db.get<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.workspace_id = ? AND m.session_id = ? AND m.id = ?`, [
      workspaceId,
      sessionId,
      id,
    ]);
    return row && messageFromRow(this.d, row);
  }

  async updateMetadata(workspaceId: string, sessionId: string, id: string, metadata: Record<string, unknown>): Promise<MessageRecord | undefined> {
    // The session's row is locked first (the subquery's one-time test runs before the message's
    // row is taken), ahead of the message whose trigger writes it, as the session's other
    // writers and its purge take them.
    const row = await this.db.get<MessageRow>(
      `UPDATE messages SET metadata = ? WHERE workspace_id = ? AND session_id = ? AND id = ?
         AND EXISTS (SELECT 1 FROM sessions s WHERE s.workspace_id = ? AND s.id = ?${this.d.forWrite})
       RETURNING id, workspace_id, session_id, peer_id, content, metadata, token_count, created_at`,
      [this.d.json(metadata), workspaceId, sessionId, id, workspaceId, sessionId],
    );
    return row && messageFromRow(this.d, row);
  }

  async inSession(workspaceId: string, sessionId: string, messageId: string): Promise<boolean> {
    const row = await this.db.get('SELECT 1 AS one FROM messages WHERE workspace_id = ? AND session_id = ? AND id = ?', [workspaceId, sessionId, messageId]);
    return row !== undefined;
  }

  async copy(workspaceId: string, fromSessionId: string, toSessionId: string, untilMessageId: string | undefined, now: Date, newId: () => string): Promise<void> {
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
    const d = this.d;
    for (const row of rows) {
      await this.db.run(
        `INSERT INTO messages (id, workspace_id, session_id, peer_id, content, metadata, token_count, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        [newId(), workspaceId, toSessionId, row.peer_id, row.content, d.json(d.readJson(row.metadata)), row.token_count, d.time(now)],
      );
    }
  }

  async searchCandidates(asked: MessageSearch): Promise<SeqCandidate[]> {
    if (asked.terms.length === 0) return [];
    const search = await this.toSessionsOfSmallWorkspace(asked);
    if (search === undefined) return [];
    const { sql, params } = this.searchQuery(await this.withPlan(search), 'm.pk AS seq, m.id, m.content');
    if (this.d.arrayOf === undefined) {
      const rows = await this.db.all<SearchCandidate & { seq: number | string }>(sql, params);
      return rows.map((row) => ({ seq: Number(row.seq), id: row.id, content: row.content }));
    }
    const candidates = await this.candidateArrays(this.d.arrayOf, `FROM (${sql}) found`, params);
    // newest first, as searchQuery orders them (the arrays keep the rows' order in practice)
    return isNewestFirst(candidates) ? candidates : candidates.sort((a, b) => b.seq - a.seq);
  }

  /**
   * Candidates (seq, id, content) of `from` (a FROM clause and what follows it, over columns
   * `seq`, `id` and `content`) as three arrays in one row, in no promised order: SQLite's driver
   * hands over a row as an object at about 2 µs each, and 500 candidates as arrays cost a search
   * some 20 % less (bench/README.md, "Search candidates as arrays").
   */
  private async candidateArrays(
    arrayOf: NonNullable<Dialect['arrayOf']>,
    from: string,
    params: readonly unknown[],
    filter?: { where: string; value: unknown },
  ): Promise<SeqCandidate[]> {
    const array = (column: string) => arrayOf(column, filter?.where);
    // the filter's placeholder comes once in each array, before the FROM clause
    const row = await this.db.get<{ seqs: unknown; ids: unknown; contents: unknown }>(
      `SELECT ${array('seq')} AS seqs, ${array('id')} AS ids, ${array('content')} AS contents ${from}`,
      filter === undefined ? params : [filter.value, filter.value, filter.value, ...params],
    );
    if (row === undefined) return [];
    const seqs = JSON.parse(String(row.seqs)) as number[];
    const ids = JSON.parse(String(row.ids)) as string[];
    const contents = JSON.parse(String(row.contents)) as string[];
    const candidates: SeqCandidate[] = new Array(seqs.length);
    for (let at = 0; at < seqs.length; at++) candidates[at] = { seq: seqs[at], id: ids[at], content: contents[at] };
    return candidates;
  }

  async searchMatches(asked: MessageSearch): Promise<number[]> {
    if (asked.terms.length === 0) return [];
    const search = await this.toSessionsOfSmallWorkspace(asked);
    if (search === undefined) return [];
    const keys = await this.matchKeys(search);
    if (keys !== undefined) {
      const seqs = await firstColumn<number | string>(this.db, keys.sql, keys.params);
      // none from a workspace's search: no match, or another workspace got messages meanwhile
      if (seqs.length > 0 || !keys.gated) return seqs.map(Number);
    }
    // the pk alone: of up to 1,000 matches per term only the chosen candidates need their id
    const { sql, params } = this.searchQuery(await this.withPlan(search), 'm.pk AS seq');
    const seqs = await firstColumn<number | string>(this.db, sql, params);
    return seqs.map(Number);
  }

  /** A workspace's search told whether its words are rare enough to read all their matches (PostgreSQL). */
  private async withPlan<S extends MessageSearch>(search: S): Promise<S & { sparse?: boolean }> {
    if (this.searchStatistics === undefined || search.sessionId !== undefined || search.peerId !== undefined) return search;
    return { ...search, sparse: await this.searchStatistics.sparse(this.db, search.workspaceId, search.terms, search.candidates) };
  }

  /**
   * A workspace's search narrowed to its sessions (`withinSessions`, the same messages) when it
   * has few and holds a small part of the database's messages, so the index walks a common
   * word's matches in those sessions, not all of the database's until enough are the
   * workspace's (a workspace of 300 messages beside 1,000,000 others: 20 ms a term, against
   * 0.4 ms). Undefined: the workspace holds no messages.
   */
  private async toSessionsOfSmallWorkspace(search: MessageSearch): Promise<NarrowedSearch | undefined> {
    const most = this.d.searchSessionTokens;
    if (most === 0 || search.sessionId !== undefined || search.peerId !== undefined || search.withinSessions !== undefined) return search;
    // a workspace of more sessions is told by one step of the index (about 5 µs, against 24 µs
    // for reading its first sessions' rows)
    if (await this.hasMoreSessions(search.workspaceId, most)) return this.amongOthers(search);
    const sessions = await this.db.all<{ id: string; n: number | string }>('SELECT id, message_count AS n FROM sessions WHERE workspace_id = ? LIMIT ?', [
      search.workspaceId,
      most + 1,
    ]);
    if (sessions.length > most) return search;
    const held = sessions.reduce((sum, session) => sum + Number(session.n), 0);
    if (held === 0) return undefined;
    if (held > (await this.databaseMessages()) * NARROWED_SHARE) return search;
    // words in at most `candidates` messages of the whole database are walked as fast as
    // through the tokens, which cost some 100 to 150 µs each: the index's keys say which
    const keys = this.d.messageSearch(search).keys;
    if (keys !== undefined && !(await this.keysBeyond(keys, search.candidates))) return search;
    return { ...search, withinSessions: sessions.map((session) => session.id) };
  }

  /**
   * A workspace's search kept to the workspace's keys inside the index's walk (Dialect
   * MessageTextSearch.amongOthers) when other workspaces hold most of the database's messages
   * and the word is in many of them: the walk passes their matches (a common word's matches in
   * a workspace of 2,000 messages, older than 300,000 of another: 97 ms reading each match's
   * row, 25 ms by the keys). Building the workspace's keys costs about 0.15 µs a message, so a
   * workspace of more than AMONG_OTHERS_SESSIONS sessions or AMONG_OTHERS_MESSAGES messages,
   * or a word whose matches the walk passes quickly anyway, is searched as before.
   */
  private async amongOthers(search: MessageSearch): Promise<NarrowedSearch> {
    const keys = this.d.messageSearch(search).keys;
    if (keys?.otherWorkspaces === undefined) return search;
    const others = await this.db.get<{ others: number | boolean }>(`SELECT ${keys.otherWorkspaces.text} AS others`, keys.otherWorkspaces.values);
    if (Number(others?.others ?? 0) === 0) return search;
    if (await this.hasMoreSessions(search.workspaceId, AMONG_OTHERS_SESSIONS)) return search;
    const held = await this.db.get<{ n: number | string | null }>('SELECT sum(message_count) AS n FROM sessions WHERE workspace_id = ?', [search.workspaceId]);
    const messages = Number(held?.n ?? 0);
    if (messages > AMONG_OTHERS_MESSAGES) return search;
    if (messages > (await this.databaseMessages()) * NARROWED_SHARE) return search;
    // a word in fewer messages of the database than a quarter of the workspace's is walked
    // about as fast through the rows as the keys can be listed
    return (await this.keysBeyond(keys, Math.max(search.candidates, Math.ceil(messages / 4)))) ? { ...search, amongOthers: true } : search;
  }

  /** Whether the workspace has more than `count` sessions: one step of the index (about 5 µs). */
  private async hasMoreSessions(workspaceId: string, count: number): Promise<boolean> {
    return (await this.db.get('SELECT 1 AS one FROM sessions WHERE workspace_id = ? LIMIT 1 OFFSET ?', [workspaceId, count])) !== undefined;
  }

  /** The database's messages, from the newest key: one seek (deleted ones count too). */
  private async databaseMessages(): Promise<number> {
    return Number((await this.db.get<{ n: number | string | null }>('SELECT max(pk) AS n FROM messages'))?.n ?? 0);
  }

  /** Whether the index holds more than `count` matches of `keys` in the whole database (its keys alone). */
  private async keysBeyond(keys: MatchKeys, count: number): Promise<boolean> {
    const row = await this.db.get(`SELECT 1 AS one FROM ${keys.from} WHERE ${keys.where.text} ORDER BY ${keys.newestFirst} LIMIT 1 OFFSET ?`, [...keys.where.values, count]);
    return row !== undefined;
  }

  /**
   * A term's matches from the full-text index alone, when the dialect reads them so and the
   * index holds the whole search: no condition on the rows (a filter of the sessions the index
   * narrows to is held), and the scope named by the index's tokens, or a workspace that is the
   * only one holding messages (checked first, so a store of many workspaces does not walk the
   * index for nothing). Undefined: the rows must be read.
   */
  private async matchKeys(search: MessageSearch): Promise<{ sql: string; params: unknown[]; gated: boolean } | undefined> {
    const keys = this.d.messageSearch(search).keys;
    if (keys === undefined || search.peerPerspective !== undefined) return undefined;
    if (search.filter !== null && !(search.filterIsWithinSessions === true && keys.holdsWithinSessions)) return undefined;
    if (keys.otherWorkspaces !== undefined) {
      const others = await this.db.get<{ others: number | boolean }>(`SELECT ${keys.otherWorkspaces.text} AS others`, keys.otherWorkspaces.values);
      if (Number(others?.others ?? 1) !== 0) return undefined;
    }
    // the check again, in the statement, as a bound on the keys the index walks (-1: none), so a
    // message another workspace gets after the check is never among them (a condition the index
    // is not given, such as NOT EXISTS, is checked on every match: all of a common word's)
    const where = keys.otherWorkspaces === undefined ? keys.where
      : sql`${keys.where} AND ${raw(keys.key)} <= (SELECT CASE WHEN ${keys.otherWorkspaces} THEN -1 ELSE ${raw(MAX_KEY)} END)`;
    return {
      sql: `SELECT ${keys.key} AS seq FROM ${keys.from} WHERE ${where.text} ORDER BY ${keys.newestFirst} LIMIT ?`,
      params: [...where.values, search.candidates],
      gated: keys.otherWorkspaces !== undefined,
    };
  }

  async countInScope(scope: MessageScope, cap: number): Promise<number> {
    if (scope.peerId === undefined) {
      // sessions and workspaces keep their messages' counts (triggers, in the insert's
      // transaction): a session's is one row, a workspace's its stripes (decision 0042), where a
      // count of its messages up to the cap read 10,000 index entries once it had that many
      return Math.min(
        cap,
        scope.sessionId !== undefined ? await countSessionMessages(this.db, scope.workspaceId, scope.sessionId) : await countWorkspaceMessages(this.db, scope.workspaceId),
      );
    }
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
    const row = await this.db.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM messages WHERE ${where.join(' AND ')} LIMIT ?) s`, params);
    return Number(row?.n ?? 0);
  }

  async filterIds(search: Omit<MessageSearch, 'terms' | 'candidates'>, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    // each id through the unique index, not the whole workspace, session or sender checked
    const byId = this.d.rowsByJsonIds('messages', 'm');
    const params: unknown[] = [jsonText([...ids]), search.workspaceId];
    const where = [byId.where, 'm.workspace_id = ?'];
    const filterSql = this.scope(search, where, params);
    if (filterSql !== null) where.push(`(${filterSql})`);
    const rows = await this.db.all<{ id: string }>(`SELECT m.id FROM ${byId.from} WHERE ${where.join(' AND ')}`, params);
    return new Set(rows.map((row) => row.id));
  }

  /**
   * Adds a message search's session, sender and `peer_perspective` conditions (messages `m`) to
   * `where`, compiles its filter, and returns its SQL (null: none).
   */
  private scope(search: Omit<MessageSearch, 'terms' | 'candidates'>, where: string[], params: unknown[], holds?: 'session' | 'sender' | 'workspace'): string | null {
    if (search.sessionId !== undefined && holds !== 'session') {
      where.push('m.session_id = ?');
      params.push(search.sessionId);
    }
    if (search.peerId !== undefined && holds !== 'sender') {
      where.push('m.peer_id = ?');
      params.push(search.peerId);
    }
    if (search.peerPerspective !== undefined) {
      where.push(SEEN_BY_PEER);
      params.push(search.peerPerspective);
    }
    return filterCondition(search.filter, MESSAGE_FILTER, this.d, params);
  }

  /** The newest messages of the scope holding every word of the search, filtered, newest first. */
  private searchQuery(search: MessageSearch & { sparse?: boolean }, columns: string): { sql: string; params: unknown[] } {
    const match = this.d.messageSearch(search);
    const params: unknown[] = [...match.where.values];
    const where: string[] = [match.where.text];
    if (match.holds !== 'workspace') {
      where.push('m.workspace_id = ?');
      params.push(search.workspaceId);
    }
    const filterSql = this.scope(search, where, params, match.holds);
    if (filterSql !== null) where.push(`(${filterSql})`);
    params.push(search.candidates);
    return { sql: `SELECT ${columns} FROM ${match.from} WHERE ${where.join(' AND ')} ORDER BY ${match.newestFirst} LIMIT ?`, params };
  }

  async searchContents(workspaceId: string, seqs: readonly number[]): Promise<SeqCandidate[]> {
    if (seqs.length === 0) return [];
    // by row (the primary key) through one statement whatever the count: about half the time of
    // 1,000 look-ups through the id index. The workspace is checked on the rows read: named in
    // the statement, it would lead SQLite to walk the workspace's index instead.
    const from = `FROM (SELECT m.pk AS seq, m.id, m.content, m.workspace_id FROM messages m WHERE ${keyIn(this.d, 'm.pk')}) found`;
    if (this.d.arrayOf !== undefined) return this.candidateArrays(this.d.arrayOf, from, [JSON.stringify(seqs)], { where: 'workspace_id = ?', value: workspaceId });
    const rows = await this.db.all<SearchCandidate & { seq: number | string; workspace_id: string }>(`SELECT seq, id, content, workspace_id ${from}`, [JSON.stringify(seqs)]);
    return rows.filter((row) => row.workspace_id === workspaceId).map((row) => ({ seq: Number(row.seq), id: row.id, content: row.content }));
  }

  byIds(workspaceId: string, ids: readonly string[]): Promise<MessageRecord[]> {
    // by id alone, so the unique index on id is used (ids are unique across workspaces); with the
    // workspace in the WHERE clause SQLite reads the workspace's whole index range instead
    return this.byKeys(workspaceId, 'id', ids);
  }

  bySeqs(workspaceId: string, seqs: readonly number[]): Promise<MessageRecord[]> {
    // by row (the primary key): one look-up each, where an id is found through its index first
    return this.byKeys(workspaceId, 'pk', seqs);
  }

  /** The messages of the workspace among those whose `column` is one of `keys`, in no order. */
  private async byKeys(workspaceId: string, column: 'id' | 'pk', keys: readonly (string | number)[]): Promise<MessageRecord[]> {
    if (keys.length === 0) return [];
    const rows = await this.db.all<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.${column} IN (${keys.map(() => '?').join(', ')})`, keys);
    return rows.filter((row) => row.workspace_id === workspaceId).map((row) => messageFromRow(this.d, row));
  }

  async recent(workspaceId: string, sessionId: string, limit: number, before?: number): Promise<(MessageRecord & { seq: number })[]> {
    const session = sessionMessages(this.d, workspaceId, sessionId);
    const params = session.params;
    let older = '';
    if (before !== undefined) {
      older = ' AND m.pk < ?';
      params.push(before);
    }
    const rows = await this.db.all<MessageRow & { pk: number }>(
      `SELECT ${MESSAGE_COLUMNS}, m.pk FROM messages m WHERE ${session.where}${older} ORDER BY ${orderBy(session.order, 'DESC')} LIMIT ?`,
      [...params, limit],
    );
    return rows.map((row) => ({ ...messageFromRow(this.d, row), seq: Number(row.pk) }));
  }
}

/** Whether `candidates` come newest first (highest seq first). */
function isNewestFirst(candidates: readonly SeqCandidate[]): boolean {
  for (let at = 1; at < candidates.length; at++) if (candidates[at].seq > candidates[at - 1].seq) return false;
  return true;
}

/** MessageStore.version: the session's messages' version with the session row's incarnation. */
export async function sessionMessagesVersion(db: SqlExecutor, workspaceId: string, sessionId: string): Promise<string | undefined> {
  // v1_id is random per session row (unique), so a recreated session never matches an old token
  const row = await db.get<VersionRow>('SELECT v1_id AS incarnation, messages_version AS v FROM sessions WHERE workspace_id = ? AND id = ?', [
    workspaceId,
    sessionId,
  ]);
  return versionText(row);
}
