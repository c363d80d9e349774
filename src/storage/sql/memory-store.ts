import type {
  ConclusionLevel,
  ConclusionRecord,
  ConclusionScope,
  ConclusionCandidate,
  ConclusionMatches,
  DreamState,
  FilterNode,
  ListQuery,
  MemoryStore,
  Page,
  Supersession,
} from '../store.js';
import { keyIn, type Dialect } from './dialect.js';
import { DIALECTS } from './dialects.js';
import { filterCondition, type FilterColumns } from './compile-filter.js';
import type { SqlExecutor } from './driver.js';
import { raw } from './sql.js';
import { conclusionCountRows, countCollectionConclusions, countConclusionsOf } from './kept-counts.js';
import { listPage } from './list-page.js';
import { jsonText } from './json-text.js';
import type { SeekPoints } from './seek-points.js';
import { type VersionRow, versionText } from './rows.js';

/*
 * Conclusions and peer cards (contract §7.2, §7.5). Soft-deleted conclusions (`deleted_at` set)
 * are invisible to every read here. Full-text search uses the FTS5 table `conclusions_fts` on
 * SQLite and the GIN index over `to_tsvector('simple', content)` on PostgreSQL.
 */

interface ConclusionRow {
  id: string;
  workspace_id: string;
  observer_id: string;
  observed_id: string;
  session_id: string | null;
  content: string;
  level: string;
  source_ids: unknown;
  source_session_ids: unknown;
  times_derived: number;
  created_at: unknown;
  valid_from: unknown;
  superseded_at: unknown;
  superseded_by: string | null;
}

const COLUMNS =
  'c.id, c.workspace_id, c.observer_id, c.observed_id, c.session_id, c.content, c.level, c.source_ids, c.source_session_ids, c.times_derived, c.created_at, c.valid_from, c.superseded_at, c.superseded_by';
/** Rows a default read sees: current conclusions (a superseded one has `deleted_at` set too, migration 0042/0044). */
const CURRENT = 'c.deleted_at IS NULL';
/**
 * Rows a read with include_superseded sees: current and superseded, not deleted. Written exactly
 * as the predicate of the `_known` indexes (migration 0042/0044), in a form that `deleted_at IS
 * NULL` does not imply: as `deleted_at IS NULL OR superseded_at IS NOT NULL` (or its NOT form)
 * SQLite and PostgreSQL took those indexes for the default reads too, and walked the superseded
 * rows to skip them.
 */
const KNOWN = '(coalesce(c.superseded_at, c.deleted_at) IS NULL OR c.superseded_at IS NOT NULL)';
/** The rows a read sees: current ones, or with include_superseded the superseded ones too. */
const visibleRows = (includeSuperseded: boolean | undefined) => (includeSuperseded === true ? KNOWN : CURRENT);
const NEWEST_FIRST = 'c.created_at DESC, c.pk DESC';
/** Longest session allowlist whose sessions' newest conclusions are read one session at a time. */
const MERGED_SESSIONS = 16;

/** The Document filter keys (domain/filters/filter-schemas.ts): public and stored names alike. */
const DOCUMENT_FILTER: FilterColumns = {
  columns: {
    id: 'c.id',
    content: 'c.content',
    level: 'c.level',
    workspace_id: 'c.workspace_id',
    workspace_name: 'c.workspace_id',
    observer_id: 'c.observer_id',
    observer: 'c.observer_id',
    observed_id: 'c.observed_id',
    observed: 'c.observed_id',
    session_id: 'c.session_id',
    session_name: 'c.session_id',
    times_derived: 'c.times_derived',
    source_ids: 'c.source_ids',
    created_at: 'c.created_at',
    deleted_at: 'c.deleted_at',
  },
  metadata: 'c.metadata',
  key: 'c.pk',
};

export class SqlMemoryStore implements MemoryStore {
  private readonly dialect: Dialect;

  /** `inTransaction` runs its function in a transaction (joining the one `db` is bound to, if any). */
  constructor(
    private readonly db: SqlExecutor,
    private readonly inTransaction: <T>(fn: (db: SqlExecutor) => Promise<T>) => Promise<T> = (fn) => fn(db),
    /** Where earlier pages of the conclusions lists ended (seek-points.ts); none inside a transaction. */
    private readonly seekPoints?: SeekPoints,
  ) {
    this.dialect = DIALECTS[db.dialect];
  }

  private conclusion(row: ConclusionRow): ConclusionRecord {
    return {
      id: row.id,
      workspaceId: row.workspace_id,
      observerId: row.observer_id,
      observedId: row.observed_id,
      sessionId: row.session_id,
      content: row.content,
      level: row.level as ConclusionLevel,
      sourceIds: readIds(row.source_ids),
      sourceSessionIds: readIds(row.source_session_ids) ?? undefined,
      timesDerived: Number(row.times_derived),
      createdAt: this.dialect.readTime(row.created_at),
      validFrom: row.valid_from === null || row.valid_from === undefined ? this.dialect.readTime(row.created_at) : this.dialect.readTime(row.valid_from),
      supersededAt: row.superseded_at === null || row.superseded_at === undefined ? null : this.dialect.readTime(row.superseded_at),
      supersededBy: row.superseded_by ?? null,
    };
  }

