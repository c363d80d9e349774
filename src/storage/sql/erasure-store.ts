import type { ConclusionLevel, ErasureStore, ForgetPreviewRecord, ForgetRecord, Page, PeerFootprint, RedeemedPreview } from '../store.js';
import type { Dialect } from './dialect.js';
import type { SqlExecutor } from './driver.js';
import { jsonText, readTextList } from './json-text.js';
import { SqlMemoryStore } from './memory-store.js';
import { pageOffset } from './page-offset.js';
import { lockWorkspaceRow } from './workspace-store.js';

/*
 * Removing memory: a peer's deletion (marked by the request, purged by a job in short
 * transactions) and forgetting chosen conclusions. Each statement takes its rows in the lock order
 * of docs/decisions.md: a session's row, the workspace's, peers', the collections' count rows (on
 * PostgreSQL, in key order), then conclusions.
 */

/** A peer's conclusions (observer or observed), `c` being the table's alias. */
const OF_PEER = '(c.observer_id = ? OR c.observed_id = ?)';

export class SqlErasureStore implements ErasureStore {
  constructor(
    private readonly db: SqlExecutor,
    private readonly d: Dialect,
  ) {}

  async markPeerDeleting(workspaceId: string, peerId: string, now: Date): Promise<boolean> {
    // The workspace's row (its counts), then the peer's `FOR UPDATE`: it waits for every
    // background writer keeping the peer (`keepLivePeers`, FOR KEY SHARE) and for foreign key
    // checks of writes naming it, which therefore either commit before the mark (and the purge
    // removes what they wrote) or see it and write nothing for the peer.
    await lockWorkspaceRow(this.db, this.d, workspaceId);
    const row = await this.db.get<{ kind: string | null }>(
      `SELECT kind FROM peers WHERE workspace_id = ? AND id = ? AND deleting_at IS NULL${this.d.forDelete}`,
      [workspaceId, peerId],
    );
    if (row === undefined) return false;
    // its sessions' cached pages (sessions_version) are out of date too: it has none to show now
    await this.db.run('UPDATE peers SET deleting_at = ?, sessions_version = sessions_version + 1 WHERE workspace_id = ? AND id = ?', [this.d.time(now), workspaceId, peerId]);
    // out of the counts now (the row's delete at the end does not count it again: migration 0041/0043)
    const scope = row.kind !== null;
    await this.db.run(
      `UPDATE workspaces SET ${scope ? 'scope_count = scope_count' : 'peer_count = peer_count'} - 1, peers_version = peers_version + 1 WHERE id = ?`,
      [workspaceId],
    );
    return true;
  }

  async isDeleting(workspaceId: string, peerId: string): Promise<boolean> {
    const row = await this.db.get('SELECT 1 AS one FROM peers WHERE workspace_id = ? AND id = ? AND deleting_at IS NOT NULL', [workspaceId, peerId]);
    return row !== undefined;
  }

  async peerFootprint(workspaceId: string, peerId: string): Promise<PeerFootprint> {
    const n = async (sql: string, params: unknown[]) => Number((await this.db.get<{ n: number | string }>(sql, params))?.n ?? 0);
    // one statement at a time: inside a transaction they share its connection
    const messages = await n('SELECT COUNT(*) AS n FROM messages WHERE workspace_id = ? AND peer_id = ?', [workspaceId, peerId]);
    const conclusions = await n(`SELECT COUNT(*) AS n FROM conclusions c WHERE c.workspace_id = ? AND ${OF_PEER}`, [workspaceId, peerId, peerId]);
    const scopeCopies = await n(
      `SELECT COUNT(*) AS n FROM conclusions x WHERE x.workspace_id = ? AND x.copied_from IS NOT NULL AND x.observer_id <> ? AND x.observed_id <> ?
         AND x.copied_from IN (SELECT c.id FROM conclusions c WHERE c.workspace_id = ? AND ${OF_PEER})`,
      [workspaceId, peerId, peerId, workspaceId, peerId, peerId],
    );
    const peerCards = await n('SELECT COUNT(*) AS n FROM peer_cards WHERE workspace_id = ? AND (observer_id = ? OR target_id = ?)', [workspaceId, peerId, peerId]);
    const memberships = await n('SELECT COUNT(*) AS n FROM session_peers WHERE workspace_id = ? AND peer_id = ?', [workspaceId, peerId]);
    const metamessages = await n('SELECT COUNT(*) AS n FROM metamessages WHERE workspace_id = ? AND peer_id = ?', [workspaceId, peerId]);
    const summaries = await n(
      'SELECT COUNT(*) AS n FROM session_summaries s WHERE s.workspace_id = ? AND s.session_id IN (SELECT m.session_id FROM messages m WHERE m.workspace_id = ? AND m.peer_id = ?)',
      [workspaceId, workspaceId, peerId],
    );
    return { messages, conclusions, scopeCopies, peerCards, memberships, metamessages, summaries };
  }

