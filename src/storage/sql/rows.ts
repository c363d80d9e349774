import type { MembershipRecord, MessageRecord, PeerRecord, SessionRecord, WebhookEndpointRecord, WorkspaceRecord } from '../store.js';
import type { Dialect } from './dialect.js';
import type { SqlExecutor } from './driver.js';

/*
 * The rows of the workspace tables as the stores select them, their column lists, and the one
 * mapper of each to its record. Every store that reads a table selects these columns and maps
 * with these functions.
 */

export interface WorkspaceRow {
  id: string;
  metadata: unknown;
  configuration: unknown;
  created_at: unknown;
}

export interface PeerRow extends WorkspaceRow {
  workspace_id: string;
  kind?: string | null;
}

export interface SessionRow extends WorkspaceRow {
  workspace_id: string;
  is_active: unknown;
}

export interface MembershipRow {
  peer_id: string;
  configuration: unknown;
  joined_at: unknown;
  left_at: unknown;
  kind?: string | null;
  peer_configuration?: unknown;
}

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

export interface WebhookRow {
  id: string;
  workspace_id: string;
  url: string;
  created_at: unknown;
}

export const WORKSPACE_COLUMNS = 'w.id, w.metadata, w.configuration, w.created_at';
export const PEER_COLUMNS = 'p.id, p.workspace_id, p.metadata, p.configuration, p.created_at, p.kind';
/** What an insert or update of a peer returns (PEER_COLUMNS without the alias). */
export const PEER_RETURNING = 'id, workspace_id, metadata, configuration, created_at, kind';
export const SESSION_COLUMNS = 's.id, s.workspace_id, s.is_active, s.metadata, s.configuration, s.created_at';
/** A membership with its peer's kind: from `session_peers m JOIN peers p` (MEMBERSHIP_FROM). */
export const MEMBERSHIP_COLUMNS = 'm.peer_id, m.configuration, m.joined_at, m.left_at, p.kind, p.configuration AS peer_configuration';
export const MEMBERSHIP_FROM = 'session_peers m JOIN peers p ON p.workspace_id = m.workspace_id AND p.id = m.peer_id AND p.deleting_at IS NULL';
export const MESSAGE_COLUMNS = 'm.id, m.workspace_id, m.session_id, m.peer_id, m.content, m.metadata, m.token_count, m.created_at';
export const WEBHOOK_COLUMNS = 'id, workspace_id, url, created_at';

export function workspaceFromRow(d: Dialect, row: WorkspaceRow): WorkspaceRecord {
  return { id: row.id, metadata: d.readJson(row.metadata), configuration: d.readJson(row.configuration), createdAt: d.readTime(row.created_at) };
}

export function peerFromRow(d: Dialect, row: PeerRow): PeerRecord {
  const record: PeerRecord = {
    id: row.id,
    workspaceId: row.workspace_id,
    metadata: d.readJson(row.metadata),
    configuration: d.readJson(row.configuration),
    createdAt: d.readTime(row.created_at),
  };
  if (row.kind === 'scope') record.kind = 'scope';
  return record;
}

export function sessionFromRow(d: Dialect, row: SessionRow): SessionRecord {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    isActive: d.readBool(row.is_active),
    metadata: d.readJson(row.metadata),
    configuration: d.readJson(row.configuration),
    createdAt: d.readTime(row.created_at),
  };
}

export function membershipFromRow(d: Dialect, row: MembershipRow): MembershipRecord {
  return {
    peerId: row.peer_id,
    configuration: d.readJson(row.configuration),
    joinedAt: d.readTime(row.joined_at),
    leftAt: row.left_at === null ? null : d.readTime(row.left_at),
    ...(row.kind === 'scope' ? { isScope: true } : {}),
    ...(row.peer_configuration === undefined ? {} : { peerConfiguration: d.readJson(row.peer_configuration) }),
  };
}

export function messageFromRow(d: Dialect, row: MessageRow): MessageRecord {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    sessionId: row.session_id,
    peerId: row.peer_id,
    content: row.content,
    metadata: d.readJson(row.metadata),
    tokenCount: Number(row.token_count),
    createdAt: d.readTime(row.created_at),
  };
}

export function webhookFromRow(d: Dialect, row: WebhookRow): WebhookEndpointRecord {
  return { id: row.id, workspaceId: row.workspace_id, url: row.url, createdAt: d.readTime(row.created_at) };
}

/** A cached page's data version row: the row's random `v1_id` (so a recreated row never matches) and its counter. */
export interface VersionRow {
  incarnation: string;
  v: number;
}

/** The version text of a VersionRow; undefined when the row does not exist. */
export function versionText(row: VersionRow | undefined): string | undefined {
  return row === undefined ? undefined : `${row.incarnation}.${row.v}`;
}

/**
 * A list version kept on a peer's row (its sessions, migration 0016; a v1 user's metamessages,
 * 0038/0040) with the row's incarnation: v1_id is random per peer row, so a recreated peer (or
 * workspace) never matches an old token. Undefined when the peer does not exist.
 */
export async function peerListVersion(
  db: SqlExecutor,
  column: 'sessions_version' | 'metamessages_version',
  workspaceId: string,
  peerId: string,
): Promise<string | undefined> {
  return versionText(await db.get<VersionRow>(`SELECT v1_id AS incarnation, ${column} AS v FROM peers WHERE workspace_id = ? AND id = ?`, [workspaceId, peerId]));
}