  /**
   * `WHERE` conditions and parameters of a scope (observer, observed, session allowlist);
   * `session`: only that session of the allowlist.
   */
  private scope(scope: ConclusionScope, session?: string): { where: string[]; params: unknown[] } {
    const where = ['c.workspace_id = ?', 'c.observer_id = ?', 'c.observed_id = ?', visibleRows(scope.includeSuperseded)];
    const params: unknown[] = [scope.workspaceId, scope.observerId, scope.observedId];
    if (scope.sessionIds !== undefined) {
      // one session (a context limited to its session) as an equality, which walks the
      // collection's index of that session (migration 0032) in order: as a list the planner
      // walked the whole collection (21 ms on SQLite, 72 on PostgreSQL, for a session among
      // 40,000 conclusions); a list is one JSON array parameter, whatever its length
      const only = session ?? (scope.sessionIds.length === 1 ? scope.sessionIds[0] : undefined);
      if (only !== undefined) where.push('c.session_id = ?');
      else where.push(this.dialect.inJsonArray('c.session_id'));
      params.push(only ?? jsonText(scope.sessionIds));
      // a derived conclusion is seen only when every session its sources came from is allowed
      // (explicit conclusions record none: the test of the column spares them the array's walk)
      where.push(`(c.source_session_ids IS NULL OR NOT EXISTS (SELECT 1 FROM ${this.dialect.jsonArrayElements('c.source_session_ids', 's')} WHERE NOT (${this.dialect.inJsonArray('s.value')})))`);
      params.push(jsonText(scope.sessionIds));
    }
    return { where, params };
  }

  async insertConclusions(rows: ConclusionRecord[]): Promise<void> {
    const c = this.dialect;
    const json = c.jsonParam;
    // pk order = request order, so ties on created_at keep it
    for (let start = 0; start < rows.length; start += 100) {
      const chunk = rows.slice(start, start + 100);
      // only a scope's copies name what they copy (the column is left to its default otherwise)
      const copies = chunk.some((r) => r.copiedFrom !== undefined && r.copiedFrom !== null);
      await this.db.run(
        `INSERT INTO conclusions (id, workspace_id, observer_id, observed_id, session_id, content, level, source_ids, source_session_ids, times_derived, metadata, created_at, valid_from${copies ? ', copied_from' : ''})
         VALUES ${chunk.map(() => `(?, ?, ?, ?, ?, ?, ?, ${json}, ${json}, ?, ${json}, ?, ?${copies ? ', ?' : ''})`).join(', ')}`,
        chunk.flatMap((r) => [
          r.id,
          r.workspaceId,
          r.observerId,
          r.observedId,
          r.sessionId,
          r.content,
          r.level,
          r.sourceIds === null ? null : jsonText(r.sourceIds),
          r.sourceSessionIds === undefined || r.sourceSessionIds === null ? null : jsonText(r.sourceSessionIds),
          r.timesDerived,
          jsonText(r.metadata ?? {}),
          c.time(r.createdAt),
          c.time(r.validFrom ?? r.createdAt),
          ...(copies ? [r.copiedFrom ?? null] : []),
        ]),
      );
    }
  }

  async lockConclusionCounts(rows: readonly Pick<ConclusionRecord, 'workspaceId' | 'observerId' | 'observedId' | 'level'>[]): Promise<void> {
    if (this.db.dialect !== 'postgres' || rows.length === 0) return;
    const keys = [...new Set(rows.map((r) => JSON.stringify([r.workspaceId, r.observerId, r.observedId, r.level])))].sort();
    // missing count rows made (at 0) and existing ones locked, in key order; only for observers
    // that exist, so a missing peer fails the insert that names it, as before
    await this.db.run(
      `INSERT INTO conclusion_counts (workspace_id, observer_id, observed_id, level, n)
       SELECT k.value->>0, k.value->>1, k.value->>2, k.value->>3, 0
       FROM jsonb_array_elements(?::jsonb) WITH ORDINALITY AS k(value, at)
       WHERE EXISTS (SELECT 1 FROM peers p WHERE p.workspace_id = k.value->>0 AND p.id = k.value->>1)
       ORDER BY k.at
       ON CONFLICT (workspace_id, observer_id, observed_id, level) DO UPDATE SET n = conclusion_counts.n`,
      [`[${keys.join(',')}]`],
    );
  }

