/*
 * One session's messages (alias `m`) in insertion order, read through the session's index
 * `messages_session_seq` (workspace_id, session_id, pk).
 *
 * Written as `m.session_id = ?`, the session is a constant to PostgreSQL's planner, and
 * `ORDER BY m.pk` then fits the primary key as well as the session's index. When the session
 * holds a large share of the workspace's messages, the planner expects its rows to come soon
 * along the primary key and walks that, past every message of the other sessions in the way:
 * 16 ms for the newest page of a session whose 60,000 messages are older than another
 * session's 40,000, 25 ms for the other's first page, against 0.1 ms through the session's
 * index (a workspace with a few long sessions, as a single user's agent has). As a range of one
 * value the session stays a column of the order, which only the session's index gives. The
 * range holds exactly the rows of `=`: text compares byte for byte when equal under
 * PostgreSQL's deterministic collations and SQLite's BINARY. SQLite reads the index either way.
 */

/** The condition; its parameters are `inSession(workspaceId, sessionId)`. */
export const IN_SESSION = 'm.workspace_id = ? AND m.session_id >= ? AND m.session_id <= ?';

export function inSession(workspaceId: string, sessionId: string): unknown[] {
  return [workspaceId, sessionId, sessionId];
}

/** The order's columns (a list page's `order`). */
export const SESSION_ORDER: readonly string[] = ['m.session_id', 'm.pk'];

/** `ORDER BY` text of the session's messages, oldest first or newest first. */
export function sessionOrder(direction: 'ASC' | 'DESC'): string {
  return `m.session_id ${direction}, m.pk ${direction}`;
}
