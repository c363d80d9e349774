import type { Dialect } from './dialect.js';

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
 * value the session stays a column of the order, which only the session's index gives; a bound
 * on `pk` still positions the index scan. The range holds exactly the rows of `=`: text compares
 * byte for byte when equal under PostgreSQL's deterministic collations. SQLite keeps `=`
 * (Dialect.orderedWithin).
 */

export interface SessionMessages {
  /** Condition on `m`, with `params` bound to its placeholders. */
  where: string;
  params: unknown[];
  /** ORDER BY columns, oldest first (a list page's `order`). */
  order: readonly string[];
}

export function sessionMessages(d: Dialect, workspaceId: string, sessionId: string): SessionMessages {
  const within = d.orderedWithin('m.session_id', 'm.pk', sessionId);
  return { where: `m.workspace_id = ? AND ${within.where}`, params: [workspaceId, ...within.params], order: within.order };
}

/** `ORDER BY` text of `order`, each column ascending or descending. */
export function orderBy(order: readonly string[], direction: 'ASC' | 'DESC'): string {
  return order.map((column) => `${column} ${direction}`).join(', ');
}