  listConclusions(workspaceId: string, query: ListQuery): Promise<Page<ConclusionRecord>> {
    // a filter of exactly an observer, an observed peer, or both (what the SDK sends) is that
    // condition, and its total the kept counts of the collections it names; without a filter the
    // total is the workspace's collections' counts summed
    const peers = countedPeersOf(query.filter);
    let from = 'conclusions c';
    let where = `c.workspace_id = ? AND ${visibleRows(query.includeSuperseded)}`;
    const params = [workspaceId];
    const ids = peers === undefined ? idsOf(query.filter) : undefined;
    if (peers !== undefined) {
      const { observerId, observedId } = peers;
      if (observerId !== undefined) {
        where += ' AND c.observer_id = ?';
        params.push(observerId);
      }
      if (observedId !== undefined) {
        where += ' AND c.observed_id = ?';
        params.push(observedId);
      }
    } else if (ids !== undefined) {
      // a filter that names the ids reads them through the id index, the filter still applied:
      // the planner walked the workspace's conclusions in order instead (180 ms for 10 ids
      // among 140,000 conclusions)
      const lookup = this.dialect.rowsByJsonIds('conclusions', 'c');
      from = lookup.from;
      where = `${lookup.where} AND ${where}`;
      params.unshift(jsonText(ids));
    }
    return listPage<ConclusionRow, ConclusionRecord>(
      this.db,
      this.dialect,
      { from, where, params, select: COLUMNS, order: ['c.created_at', 'c.pk'], filterColumns: DOCUMENT_FILTER },
      // newest first unless reversed
      { filter: peers === undefined ? query.filter : null, page: query.page, size: query.size, reverse: !query.reverse },
      (row) => this.conclusion(row),
      () => countConclusionsOf(this.db, workspaceId, peers ?? {}, query.includeSuperseded === true),
      // pages of the workspace's or the named peers' conclusions (a filter beyond that reads by offset)
      this.seekPoints && { points: this.seekPoints, version: () => this.conclusionsVersion(workspaceId, peers ?? {}) },
    );
  }

  /**
   * The version of a workspace's conclusions list, or of the conclusions of an observer, an
   * observed peer or both: the sum of their count rows' `v` (migration 0035), which every change
   * of the list adds to, with the workspace row's incarnation.
   */
  async conclusionsVersion(workspaceId: string, of: { observerId?: string; observedId?: string }): Promise<string | undefined> {
    const rows = conclusionCountRows(of);
    // v1_id is random per workspace row: a recreated workspace never matches an old token
    const row = await this.db.get<VersionRow>(
      `SELECT w.v1_id AS incarnation, (SELECT COALESCE(SUM(v), 0) FROM conclusion_counts WHERE workspace_id = w.id${rows.where}) AS v FROM workspaces w WHERE w.id = ?`,
      [...rows.params, workspaceId],
    );
    return versionText(row);
  }

  async conclusionMatches(search: ConclusionMatches): Promise<number[]> {
    const { where, params } = this.scope(search);
    let from = 'conclusions c';
    let newestFirst = 'c.pk DESC';
    if ('word' in search.term) {
      const match = this.dialect.conclusionTermMatch(search.term.word, search);
      from = match.from;
      newestFirst = match.newestFirst;
      where.unshift(match.where.text);
      params.unshift(...match.where.values);
    } else {
      // text without spaces between its words (CJK): found inside the content, the collection's
      // newest first through its index
      const contains = this.dialect.containsText(raw('c.content'), search.term.substring);
      where.push(contains.text);
      params.push(...contains.values);
      newestFirst = NEWEST_FIRST;
    }
    const filterSql = filterCondition(search.filter, DOCUMENT_FILTER, this.dialect, params);
    if (filterSql !== null) where.push(`(${filterSql})`);
    const rows = await this.db.all<{ pk: number | string }>(`SELECT c.pk FROM ${from} WHERE ${where.join(' AND ')} ORDER BY ${newestFirst} LIMIT ?`, [
      ...params,
      search.limit,
    ]);
    const pks = rows.map((row) => Number(row.pk));
    // one order on both databases, whichever index found them: the newest row first
    return 'word' in search.term ? pks : pks.sort((a, b) => b - a);
  }

  async collectionContents(search: ConclusionScope & { filter: FilterNode | null; limit: number }): Promise<ConclusionCandidate[]> {
    const { where, params } = this.scope(search);
    const filterSql = filterCondition(search.filter, DOCUMENT_FILTER, this.dialect, params);
    if (filterSql !== null) where.push(`(${filterSql})`);
    // through the collection's index, newest first
    const rows = await this.db.all<{ pk: number | string; content: string }>(
      `SELECT c.pk, c.content FROM conclusions c WHERE ${where.join(' AND ')} ORDER BY ${NEWEST_FIRST} LIMIT ?`,
      [...params, search.limit],
    );
    return rows.map((row) => ({ pk: Number(row.pk), content: row.content })).sort((a, b) => b.pk - a.pk);
  }