  async nextMessageSession(workspaceId: string, peerId: string): Promise<string | undefined> {
    const row = await this.db.get<{ session_id: string }>('SELECT session_id FROM messages WHERE workspace_id = ? AND peer_id = ? ORDER BY pk LIMIT 1', [workspaceId, peerId]);
    return row?.session_id;
  }

  async deletePeerMessages(workspaceId: string, peerId: string, sessionId: string, limit: number): Promise<{ deleted: number; left: boolean }> {
    // the session's row first (FOR UPDATE, as a session purge: it waits for a deriver batch
    // keeping the session), then the messages, whose triggers write that row; their vectors,
    // full-text entries and queued representation work go with them
    await this.db.get(`SELECT 1 FROM sessions WHERE workspace_id = ? AND id = ?${this.d.forDelete}`, [workspaceId, sessionId]);
    const deleted = await this.db.run(
      `DELETE FROM messages WHERE pk IN (SELECT pk FROM messages WHERE workspace_id = ? AND peer_id = ? AND session_id = ? ORDER BY pk LIMIT ${Math.max(1, Math.trunc(limit))})`,
      [workspaceId, peerId, sessionId],
    );
    const more = await this.db.get('SELECT 1 AS one FROM messages WHERE workspace_id = ? AND peer_id = ? AND session_id = ? LIMIT 1', [workspaceId, peerId, sessionId]);
    return { deleted, left: more !== undefined };
  }

  async clearSummaries(workspaceId: string, sessionId: string): Promise<number> {
    return this.db.run('DELETE FROM session_summaries WHERE workspace_id = ? AND session_id = ?', [workspaceId, sessionId]);
  }

  async deletePeerConclusions(workspaceId: string, peerId: string, limit: number): Promise<number> {
    const count = Math.max(1, Math.trunc(limit));
    // copies first (a scope's copy of a conclusion by or about the peer), while their originals
    // still say which they are; then the peer's own
    const copies = await this.db.all<ConclusionKey>(
      `SELECT x.pk, x.workspace_id, x.observer_id, x.observed_id, x.level FROM conclusions x
       WHERE x.workspace_id = ? AND x.copied_from IS NOT NULL
         AND x.copied_from IN (SELECT c.id FROM conclusions c WHERE c.workspace_id = ? AND ${OF_PEER})
       LIMIT ${count}`,
      [workspaceId, workspaceId, peerId, peerId],
    );
    const own =
      copies.length >= count
        ? []
        : await this.db.all<ConclusionKey>(
            `SELECT c.pk, c.workspace_id, c.observer_id, c.observed_id, c.level FROM conclusions c WHERE c.workspace_id = ? AND ${OF_PEER} LIMIT ${count - copies.length}`,
            [workspaceId, peerId, peerId],
          );
    return this.deleteConclusionRows([...copies, ...own]);
  }

  /** Deletes conclusions by pk, their collections' count rows taken first (PostgreSQL), in key order. */
  private async deleteConclusionRows(rows: readonly ConclusionKey[]): Promise<number> {
    if (rows.length === 0) return 0;
    await new SqlMemoryStore(this.db).lockConclusionCounts(
      rows.map((r) => ({ workspaceId: r.workspace_id, observerId: r.observer_id, observedId: r.observed_id, level: r.level as ConclusionLevel })),
    );
    const pks = [...new Set(rows.map((r) => Number(r.pk)))].sort((a, b) => a - b);
    return this.db.run(`DELETE FROM conclusions WHERE pk IN (${pks.map(() => '?').join(', ')})`, pks);
  }

