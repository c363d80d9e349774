import type { ConclusionLevel, ConclusionScope } from '../store.js';
import type { SqlExecutor } from './driver.js';

/*
 * Counts that triggers keep in the writing transaction, on the owning row (migrations 0001, 0003,
 * 0023 and 0028), per collection and level (0029) or in a row of their own (the workspaces,
 * 0036/0038), so a list's total without a filter is a row or a few read, not a count of the rows
 * listed. Each is 0 when nothing is counted.
 */

async function keptCount(db: SqlExecutor, sql: string, params: readonly unknown[]): Promise<number> {
  const row = await db.get<{ n: number | string | null }>(sql, params);
  return Number(row?.n ?? 0);
}

/** Every workspace (migration 0036 on SQLite, 0038 on PostgreSQL). */
export function countWorkspaces(db: SqlExecutor): Promise<number> {
  return keptCount(db, 'SELECT workspace_count AS n FROM workspace_list', []);
}

/** The workspace's ordinary peers (scopes apart, migration 0039 on SQLite, 0041 on PostgreSQL). */
export function countPeers(db: SqlExecutor, workspaceId: string): Promise<number> {
  return keptCount(db, 'SELECT peer_count AS n FROM workspaces WHERE id = ?', [workspaceId]);
}

/** The workspace's scopes. */
export function countScopes(db: SqlExecutor, workspaceId: string): Promise<number> {
  return keptCount(db, 'SELECT scope_count AS n FROM workspaces WHERE id = ?', [workspaceId]);
}

/** The workspace's active sessions. */
export function countActiveSessions(db: SqlExecutor, workspaceId: string): Promise<number> {
  return keptCount(db, 'SELECT active_session_count AS n FROM workspaces WHERE id = ?', [workspaceId]);
}

/** The sessions the peer is a member of. */
export function countPeerSessions(db: SqlExecutor, workspaceId: string, peerId: string): Promise<number> {
  return keptCount(db, 'SELECT session_count AS n FROM peers WHERE workspace_id = ? AND id = ?', [workspaceId, peerId]);
}

/** The metamessages of a v1 user (its peer). */
export function countPeerMetamessages(db: SqlExecutor, workspaceId: string, peerId: string): Promise<number> {
  return keptCount(db, 'SELECT metamessage_count AS n FROM peers WHERE workspace_id = ? AND id = ?', [workspaceId, peerId]);
}

/** The session's messages. */
export function countSessionMessages(db: SqlExecutor, workspaceId: string, sessionId: string): Promise<number> {
  return keptCount(db, 'SELECT message_count AS n FROM sessions WHERE workspace_id = ? AND id = ?', [workspaceId, sessionId]);
}

/** A collection's conclusions (not deleted), of one level or of all. */
export function countCollectionConclusions(db: SqlExecutor, scope: ConclusionScope, level?: ConclusionLevel): Promise<number> {
  const params: unknown[] = [scope.workspaceId, scope.observerId, scope.observedId];
  if (level !== undefined) params.push(level);
  const ofLevel = level === undefined ? '' : ' AND level = ?';
  return keptCount(db, `SELECT SUM(n) AS n FROM conclusion_counts WHERE workspace_id = ? AND observer_id = ? AND observed_id = ?${ofLevel}`, params);
}

/**
 * The current conclusions (with `withSuperseded`, the superseded ones too) of the workspace, or of
 * one observer, about one observed peer or both (a collection): the counts of the collections they name summed (an observer's rows
 * through the counts' key, an observed peer's among the workspace's rows, one per collection and
 * level).
 */
export function countConclusionsOf(db: SqlExecutor, workspaceId: string, of: { observerId?: string; observedId?: string }, withSuperseded = false): Promise<number> {
  const rows = conclusionCountRows(of);
  // `s`: the superseded ones (migration 0042 on SQLite, 0044 on PostgreSQL)
  return keptCount(db, `SELECT SUM(${withSuperseded ? 'n + s' : 'n'}) AS n FROM conclusion_counts WHERE workspace_id = ?${rows.where}`, [workspaceId, ...rows.params]);
}

/** The conditions, after the workspace's, on the count rows of an observer, an observed peer or both. */
export function conclusionCountRows(of: { observerId?: string; observedId?: string }): { where: string; params: string[] } {
  let where = '';
  const params: string[] = [];
  if (of.observerId !== undefined) {
    where += ' AND observer_id = ?';
    params.push(of.observerId);
  }
  if (of.observedId !== undefined) {
    where += ' AND observed_id = ?';
    params.push(of.observedId);
  }
  return { where, params };
}

/** The workspace's messages: its stripes summed (migration 0045 on SQLite, 0047 on PostgreSQL; at most 16 rows). */
export function countWorkspaceMessages(db: SqlExecutor, workspaceId: string): Promise<number> {
  return keptCount(db, 'SELECT SUM(n) AS n FROM message_counts WHERE workspace_id = ?', [workspaceId]);
}