  async conclusionContents(workspaceId: string, pks: readonly number[], includeSuperseded?: boolean): Promise<ConclusionCandidate[]> {
    if (pks.length === 0) return [];
    // by key alone, the workspace checked here: with it in the statement SQLite walked the
    // workspace's index instead of looking the keys up (85 ms for 44 keys among 140,000 rows)
    const rows = await this.db.all<{ pk: number | string; content: string; workspace_id: string }>(
      `SELECT c.pk, c.content, c.workspace_id FROM conclusions c WHERE ${keyIn(this.dialect, 'c.pk')} AND ${visibleRows(includeSuperseded)}`,
      [jsonText([...pks])],
    );
    return rows.filter((row) => row.workspace_id === workspaceId).map((row) => ({ pk: Number(row.pk), content: row.content }));
  }

  async conclusionsByPks(workspaceId: string, pks: readonly number[], includeSuperseded?: boolean): Promise<{ pk: number; conclusion: ConclusionRecord }[]> {
    if (pks.length === 0) return [];
    const rows = await this.db.all<ConclusionRow & { pk: number | string }>(
      `SELECT c.pk, ${COLUMNS} FROM conclusions c WHERE ${keyIn(this.dialect, 'c.pk')} AND ${visibleRows(includeSuperseded)}`,
      [jsonText([...pks])],
    );
    // the workspace checked here, as in conclusionContents
    const byPk = new Map(rows.filter((row) => row.workspace_id === workspaceId).map((row) => [Number(row.pk), this.conclusion(row)]));
    return pks.flatMap((pk) => {
      const conclusion = byPk.get(pk);
      return conclusion === undefined ? [] : [{ pk, conclusion }];
    });
  }

  countCollection(scope: ConclusionScope): Promise<number> {
    return countCollectionConclusions(this.db, scope);
  }

  async recentConclusions(scope: ConclusionScope, limit: number): Promise<ConclusionRecord[]> {
    const sessions = scope.sessionIds === undefined ? [] : [...new Set(scope.sessionIds)];
    if (sessions.length > 1 && sessions.length <= MERGED_SESSIONS) {
      // each session's newest through the collection's index of that session, then the newest of
      // those: an allowlist as a list walked the whole collection (20 ms on SQLite, 44 on
      // PostgreSQL, for three sessions among 40,000 conclusions)
      const arms: string[] = [];
      const params: unknown[] = [];
      for (const [i, session] of sessions.entries()) {
        const { where, params: own } = this.scope(scope, session);
        arms.push(`SELECT pk FROM (SELECT c.pk FROM conclusions c WHERE ${where.join(' AND ')} ORDER BY ${NEWEST_FIRST} LIMIT ?) AS s${i}`);
        params.push(...own, limit);
      }
      const rows = await this.db.all<ConclusionRow>(
        `SELECT ${COLUMNS} FROM conclusions c WHERE c.pk IN (${arms.join(' UNION ALL ')}) ORDER BY ${NEWEST_FIRST} LIMIT ?`,
        [...params, limit],
      );
      return rows.map((row) => this.conclusion(row));
    }
    if (sessions.length > MERGED_SESSIONS && this.db.dialect === 'postgres') {
      // each allowed session's newest through the collection's index of that session, then the
      // newest of those: walking the collection newest first ran PostgreSQL's semi-join with the
      // list once per row walked (317 ms a representation confined to 1,000 sessions of 10,000
      // conclusions, bench/scopes.ts); SQLite walks it in a few milliseconds (its list is hashed)
      const list = jsonText(sessions);
      const rows = await this.db.all<ConclusionRow>(
        `SELECT ${COLUMNS} FROM conclusions c WHERE c.pk IN (
           SELECT x.pk FROM jsonb_array_elements_text(?::jsonb) AS s (id) CROSS JOIN LATERAL (
             SELECT n.pk FROM conclusions n
             WHERE n.workspace_id = ? AND n.observer_id = ? AND n.observed_id = ? AND n.session_id = s.id AND n.deleted_at IS NULL
               AND (n.source_session_ids IS NULL OR n.source_session_ids <@ ?::jsonb)
             ORDER BY n.created_at DESC, n.pk DESC LIMIT ?) AS x)
         ORDER BY ${NEWEST_FIRST} LIMIT ?`,
        [list, scope.workspaceId, scope.observerId, scope.observedId, list, limit, limit],
      );
      return rows.map((row) => this.conclusion(row));
    }
    const { where, params } = this.scope(scope);
    const rows = await this.db.all<ConclusionRow>(
      `SELECT ${COLUMNS} FROM conclusions c WHERE ${where.join(' AND ')} ORDER BY ${NEWEST_FIRST} LIMIT ?`,
      [...params, limit],
    );
    return rows.map((row) => this.conclusion(row));
  }