  async deletePeerRest(workspaceId: string, peerId: string, limit: number): Promise<number> {
    const count = Math.max(1, Math.trunc(limit));
    let deleted = 0;
    // memberships: their sessions' rows first, sorted (a membership's triggers write them)
    const sessions = await this.db.all<{ session_id: string }>(
      `SELECT session_id FROM session_peers WHERE workspace_id = ? AND peer_id = ? ORDER BY session_id LIMIT ${count}`,
      [workspaceId, peerId],
    );
    if (sessions.length > 0) {
      const ids = sessions.map((s) => s.session_id);
      const list = ids.map(() => '?').join(', ');
      await this.db.all(`SELECT 1 FROM sessions WHERE workspace_id = ? AND id IN (${list}) ORDER BY id${this.d.forDelete}`, [workspaceId, ...ids]);
      deleted += await this.db.run(`DELETE FROM session_peers WHERE workspace_id = ? AND peer_id = ? AND session_id IN (${list})`, [workspaceId, peerId, ...ids]);
    }
    if (deleted < count) {
      deleted += await this.db.run(
        `DELETE FROM metamessages WHERE pk IN (SELECT pk FROM metamessages WHERE workspace_id = ? AND peer_id = ? LIMIT ${count - deleted})`,
        [workspaceId, peerId],
      );
    }
    if (deleted < count) {
      // cards about the peer by others (a card's target is not a foreign key); its own go with its row
      deleted += await this.db.run('DELETE FROM peer_cards WHERE workspace_id = ? AND (observer_id = ? OR target_id = ?)', [workspaceId, peerId, peerId]);
      // the collections' bookkeeping about it (those it observes go with its row)
      await this.db.run('DELETE FROM collection_dreams WHERE workspace_id = ? AND (observer_id = ? OR observed_id = ?)', [workspaceId, peerId, peerId]);
      await this.db.run('DELETE FROM conclusion_counts WHERE workspace_id = ? AND (observer_id = ? OR observed_id = ?) AND n = 0', [workspaceId, peerId, peerId]);
    }
    return deleted;
  }

  async deletePeerRow(workspaceId: string, peerId: string): Promise<boolean> {
    await lockWorkspaceRow(this.db, this.d, workspaceId);
    // anything left goes with the row (ON DELETE CASCADE); only a marked peer
    return (await this.db.run('DELETE FROM peers WHERE workspace_id = ? AND id = ? AND deleting_at IS NOT NULL', [workspaceId, peerId])) > 0;
  }

  // ------------------------------------------------------------ forget

  async observersOf(workspaceId: string, observedId: string): Promise<string[]> {
    const rows = await this.db.all<{ observer_id: string }>(
      'SELECT DISTINCT observer_id FROM conclusion_counts WHERE workspace_id = ? AND observed_id = ? AND n > 0 ORDER BY observer_id',
      [workspaceId, observedId],
    );
    return rows.map((row) => row.observer_id);
  }

  async saveForgetPreview(preview: ForgetPreviewRecord): Promise<void> {
    const d = this.d;
    // expired previews go as new ones come (a bounded sweep, the index on expires_at)
    await this.db.run(
      `DELETE FROM forget_previews WHERE token_hash IN (SELECT token_hash FROM forget_previews WHERE expires_at < ? ORDER BY expires_at LIMIT 100)`,
      [d.time(preview.createdAt)],
    );
    await this.db.run(
      `INSERT INTO forget_previews (token_hash, workspace_id, request_hash, conclusion_ids, message_ids, created_at, expires_at) VALUES (?, ?, ?, ${d.jsonParam}, ${d.jsonParam}, ?, ?)`,
      [
        preview.tokenHash,
        preview.workspaceId,
        preview.requestHash,
        jsonText(preview.conclusionIds),
        jsonText(preview.messageIds),
        d.time(preview.createdAt),
        d.time(preview.expiresAt),
      ],
    );
  }

