import type { Created, FieldChanges, ListQuery, ModelUsageRow, ModelUsageTotal, NewRow, Page, WorkspaceCounts, WorkspaceRecord, WorkspaceStore } from '../store.js';
import type { FilterColumns } from './compile-filter.js';
import type { Dialect } from './dialect.js';
import { RowVanishedError, type SqlExecutor } from './driver.js';
import { listPage, type PageBase } from './list-page.js';
import { WORKSPACE_COLUMNS, workspaceFromRow, type WorkspaceRow } from './rows.js';
import { fieldChanges } from './field-changes.js';
import { countActiveSessions, countWorkspaces } from './kept-counts.js';
import type { SeekPoints } from './seek-points.js';
import { purgeHoursBefore } from './finished-hour.js';

const WORKSPACE_FILTER: FilterColumns = { columns: { id: 'w.id', created_at: 'w.created_at' }, metadata: 'w.metadata', key: 'w.pk' };

const WORKSPACE_LIST: PageBase = {
  from: 'workspaces w',
  where: '1 = 1',
  params: [],
  select: WORKSPACE_COLUMNS,
  order: ['w.created_at', 'w.pk'],
  filterColumns: WORKSPACE_FILTER,
};

/**
 * Locks the workspace's row until `db`'s transaction ends (Dialect.forWrite). Taken before an
 * update of a peer row: a writer adding a new peer and members to a session holds the workspace
 * row (peer_count) and then wants the members' rows (sessions_version), while the peer update's
 * trigger writes the workspace row after the peer's; taking the workspace row first keeps one
 * order, workspace then peers, and the two wait for each other instead of deadlocking.
 */
export async function lockWorkspaceRow(db: SqlExecutor, d: Dialect, workspaceId: string): Promise<void> {
  await db.get(`SELECT 1 FROM workspaces WHERE id = ?${d.forWrite}`, [workspaceId]);
}

/**
 * The version of the list of workspaces (v3/v2 workspaces, v1 apps): moves when a workspace is
 * added or removed, which are the only changes that move one in the list (migration 0036 on
 * SQLite, 0038 on PostgreSQL).
 */
export async function workspacesVersion(db: SqlExecutor): Promise<string | undefined> {
  const row = await db.get<{ v: number | string }>('SELECT version AS v FROM workspace_list');
  return row === undefined ? undefined : String(row.v);
}

/** How long a workspace delete waits for a lock before it yields and runs again (PostgreSQL). */
const DELETE_LOCK_WAIT_MS = 200;

/** The `workspaces` table. */
export class SqlWorkspaceStore implements WorkspaceStore {
  /** `seekPoints`: where earlier pages of the list ended (seek-points.ts); none inside a transaction. */
  constructor(
    private readonly db: SqlExecutor,
    private readonly d: Dialect,
    private readonly seekPoints?: SeekPoints,
  ) {}

  find(id: string): Promise<WorkspaceRecord | undefined> {
    return this.findLocking(id, '');
  }

  findForWrite(id: string): Promise<WorkspaceRecord | undefined> {
    return this.findLocking(id, this.d.forWrite);
  }

  private async findLocking(id: string, lock: string): Promise<WorkspaceRecord | undefined> {
    const row = await this.db.get<WorkspaceRow>(`SELECT ${WORKSPACE_COLUMNS} FROM workspaces w WHERE w.id = ?${lock}`, [id]);
    return row && workspaceFromRow(this.d, row);
  }

  async createIfAbsent(row: NewRow, now: Date): Promise<Created<WorkspaceRecord>> {
    const d = this.d;
    const inserted = await this.db.get<WorkspaceRow>(
      `INSERT INTO workspaces (id, metadata, configuration, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (id) DO NOTHING RETURNING id, metadata, configuration, created_at`,
      [row.id, d.json(row.metadata), d.json(row.configuration), d.time(now)],
    );
    if (inserted !== undefined) return { record: workspaceFromRow(d, inserted), created: true };
    const existing = await this.find(row.id);
    if (existing === undefined) throw new RowVanishedError(`workspace ${row.id} vanished during get-or-create`);
    return { record: existing, created: false };
  }

  async update(id: string, changes: FieldChanges): Promise<WorkspaceRecord | undefined> {
    const { sets, params } = fieldChanges(this.d, changes);
    if (sets.length === 0) return this.find(id);
    const row = await this.db.get<WorkspaceRow>(
      `UPDATE workspaces SET ${sets.join(', ')} WHERE id = ? RETURNING id, metadata, configuration, created_at`,
      [...params, id],
    );
    return row && workspaceFromRow(this.d, row);
  }

  list(query: ListQuery): Promise<Page<WorkspaceRecord>> {
    return listPage<WorkspaceRow, WorkspaceRecord>(
      this.db,
      this.d,
      WORKSPACE_LIST,
      query,
      (row) => workspaceFromRow(this.d, row),
      () => countWorkspaces(this.db),
      this.seekPoints && { points: this.seekPoints, version: () => workspacesVersion(this.db) },
    );
  }