  async conclusionsByIds(scope: ConclusionScope, ids: readonly string[], filter: FilterNode | null): Promise<ConclusionRecord[]> {
    if (ids.length === 0) return [];
    const { where, params } = this.scope(scope);
    const filterSql = filterCondition(filter, DOCUMENT_FILTER, this.dialect, params);
    if (filterSql !== null) where.push(`(${filterSql})`);
    // each id through the unique index: walking the pair's index instead took 2 ms for 10 ids
    // in a collection of 10,000 conclusions (36 µs this way)
    const lookup = this.dialect.rowsByJsonIds('conclusions', 'c');
    const rows = await this.db.all<ConclusionRow>(`SELECT ${COLUMNS} FROM ${lookup.from} WHERE ${lookup.where} AND ${where.join(' AND ')}`, [
      jsonText([...ids]),
      ...params,
    ]);
    const byId = new Map(rows.map((row) => [row.id, this.conclusion(row)]));
    return ids.flatMap((id) => byId.get(id) ?? []);
  }

  async mostDerivedConclusions(scope: ConclusionScope, limit: number, excludeIds: readonly string[]): Promise<ConclusionRecord[]> {
    const { where, params } = this.scope(scope);
    if (excludeIds.length > 0) {
      where.push(`NOT (${this.dialect.inJsonArray('c.id')})`);
      params.push(jsonText([...excludeIds]));
    }
    const rows = await this.db.all<ConclusionRow>(
      `SELECT ${COLUMNS} FROM conclusions c WHERE ${where.join(' AND ')} ORDER BY c.times_derived DESC, ${NEWEST_FIRST} LIMIT ?`,
      [...params, limit],
    );
    return rows.map((row) => this.conclusion(row));
  }

  async liveConclusionsAfter(afterPk: number, limit: number): Promise<{ pk: number; id: string; workspaceId: string }[]> {
    const rows = await this.db.all<{ pk: number | string; id: string; workspace_id: string }>(
      'SELECT c.pk, c.id, c.workspace_id FROM conclusions c WHERE c.pk > ? AND c.deleted_at IS NULL ORDER BY c.pk LIMIT ?',
      [afterPk, limit],
    );
    return rows.map((row) => ({ pk: Number(row.pk), id: row.id, workspaceId: row.workspace_id }));
  }

  async findConclusion(workspaceId: string, id: string, options: { includeSuperseded?: boolean } = {}): Promise<ConclusionRecord | undefined> {
    const row = await this.db.get<ConclusionRow>(
      `SELECT ${COLUMNS} FROM conclusions c WHERE c.workspace_id = ? AND c.id = ? AND ${visibleRows(options.includeSuperseded)}`,
      [workspaceId, id],
    );
    return row && this.conclusion(row);
  }

  supersedeConclusions(workspaceId: string, supersessions: readonly Supersession[], now: Date): Promise<Supersession[]> {
    if (supersessions.length === 0) return Promise.resolve([]);
    return this.inTransaction(async (db) => {
      const time = this.dialect.time(now);
      // a scope's copy of a superseded conclusion follows it when the scope holds a copy of the
      // replacement too (same scope collection); found before any lock is taken
      const copies: Supersession[] = [];
      for (const s of supersessions) {
        const rows = await db.all<{ old_id: string; new_id: string }>(
          `SELECT o.id AS old_id, n.id AS new_id FROM conclusions o
           JOIN conclusions n ON n.workspace_id = o.workspace_id AND n.copied_from = ? AND n.observer_id = o.observer_id AND n.observed_id = o.observed_id AND n.deleted_at IS NULL
           WHERE o.workspace_id = ? AND o.copied_from = ? AND o.deleted_at IS NULL`,
          [s.newId, workspaceId, s.oldId],
        );
        copies.push(...rows.map((row) => ({ oldId: row.old_id, newId: row.new_id })));
      }
      supersessions = [...supersessions, ...copies];
      const olds = await new SqlMemoryStore(db).currentConclusionKeys(workspaceId, supersessions.map((s) => s.oldId));
      // the count rows first, as every writer of conclusions takes them (lockConclusionCounts)
      await new SqlMemoryStore(db).lockConclusionCounts([...olds.values()].map((o) => ({ workspaceId, observerId: o.observer_id, observedId: o.observed_id, level: o.level })));
      const done: Supersession[] = [];
      for (const s of supersessions) {
        if (s.oldId === s.newId || !olds.has(s.oldId)) continue;
        const changed = await db.run(
          'UPDATE conclusions SET deleted_at = ?, superseded_at = ?, superseded_by = ? WHERE workspace_id = ? AND id = ? AND deleted_at IS NULL',
          [time, time, s.newId, workspaceId, s.oldId],
        );
        if (changed > 0) done.push(s);
      }
      return done;
    });
  }

