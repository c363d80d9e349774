import type { MessageRecord } from '../store.js';
import type { Dialect } from './dialect.js';

/** A `messages` row as the stores select it. */
export interface MessageRow {
  id: string;
  workspace_id: string;
  session_id: string;
  peer_id: string;
  content: string;
  metadata: unknown;
  token_count: number;
  created_at: unknown;
}

export function messageFromRow(c: Dialect, row: MessageRow): MessageRecord {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    sessionId: row.session_id,
    peerId: row.peer_id,
    content: row.content,
    metadata: c.readJson(row.metadata),
    tokenCount: Number(row.token_count),
    createdAt: c.readTime(row.created_at),
  };
}