  async delete(id: string, options: { yieldLocks?: boolean } = {}): Promise<boolean> {
    const lock = this.d.forDelete;
    if (lock !== '') {
      // Writers take a session's row, then the workspace row (the counters' triggers), then peer
      // rows (lockWorkspaceRow); the cascade below would take them in its own order and meet a
      // writer holding a session while waiting for the workspace row this delete holds, a
      // deadlock PostgreSQL ends after deadlock_timeout (a second). Taking them first, in the
      // writers' order (sessions sorted, as no writer takes two), keeps one order with most.
      // Writers whose foreign key checks take a parent's row before their own writes (a
      // conclusion, a membership) can still close a cycle with a delete, which whatever order
      // it takes its rows in must wait for every reference: so with `yieldLocks` the delete gives
      // way, its lock waits ending after DELETE_LOCK_WAIT_MS and the delete run again, rather
      // than a writer being ended a second later.
      if (options.yieldLocks === true) await this.d.yieldLocksAfter(this.db, DELETE_LOCK_WAIT_MS);
      await this.db.all(`SELECT 1 FROM sessions WHERE workspace_id = ? ORDER BY id${lock}`, [id]);
      await this.db.get(`SELECT 1 FROM workspaces WHERE id = ?${lock}`, [id]);
      await this.db.all(`SELECT 1 FROM peers WHERE workspace_id = ? ORDER BY id${lock}`, [id]);
    }
    // Children first so the counters' triggers find the workspace row still present.
    await this.db.run('DELETE FROM messages WHERE workspace_id = ?', [id]);
    await this.db.run('DELETE FROM session_peers WHERE workspace_id = ?', [id]);
    return (await this.db.run('DELETE FROM workspaces WHERE id = ?', [id])) > 0;
  }

  countActiveSessions(workspaceId: string): Promise<number> {
    return countActiveSessions(this.db, workspaceId);
  }

  async counts(id: string): Promise<WorkspaceCounts | undefined> {
    // each a kept count: the workspace's row, its message stripes (at most 16 rows) and its
    // collections' conclusion counts (a row per collection and level), never the rows counted
    const row = await this.db.get<Record<keyof WorkspaceCounts, number | string | null>>(
      `SELECT w.peer_count AS peers, w.active_session_count AS sessions,
         (SELECT SUM(m.n) FROM message_counts m WHERE m.workspace_id = w.id) AS messages,
         (SELECT SUM(c.n) FROM conclusion_counts c WHERE c.workspace_id = w.id) AS conclusions
       FROM workspaces w WHERE w.id = ?`,
      [id],
    );
    if (row === undefined) return undefined;
    return { peers: Number(row.peers ?? 0), sessions: Number(row.sessions ?? 0), messages: Number(row.messages ?? 0), conclusions: Number(row.conclusions ?? 0) };
  }

  async addModelUsage(rows: readonly ModelUsageRow[]): Promise<void> {
    for (const r of rows) {
      // a workspace deleted since its calls were made has nothing to count in
      await this.db.run(
        `INSERT INTO model_usage (workspace_id, hour, module, model, calls, failed_calls, input_tokens, output_tokens)
         SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = ?)
         ON CONFLICT (workspace_id, hour, module, model) DO UPDATE SET
           calls = model_usage.calls + excluded.calls, failed_calls = model_usage.failed_calls + excluded.failed_calls,
           input_tokens = model_usage.input_tokens + excluded.input_tokens, output_tokens = model_usage.output_tokens + excluded.output_tokens`,
        [r.workspaceId, r.hour, r.module, r.model, r.calls, r.failedCalls, r.inputTokens, r.outputTokens, r.workspaceId],
      );
    }
  }

  async modelUsage(workspaceId: string, sinceHour: number): Promise<ModelUsageTotal[]> {
    const rows = await this.db.all<Record<keyof ModelUsageTotal, number | string>>(
      `SELECT module, model, SUM(calls) AS calls, SUM(failed_calls) AS "failedCalls", SUM(input_tokens) AS "inputTokens", SUM(output_tokens) AS "outputTokens"
       FROM model_usage WHERE workspace_id = ? AND hour >= ? GROUP BY module, model ORDER BY module, model`,
      [workspaceId, sinceHour],
    );
    return rows.map((r) => ({
      module: String(r.module),
      model: String(r.model),
      calls: Number(r.calls),
      failedCalls: Number(r.failedCalls),
      inputTokens: Number(r.inputTokens),
      outputTokens: Number(r.outputTokens),
    }));
  }

  purgeModelUsage(before: Date, limit: number): Promise<number> {
    return purgeHoursBefore(this.db, 'model_usage', ['workspace_id', 'hour', 'module', 'model'], before, limit);
  }
}