  /** The collection and level of each current conclusion among `ids`. */
  private async currentConclusionKeys(workspaceId: string, ids: readonly string[]): Promise<Map<string, { observer_id: string; observed_id: string; level: ConclusionLevel }>> {
    const lookup = this.dialect.rowsByJsonIds('conclusions', 'c');
    const rows = await this.db.all<{ id: string; observer_id: string; observed_id: string; level: ConclusionLevel }>(
      `SELECT c.id, c.observer_id, c.observed_id, c.level FROM ${lookup.from} WHERE ${lookup.where} AND c.workspace_id = ? AND c.deleted_at IS NULL`,
      [jsonText([...new Set(ids)]), workspaceId],
    );
    return new Map(rows.map((row) => [row.id, row]));
  }

  async conclusionHistory(workspaceId: string, id: string, limit: number): Promise<ConclusionRecord[] | undefined> {
    const start = await this.db.get<ConclusionRow & { deleted_at: unknown; pk: number | string }>(
      `SELECT ${COLUMNS}, c.deleted_at, c.pk FROM conclusions c WHERE c.workspace_id = ? AND c.id = ? AND ${KNOWN}`,
      [workspaceId, id],
    );
    if (start === undefined) return undefined;
    // every row of the chain, deleted ones walked through (a deleted link keeps its superseded_by)
    const rows = new Map<string, ConclusionRow & { deleted_at: unknown; pk: number | string; superseded_at: unknown }>([[start.id, start]]);
    const select = `SELECT ${COLUMNS}, c.deleted_at, c.pk FROM conclusions c`;
    // forward: the conclusions that replaced it, up to the current one
    for (let next = start.superseded_by; next !== null && !rows.has(next) && rows.size < limit * 2; ) {
      const row = await this.db.get<ConclusionRow & { deleted_at: unknown; pk: number | string }>(`${select} WHERE c.workspace_id = ? AND c.id = ?`, [workspaceId, next]);
      if (row === undefined) break;
      rows.set(row.id, row);
      next = row.superseded_by;
    }
    // back from each of them: what they superseded, breadth first (one conclusion may have
    // replaced several, so a chain is a tree towards its past)
    for (let frontier = [...rows.keys()]; frontier.length > 0 && rows.size < limit * 2; ) {
      const found = await this.db.all<ConclusionRow & { deleted_at: unknown; pk: number | string }>(
        `${select} WHERE c.workspace_id = ? AND c.superseded_by IN (${frontier.map(() => '?').join(', ')}) ORDER BY c.pk LIMIT ?`,
        [workspaceId, ...frontier, limit * 2],
      );
      frontier = [];
      for (const row of found) {
        if (rows.has(row.id)) continue;
        rows.set(row.id, row);
        frontier.push(row.id);
      }
    }
    // oldest first: by when each became true, then by when it was stored (in storage order)
    const visible = [...rows.values()]
      .filter((row) => row.deleted_at === null || row.superseded_at !== null)
      .map((row) => ({ pk: Number(row.pk), record: this.conclusion(row) }))
      .sort((a, b) => a.record.validFrom!.getTime() - b.record.validFrom!.getTime() || a.record.createdAt.getTime() - b.record.createdAt.getTime() || a.pk - b.pk)
      .map(({ record }) => record);
    return visible.slice(-limit);
  }

  async softDeleteConclusion(workspaceId: string, id: string, now: Date): Promise<boolean> {
    // a superseded conclusion is deleted by clearing its superseded_at (deleted_at is set already):
    // it leaves the include_superseded reads and its history; its superseded_by stays, so a chain
    // is still walked through it
    const remove = async (db: SqlExecutor) =>
      (await db.run('UPDATE conclusions SET deleted_at = ? WHERE workspace_id = ? AND id = ? AND deleted_at IS NULL', [this.dialect.time(now), workspaceId, id])) +
      (await db.run('UPDATE conclusions SET superseded_at = NULL WHERE workspace_id = ? AND id = ? AND superseded_at IS NOT NULL', [workspaceId, id]));
    if (this.db.dialect !== 'postgres') return (await remove(this.db)) > 0;
    // The collection's count row first, as every writer of conclusions takes it
    // (lockConclusionCounts): the update's trigger takes it after the conclusion's row, and a
    // writer holding the count while it reinforces this conclusion waited the other way round.
    return this.inTransaction(async (db) => {
      const row = await db.get<{ observer_id: string; observed_id: string; level: ConclusionLevel }>(
        'SELECT observer_id, observed_id, level FROM conclusions WHERE workspace_id = ? AND id = ? AND (deleted_at IS NULL OR superseded_at IS NOT NULL)',
        [workspaceId, id],
      );
      if (row === undefined) return false;
      await new SqlMemoryStore(db).lockConclusionCounts([{ workspaceId, observerId: row.observer_id, observedId: row.observed_id, level: row.level }]);
      return (await remove(db)) > 0;
    });
  }

