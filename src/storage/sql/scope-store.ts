import type { ScopeBackfillRecord, ScopeStore } from '../store.js';
import type { Dialect } from './dialect.js';
import type { SqlExecutor } from './driver.js';

interface BackfillRow {
  session_id: string;
  state: string;
  updated_at: unknown;
  docs_copied: number | string | null;
}

/** The `scope_backfills` table: one row per (scope, session) a backfill was queued for. */
export class SqlScopeStore implements ScopeStore {
  constructor(
    private readonly db: SqlExecutor,
    private readonly d: Dialect,
  ) {}

  async backfills(workspaceId: string, scopePeerId: string): Promise<ScopeBackfillRecord[]> {
    const rows = await this.db.all<BackfillRow>(
      'SELECT session_id, state, updated_at, docs_copied FROM scope_backfills WHERE workspace_id = ? AND scope_peer_id = ? ORDER BY session_id',
      [workspaceId, scopePeerId],
    );
    return rows.map((row) => ({
      sessionId: row.session_id,
      state: row.state as ScopeBackfillRecord['state'],
      updatedAt: this.d.readTime(row.updated_at),
      docsCopied: row.docs_copied === null ? null : Number(row.docs_copied),
    }));
  }

  async saveBackfill(workspaceId: string, scopePeerId: string, record: ScopeBackfillRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO scope_backfills (workspace_id, scope_peer_id, session_id, state, updated_at, docs_copied) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (workspace_id, scope_peer_id, session_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at, docs_copied = excluded.docs_copied`,
      [workspaceId, scopePeerId, record.sessionId, record.state, this.d.time(record.updatedAt), record.docsCopied],
    );
  }

  async deleteBackfill(workspaceId: string, scopePeerId: string, sessionId: string): Promise<void> {
    await this.db.run('DELETE FROM scope_backfills WHERE workspace_id = ? AND scope_peer_id = ? AND session_id = ?', [workspaceId, scopePeerId, sessionId]);
  }
}