  async redeemForgetPreview(workspaceId: string, tokenHash: string, requestHash: string, now: Date): Promise<RedeemedPreview> {
    const d = this.d;
    const row = await this.db.get<{ request_hash: string; conclusion_ids: unknown; message_ids: unknown; expires_at: unknown; used_at: unknown }>(
      `SELECT request_hash, conclusion_ids, message_ids, expires_at, used_at FROM forget_previews WHERE token_hash = ? AND workspace_id = ?${d.forWrite}`,
      [tokenHash, workspaceId],
    );
    if (row === undefined) return { kind: 'unknown' };
    if (row.used_at !== null && row.used_at !== undefined) return { kind: 'used' };
    if (d.readTime(row.expires_at) <= now) return { kind: 'expired' };
    if (row.request_hash !== requestHash) return { kind: 'mismatch' };
    const used = await this.db.run('UPDATE forget_previews SET used_at = ? WHERE token_hash = ? AND used_at IS NULL', [d.time(now), tokenHash]);
    if (used === 0) return { kind: 'used' };
    return { kind: 'ok', conclusionIds: readTextList(row.conclusion_ids), messageIds: readTextList(row.message_ids) };
  }

  async deleteConclusions(workspaceId: string, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    let deleted = 0;
    for (let start = 0; start < ids.length; start += 500) {
      const chunk = jsonText(ids.slice(start, start + 500));
      const lookup = this.d.rowsByJsonIds('conclusions', 'c');
      // the conclusions and every scope's copy of them
      const rows = await this.db.all<ConclusionKey>(
        `SELECT c.pk, c.workspace_id, c.observer_id, c.observed_id, c.level FROM ${lookup.from} WHERE ${lookup.where} AND c.workspace_id = ?
         UNION
         SELECT x.pk, x.workspace_id, x.observer_id, x.observed_id, x.level FROM conclusions x WHERE x.workspace_id = ? AND x.copied_from IS NOT NULL AND ${this.d.inJsonArray('x.copied_from')}`,
        [chunk, workspaceId, workspaceId, chunk],
      );
      deleted += await this.deleteConclusionRows(rows);
    }
    return deleted;
  }

  async deleteMessages(workspaceId: string, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const lookup = this.d.rowsByJsonIds('messages', 'm');
    const rows = await this.db.all<{ pk: number | string; session_id: string }>(`SELECT m.pk, m.session_id FROM ${lookup.from} WHERE ${lookup.where} AND m.workspace_id = ?`, [
      jsonText([...ids]),
      workspaceId,
    ]);
    let deleted = 0;
    const bySession = new Map<string, number[]>();
    for (const row of rows) bySession.set(row.session_id, [...(bySession.get(row.session_id) ?? []), Number(row.pk)]);
    // one session at a time, its row first (sessions in key order)
    for (const sessionId of [...bySession.keys()].sort()) {
      await this.db.get(`SELECT 1 FROM sessions WHERE workspace_id = ? AND id = ?${this.d.forDelete}`, [workspaceId, sessionId]);
      const pks = bySession.get(sessionId)!;
      deleted += await this.db.run(`DELETE FROM messages WHERE pk IN (${pks.map(() => '?').join(', ')})`, pks);
    }
    return deleted;
  }

  async recordForget(record: ForgetRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO forget_records (id, workspace_id, observed_id, observer_id, actor, conclusions_removed, messages_removed, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [record.id, record.workspaceId, record.observedId, record.observerId, record.actor, record.conclusionsRemoved, record.messagesRemoved, this.d.time(record.createdAt)],
    );
  }

  async listForgets(workspaceId: string, page: number, size: number): Promise<Page<ForgetRecord>> {
    const rows = await this.db.all<{
      id: string;
      observed_id: string;
      observer_id: string | null;
      actor: string;
      conclusions_removed: number | string;
      messages_removed: number | string;
      created_at: unknown;
    }>(
      `SELECT id, observed_id, observer_id, actor, conclusions_removed, messages_removed, created_at FROM forget_records WHERE workspace_id = ?
       ORDER BY created_at DESC, pk DESC LIMIT ? OFFSET ?`,
      [workspaceId, size, pageOffset(page, size)],
    );
    const total = Number((await this.db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM forget_records WHERE workspace_id = ?', [workspaceId]))?.n ?? 0);
    return {
      items: rows.map((row) => ({
        id: row.id,
        workspaceId,
        observedId: row.observed_id,
        observerId: row.observer_id,
        actor: row.actor,
        conclusionsRemoved: Number(row.conclusions_removed),
        messagesRemoved: Number(row.messages_removed),
        createdAt: this.d.readTime(row.created_at),
      })),
      total,
    };
  }
}

interface ConclusionKey {
  pk: number | string;
  workspace_id: string;
  observer_id: string;
  observed_id: string;
  level: string;
}