  async reinforceConclusion(workspaceId: string, id: string): Promise<number | undefined> {
    const row = await this.db.get<{ times_derived: number }>(
      'UPDATE conclusions SET times_derived = times_derived + 1 WHERE workspace_id = ? AND id = ? AND deleted_at IS NULL RETURNING times_derived',
      [workspaceId, id],
    );
    return row === undefined ? undefined : Number(row.times_derived);
  }

  replaceConclusion(workspaceId: string, oldId: string, record: ConclusionRecord, now: Date): Promise<ConclusionRecord | undefined> {
    return this.inTransaction(async (db) => {
      const old = await db.get<{ times_derived: number }>(
        'UPDATE conclusions SET deleted_at = ? WHERE workspace_id = ? AND id = ? AND deleted_at IS NULL RETURNING times_derived',
        [this.dialect.time(now), workspaceId, oldId],
      );
      if (old === undefined) return undefined;
      const stored = { ...record, timesDerived: Number(old.times_derived) + 1 };
      await new SqlMemoryStore(db).insertConclusions([stored]);
      return stored;
    });
  }

  async ownExplicitConclusions(workspaceId: string, sessionId: string): Promise<ConclusionRecord[]> {
    const rows = await this.db.all<ConclusionRow & { metadata: unknown }>(
      `SELECT ${COLUMNS}, c.metadata FROM conclusions c
       WHERE c.workspace_id = ? AND c.session_id = ? AND c.deleted_at IS NULL AND c.level = 'explicit' AND c.observer_id = c.observed_id
         AND NOT EXISTS (SELECT 1 FROM peers p WHERE p.workspace_id = c.workspace_id AND p.id = c.observer_id AND p.kind = 'scope')
       ORDER BY c.created_at, c.pk`,
      [workspaceId, sessionId],
    );
    return rows.map((row) => ({ ...this.conclusion(row), metadata: this.dialect.readJson(row.metadata) }));
  }

  async copiedSources(workspaceId: string, observerId: string, sessionId: string): Promise<Set<string>> {
    const rows = await this.db.all<{ copied_from: string }>(
      'SELECT copied_from FROM conclusions WHERE workspace_id = ? AND observer_id = ? AND session_id = ? AND deleted_at IS NULL AND copied_from IS NOT NULL',
      [workspaceId, observerId, sessionId],
    );
    return new Set(rows.map((row) => row.copied_from));
  }

  retireSessionConclusions(workspaceId: string, observerId: string, sessionId: string, now: Date): Promise<{ ids: string[]; observedIds: string[] }> {
    return this.inTransaction(async (db) => {
      const time = this.dialect.time(now);
      // the observer's collections' count rows before any conclusion's row (the lock order of
      // docs/decisions/0018-concurrent-writers-postgres.md): every level of them, as the derived ones may go too
      const collections = await db.all<{ observed_id: string; level: string }>(
        'SELECT DISTINCT observed_id, level FROM conclusions WHERE workspace_id = ? AND observer_id = ? AND (deleted_at IS NULL OR superseded_at IS NOT NULL)',
        [workspaceId, observerId],
      );
      await new SqlMemoryStore(db).lockConclusionCounts(
        collections.map((c) => ({ workspaceId, observerId, observedId: c.observed_id, level: c.level as ConclusionLevel }) as ConclusionRecord),
      );
      const first = await db.all<{ id: string; observed_id: string }>(
        `UPDATE conclusions SET deleted_at = ? WHERE workspace_id = ? AND observer_id = ? AND session_id = ? AND level = 'explicit' AND deleted_at IS NULL
         RETURNING id, observed_id`,
        [time, workspaceId, observerId, sessionId],
      );
      // the session's superseded ones leave the include_superseded reads too (deleted as the
      // DELETE route deletes a superseded conclusion)
      await db.run(
        `UPDATE conclusions SET superseded_at = NULL WHERE workspace_id = ? AND observer_id = ? AND session_id = ? AND level = 'explicit' AND superseded_at IS NOT NULL`,
        [workspaceId, observerId, sessionId],
      );
      const ids = first.map((row) => row.id);
      const observed = new Set(first.map((row) => row.observed_id));
      // derived conclusions drawn from what left leave too, and those drawn from them, until none is left
      let removed = new Set(ids);
      while (removed.size > 0) {
        const derived = await db.all<{ id: string; observed_id: string; source_ids: unknown }>(
          `SELECT id, observed_id, source_ids FROM conclusions WHERE workspace_id = ? AND observer_id = ? AND level <> 'explicit' AND deleted_at IS NULL AND source_ids IS NOT NULL`,
          [workspaceId, observerId],
        );
        const next = derived.filter((row) => (readIds(row.source_ids) ?? []).some((id) => removed.has(id)));
        removed = new Set(next.map((row) => row.id));
        for (const row of next) {
          await db.run('UPDATE conclusions SET deleted_at = ? WHERE workspace_id = ? AND id = ? AND deleted_at IS NULL', [time, workspaceId, row.id]);
          ids.push(row.id);
          observed.add(row.observed_id);
        }
      }
      return { ids, observedIds: [...observed].sort() };
    });
  }

  async findPeerCard(workspaceId: string, observerId: string, targetId: string): Promise<string[] | undefined> {
    const row = await this.db.get<{ card: unknown }>(
      'SELECT card FROM peer_cards WHERE workspace_id = ? AND observer_id = ? AND target_id = ?',
      [workspaceId, observerId, targetId],
    );
    if (row === undefined) return undefined;
    const card: unknown = typeof row.card === 'string' ? JSON.parse(row.card) : row.card;
    return Array.isArray(card) ? card.map(String) : [];
  }

  async savePeerCard(workspaceId: string, observerId: string, targetId: string, card: string[], now: Date): Promise<void> {
    await this.db.run(
      `INSERT INTO peer_cards (workspace_id, observer_id, target_id, card, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (workspace_id, observer_id, target_id) DO UPDATE SET card = excluded.card, updated_at = excluded.updated_at`,
      [workspaceId, observerId, targetId, jsonText(card), this.dialect.time(now)],
    );
  }
  async countConclusions(scope: ConclusionScope, level: ConclusionLevel): Promise<number> {
    if (scope.sessionIds === undefined) return countCollectionConclusions(this.db, scope, level);
    const { where, params } = this.scope(scope);
    const row = await this.db.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM conclusions c WHERE ${where.join(' AND ')} AND c.level = ?`, [...params, level]);
    return Number(row?.n ?? 0);
  }

  async dreamState(workspaceId: string, observerId: string, observedId: string): Promise<DreamState | undefined> {
    const row = await this.db.get<{ last_dream_at: unknown; explicit_at_last_dream: number | string }>(
      'SELECT last_dream_at, explicit_at_last_dream FROM collection_dreams WHERE workspace_id = ? AND observer_id = ? AND observed_id = ?',
      [workspaceId, observerId, observedId],
    );
    return row === undefined ? undefined : { lastDreamAt: this.dialect.readTime(row.last_dream_at), explicitAtLastDream: Number(row.explicit_at_last_dream) };
  }

  async saveDreamState(workspaceId: string, observerId: string, observedId: string, state: DreamState): Promise<void> {
    await this.db.run(
      `INSERT INTO collection_dreams (workspace_id, observer_id, observed_id, last_dream_at, explicit_at_last_dream) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (workspace_id, observer_id, observed_id) DO UPDATE SET last_dream_at = excluded.last_dream_at, explicit_at_last_dream = excluded.explicit_at_last_dream`,
      [workspaceId, observerId, observedId, this.dialect.time(state.lastDreamAt), state.explicitAtLastDream],
    );
  }

}

/** A stored id list (JSON text on SQLite, jsonb on PostgreSQL); null when none was recorded. */
function readIds(value: unknown): string[] | null {
  if (value === null || value === undefined) return null;
  const list: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  return Array.isArray(list) ? list.map(String) : null;
}

const OBSERVER_KEYS = new Set(['observer_id', 'observer']);
const OBSERVED_KEYS = new Set(['observed_id', 'observed']);

/**
 * The ids a filter confines the rows to, each once, when it is (or, at its top level, holds with
 * AND) `id` equal to a text or in a list of texts; undefined otherwise.
 */
function idsOf(filter: FilterNode | null): string[] | undefined {
  if (filter === null) return undefined;
  if (filter.kind === 'and') {
    for (const item of filter.items) {
      const ids = idsOf(item);
      if (ids !== undefined) return ids;
    }
    return undefined;
  }
  if (filter.kind === 'compare' && filter.column === 'id' && filter.op === '=' && filter.value.type === 'text') return [filter.value.value];
  if (filter.kind !== 'in' || filter.column !== 'id') return undefined;
  // each once: SQLite joins the list's elements to the rows
  const ids = new Set<string>();
  for (const value of filter.values) {
    if (value.type !== 'text') return undefined;
    ids.add(value.value);
  }
  return [...ids];
}

/**
 * The observer, the observed peer or both a filter names when it is exactly their equalities
 * (one, or an AND of the two): the conclusions they have kept counts for.
 */
function countedPeersOf(filter: FilterNode | null): { observerId?: string; observedId?: string } | undefined {
  if (filter === null) return undefined;
  const items = filter.kind === 'and' ? filter.items : [filter];
  if (items.length === 0 || items.length > 2) return undefined;
  let observerId: string | undefined;
  let observedId: string | undefined;
  for (const item of items) {
    if (item.kind !== 'compare' || item.op !== '=' || item.value.type !== 'text') return undefined;
    if (OBSERVER_KEYS.has(item.column) && observerId === undefined) observerId = item.value.value;
    else if (OBSERVED_KEYS.has(item.column) && observedId === undefined) observedId = item.value.value;
    else return undefined;
  }
  return { observerId, observedId };
}
