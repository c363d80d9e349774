import type {
  MessageRecord,
  NewRepresentationItem,
  OpenRepresentationItem,
  ReasoningStore,
  RepresentationCounts,
  RepresentationScope,
  SessionSummaryRecord,
  SummaryType,
  UnitTotals,
} from '../store.js';
import type { Dialect } from './dialect.js';
import { DIALECTS } from './dialects.js';
import type { SqlExecutor } from './driver.js';
import { finishedHour, purgeHoursBefore } from './finished-hour.js';
import { jsonText } from './json-text.js';
import { countSessionMessages } from './kept-counts.js';
import { MESSAGE_COLUMNS as ROW_COLUMNS, messageFromRow, type MessageRow as BaseMessageRow } from './rows.js';
import { orderBy, sessionMessages } from './session-messages.js';

interface ItemRow {
  pk: number | string;
  message_id: string;
  message_pk: number | string;
  peer_id: string;
  content: string;
  message_created_at: unknown;
  tokens: number;
  observers: unknown;
  custom_instructions: string | null;
  created_at: unknown;
}

interface MessageRow extends BaseMessageRow {
  pk: number | string;
}

interface SummaryRow {
  summary_type: SummaryType;
  content: string;
  message_id: string;
  message_seq: number;
  token_count: number;
  created_at: unknown;
}

const MESSAGE_COLUMNS = `m.pk, ${ROW_COLUMNS}`;

/**
 * Most sessions an observer's queue status looks up one by one; past it the workspace's units
 * are walked (bench/queue-status.ts: an assistant in 20,000 sessions of which 100 had work in the
 * last day took 41 ms by sessions against 0.7 by the walk).
 */
const MEMBERSHIPS_SOUGHT = 1_000;

/** The deriver's work items and the session summaries (migrations/0011). */
export class SqlReasoningStore implements ReasoningStore {
  private readonly dialect: Dialect;

  constructor(private readonly db: SqlExecutor) {
    this.dialect = DIALECTS[db.dialect];
  }

  private readList(value: unknown): string[] {
    const list = typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
    return Array.isArray(list) ? list.filter((item): item is string => typeof item === 'string') : [];
  }

  private message(row: MessageRow): MessageRecord & { pk: number } {
    return { pk: Number(row.pk), ...messageFromRow(this.dialect, row) };
  }

  /** The pks of the items' messages that exist: the ones the items carry, else looked up (all of them, in one statement). */
  private async messagePks(items: readonly NewRepresentationItem[]): Promise<Map<string, number>> {
    if (items.every((item) => item.messagePk !== undefined)) return new Map(items.map((item) => [item.messageId, item.messagePk!]));
    const ids = [...new Set(items.map((item) => item.messageId))];
    const rows = await this.db.all<{ id: string; pk: number | string }>(`SELECT id, pk FROM messages WHERE id IN (${ids.map(() => '?').join(', ')})`, ids);
    return new Map(rows.map((row) => [row.id, Number(row.pk)]));
  }

  /** The insert of `count` items (itemRow's parameters each); a repeat of an item (engram derive over messages already queued) is ignored. */
  private itemsInsert(count: number): string {
    return `INSERT INTO representation_items (workspace_id, session_id, observed_id, message_id, message_pk, tokens, observers, custom_instructions, created_at)
       VALUES ${Array.from({ length: count }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}
       ON CONFLICT (workspace_id, session_id, observed_id, message_id) DO NOTHING`;
  }

  /** An item's row: its columns as the inserts of representation_items list them, `pk` its message's. */
  private itemRow(item: NewRepresentationItem, pk: number | undefined, now: Date): unknown[] {
    return [item.workspaceId, item.sessionId, item.observedId, item.messageId, pk, item.tokens, jsonText(item.observers), item.customInstructions, this.dialect.time(now)];
  }

  async addRepresentationItems(items: NewRepresentationItem[], now: Date): Promise<number> {
    let added = 0;
    for (let start = 0; start < items.length; start += 50) {
      const chunk = items.slice(start, start + 50);
      const pks = await this.messagePks(chunk);
      const present = chunk.filter((item) => pks.has(item.messageId));
      if (present.length === 0) continue;
      added += await this.db.run(
        this.itemsInsert(present.length),
        present.flatMap((item) => this.itemRow(item, pks.get(item.messageId), now)),
      );
    }
    return added;
  }

  async addItemsWithTotals(items: NewRepresentationItem[], now: Date): Promise<{ added: number; totals: Map<string, UnitTotals> }> {
    if (items.length === 0) return { added: 0, totals: new Map() };
    const { workspaceId, sessionId } = items[0];
    if (items.some((item) => item.workspaceId !== workspaceId || item.sessionId !== sessionId)) throw new Error('addItemsWithTotals: items of one session only');
    const observedIds = [...new Set(items.map((item) => item.observedId))];
    if (this.db.dialect !== 'postgres' || items.length > 50 || items.some((item) => item.messagePk === undefined)) {
      // SQLite's statements cost no round trip: the two steps as they are
      const added = await this.addRepresentationItems(items, now);
      return { added, totals: await this.openUnitsTotals(workspaceId, sessionId, observedIds) };
    }
    // One statement, one round trip: the insert in a CTE, and the units' open items as they
    // were before it (the statement's snapshot does not see its own insert) beside the rows it
    // added (its RETURNING), summed here.
    const c = this.dialect;
    const rows = await this.db.all<{ observed_id: string; items: number | string; tokens: number | string | null; oldest: unknown; added: number | string }>(
      `WITH added AS (${this.itemsInsert(items.length)} RETURNING observed_id, tokens, created_at)
       SELECT observed_id, count(*) AS items, sum(tokens) AS tokens, min(created_at) AS oldest, 0 AS added FROM representation_items
       WHERE workspace_id = ? AND session_id = ? AND observed_id IN (${observedIds.map(() => '?').join(', ')}) AND processed_at IS NULL
       GROUP BY observed_id
       UNION ALL
       SELECT observed_id, count(*), sum(tokens), min(created_at), 1 FROM added GROUP BY observed_id`,
      [...items.flatMap((item) => this.itemRow(item, item.messagePk, now)), workspaceId, sessionId, ...observedIds],
    );
    let added = 0;
    const totals = new Map<string, UnitTotals>();
    for (const row of rows) {
      if (Number(row.added) === 1) added += Number(row.items);
      const oldest = row.oldest == null ? undefined : c.readTime(row.oldest);
      const before = totals.get(row.observed_id);
      totals.set(row.observed_id, {
        items: (before?.items ?? 0) + Number(row.items),
        tokens: (before?.tokens ?? 0) + Number(row.tokens ?? 0),
        oldest: before?.oldest === undefined || (oldest !== undefined && oldest < before.oldest) ? oldest : before.oldest,
      });
    }
    return { added, totals };
  }

  async openUnitTotals(workspaceId: string, sessionId: string, observedId: string): Promise<UnitTotals> {
    return (await this.openUnitsTotals(workspaceId, sessionId, [observedId])).get(observedId) ?? { items: 0, tokens: 0, oldest: undefined };
  }

  async openUnitsTotals(workspaceId: string, sessionId: string, observedIds: readonly string[]): Promise<Map<string, UnitTotals>> {
    if (observedIds.length === 0) return new Map();
    const rows = await this.db.all<{ observed_id: string; items: number | string; tokens: number | string | null; oldest: unknown }>(
      `SELECT observed_id, count(*) AS items, sum(tokens) AS tokens, min(created_at) AS oldest FROM representation_items
       WHERE workspace_id = ? AND session_id = ? AND observed_id IN (${observedIds.map(() => '?').join(', ')}) AND processed_at IS NULL
       GROUP BY observed_id`,
      [workspaceId, sessionId, ...observedIds],
    );
    return new Map(
      rows.map((row) => [row.observed_id, { items: Number(row.items), tokens: Number(row.tokens ?? 0), oldest: row.oldest == null ? undefined : this.dialect.readTime(row.oldest) }]),
    );
  }

  async openItems(workspaceId: string, sessionId: string, observedId: string, limit: number): Promise<OpenRepresentationItem[]> {
    const c = this.dialect;
    const rows = await this.db.all<ItemRow>(
      `SELECT i.pk, i.message_id, i.message_pk, m.peer_id, m.content, m.created_at AS message_created_at, i.tokens, i.observers,
              i.custom_instructions, i.created_at
       FROM representation_items i JOIN messages m ON m.id = i.message_id
       WHERE i.workspace_id = ? AND i.session_id = ? AND i.observed_id = ? AND i.processed_at IS NULL
       ORDER BY i.message_pk LIMIT ?`,
      [workspaceId, sessionId, observedId, limit],
    );
    return rows.map((row) => ({
      pk: Number(row.pk),
      messageId: row.message_id,
      messagePk: Number(row.message_pk),
      peerId: row.peer_id,
      content: row.content,
      messageCreatedAt: c.readTime(row.message_created_at),
      tokens: Number(row.tokens),
      observers: this.readList(row.observers),
      customInstructions: row.custom_instructions,
      queuedAt: c.readTime(row.created_at),
    }));
  }

  async messageBefore(workspaceId: string, sessionId: string, messagePk: number): Promise<(MessageRecord & { pk: number }) | undefined> {
    const session = sessionMessages(this.dialect, workspaceId, sessionId);
    const row = await this.db.get<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE ${session.where} AND m.pk < ? ORDER BY ${orderBy(session.order, 'DESC')} LIMIT 1`,
      [...session.params, messagePk],
    );
    return row && this.message(row);
  }

  reopenFailedItems(workspaceId: string, sessionId: string, observedId: string): Promise<number> {
    // through the unit's unique key (workspace, session, observed, message); the failed count of
    // the hour they failed in stays, as the dead job's does
    return this.db.run(
      `UPDATE representation_items SET processed_at = NULL, error = NULL
       WHERE workspace_id = ? AND session_id = ? AND observed_id = ? AND processed_at IS NOT NULL AND error IS NOT NULL`,
      [workspaceId, sessionId, observedId],
    );
  }

  async markItems(items: readonly { pk: number; messageId: string }[], now: Date, error: string | null): Promise<number> {
    if (items.length === 0) return 0;
    // each item by its pk and its message: SQLite gives the pk of deleted rows at the top of the
    // range to new ones, so a batch read before its session was deleted and written again must
    // not close the new items that took its pks
    const list = items.map(() => '(CAST(? AS BIGINT), ?)').join(', ');
    const pairs = items.flatMap((item) => [item.pk, item.messageId]);
    // the units' counters first, from the items still open (a repeat of the call counts nothing)
    const units = await this.db.all<{ workspace_id: string; session_id: string; observed_id: string; observers: unknown; n: number | string }>(
      `SELECT workspace_id, session_id, observed_id, observers, count(*) AS n FROM representation_items
       WHERE (pk, message_id) IN (VALUES ${list}) AND processed_at IS NULL GROUP BY workspace_id, session_id, observed_id, observers`,
      pairs,
    );
    await this.db.run(`UPDATE representation_items SET processed_at = ?, error = ? WHERE (pk, message_id) IN (VALUES ${list}) AND processed_at IS NULL`, [
      this.dialect.time(now),
      error,
      ...pairs,
    ]);
    for (const unit of units) {
      const n = Number(unit.n);
      await this.db.run(
        `INSERT INTO representation_counters (workspace_id, hour, session_id, observed_id, observers, completed, failed) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (workspace_id, hour, session_id, observed_id, observers)
         DO UPDATE SET completed = representation_counters.completed + excluded.completed, failed = representation_counters.failed + excluded.failed`,
        [
          unit.workspace_id,
          finishedHour(now),
          unit.session_id,
          unit.observed_id,
          jsonText(this.readList(unit.observers)),
          error === null ? n : 0,
          error === null ? 0 : n,
        ],
      );
    }
    return units.reduce((sum, unit) => sum + Number(unit.n), 0);
  }

  async openItemCount(workspaceId: string, sessionId?: string): Promise<number> {
    const row = await this.db.get<{ n: number | string }>(
      `SELECT count(*) AS n FROM representation_items WHERE workspace_id = ?${sessionId === undefined ? '' : ' AND session_id = ?'} AND processed_at IS NULL`,
      sessionId === undefined ? [workspaceId] : [workspaceId, sessionId],
    );
    return Number(row?.n ?? 0);
  }

  purgeCounters(before: Date, limit: number): Promise<number> {
    return purgeHoursBefore(this.db, 'representation_counters', ['workspace_id', 'hour', 'session_id', 'observed_id', 'observers'], before, limit);
  }

  /** How many sessions a peer is or was a member of (kept on the peer, migration 0023). */
  private async sessionCount(workspaceId: string, peerId: string): Promise<number> {
    const row = await this.db.get<{ n: number | string }>('SELECT session_count AS n FROM peers WHERE workspace_id = ? AND id = ?', [workspaceId, peerId]);
    return Number(row?.n ?? 0);
  }

  /**
   * The rows of a table of representation units (columns session_id, observed_id, observers,
   * and `columns`) a scope reads, as a FROM item, its parameters before the caller's. A peer's
   * units are read through indexes in two disjoint parts: those whose observed peer is the
   * sender or the observer asked for, and, for an observer, those of the sessions it is or was a
   * member of about other peers (an observer is the sender, or a member active when the message
   * came, and memberships are kept when a peer leaves), or, for an observer with more than
   * MEMBERSHIPS_SOUGHT `memberships`, the workspace's units about other peers; each row then
   * checked against the filter. Read whole and checked in JavaScript, a user's status took 210
   * ms where the workspace had 20,000 sessions with work in the last day (bench/queue-status.ts).
   */
  private unitRows(
    table: string,
    columns: string,
    condition: { text: string; params: unknown[] },
    workspaceId: string,
    scope: RepresentationScope,
    memberships: number,
  ): { from: string; params: unknown[] } {
    const c = this.dialect;
    let select = `SELECT t.session_id, t.observed_id, t.observers, ${columns} FROM ${table} t WHERE t.workspace_id = ? AND ${condition.text}`;
    const params: unknown[] = [workspaceId, ...condition.params];
    if (scope.sessionId !== undefined) {
      select += ' AND t.session_id = ?';
      params.push(scope.sessionId);
    }
    if (scope.observerId === undefined && scope.senderId === undefined) return { from: `(${select})`, params };
    const peers = [...new Set([scope.senderId, scope.observerId].filter((peer) => peer !== undefined))];
    const list = peers.map(() => '?').join(', ');
    const kept: string[] = [];
    const keptParams: unknown[] = [];
    if (scope.senderId !== undefined) {
      kept.push('t.observed_id = ?');
      keptParams.push(scope.senderId);
    }
    if (scope.observerId !== undefined) {
      kept.push(`EXISTS (SELECT 1 FROM ${c.jsonArrayElements('t.observers', 'ob')} WHERE ob.value = ?)`);
      keptParams.push(scope.observerId);
    }
    const keep = ` AND (${kept.join(' OR ')})`;
    let from = `${select} AND t.observed_id IN (${list})${keep}`;
    const fromParams = [...params, ...peers, ...keptParams];
    if (scope.observerId !== undefined) {
      // the units of the observer's sessions about other peers; for a member of very many
      // sessions (an assistant in all of them) the workspace's, one walk beating a probe per
      // session when few of them have work. The sessions as a list (an array on PostgreSQL),
      // not a join: without statistics yet, PostgreSQL walked the workspace's open items once
      // per session of the join (186 ms for 25 sessions among 5,000), once in all with the list
      // (9 ms); with statistics both probe each session's units (1 ms)
      const sought = memberships <= MEMBERSHIPS_SOUGHT;
      const sessions = sought ? ` AND ${c.inSubquery('t.session_id', 'SELECT sp.session_id FROM session_peers sp WHERE sp.workspace_id = ? AND sp.peer_id = ?')}` : '';
      from += ` UNION ALL ${select}${sessions} AND t.observed_id NOT IN (${list})${keep}`;
      fromParams.push(...params, ...(sought ? [workspaceId, scope.observerId] : []), ...peers, ...keptParams);
    }
    return { from: `(${from})`, params: fromParams };
  }

  async representationCounts(workspaceId: string, scope: RepresentationScope, now: Date, finishedSince: Date): Promise<RepresentationCounts[]> {
    const c = this.dialect;
    // processed items from the units' counters of the hours since `finishedSince`; open ones
    // through the index of open items, counted per unit, each unit then in progress while a job
    // of its queue runs under a live lease (a dead worker's job is pending again); all added up
    // per session, the one thing queue status reads of them (a row per unit with its observers:
    // 17.6 against 14.4 ms of the server's CPU for a workspace's status of 4,000 sessions on
    // PostgreSQL, bench/queue-status.ts). The lease check reads the workspace's running jobs once
    // (a handful: the workers' concurrency) and looks each unit's queue up among them. A probe of
    // the jobs per unit, as before, cost 16 of the statement's 27 ms for 4,000 units (PostgreSQL
    // put the probe in both of its uses); as a join, PostgreSQL without statistics yet (a new
    // database, before autovacuum's first ANALYZE) ran the running-jobs subquery once per open
    // item, 0.2 ms each.
    const memberships = scope.observerId === undefined ? 0 : await this.sessionCount(workspaceId, scope.observerId);
    const counted = this.unitRows('representation_counters', 't.completed, t.failed', { text: 't.hour >= ?', params: [finishedHour(finishedSince)] }, workspaceId, scope, memberships);
    const open = this.unitRows('representation_items', 't.pk', { text: 't.processed_at IS NULL', params: [] }, workspaceId, scope, memberships);
    const rows = await this.db.all<Record<string, unknown>>(
      `SELECT session_id, SUM(completed) AS completed, SUM(failed) AS failed,
         SUM(in_progress) AS in_progress, SUM(pending) AS pending
       FROM (
         SELECT session_id, completed, failed, 0 AS in_progress, 0 AS pending
         FROM ${counted.from} AS counted
         UNION ALL
         SELECT session_id, 0, 0, n * running, n * (1 - running)
         FROM (
           SELECT o.session_id, o.n,
             CASE WHEN 'representation:' || ? || ':' || o.session_id || ':' || o.observed_id IN (
               SELECT j.queue_key FROM jobs j
               WHERE j.workspace_id = ? AND j.status IN ('pending', 'running') AND j.status = 'running' AND j.locked_until >= ?
             ) THEN 1 ELSE 0 END AS running
           FROM (SELECT session_id, observed_id, COUNT(*) AS n FROM ${open.from} AS open_items
                 GROUP BY session_id, observed_id) o
         ) AS open_units
       ) AS units
       GROUP BY session_id`,
      [...counted.params, workspaceId, workspaceId, c.time(now), ...open.params],
    );
    return rows.map((row) => ({
      sessionId: String(row.session_id),
      completed: Number(row.completed ?? 0),
      failed: Number(row.failed ?? 0),
      inProgress: Number(row.in_progress ?? 0),
      pending: Number(row.pending ?? 0),
    }));
  }

  sessionMessageCount(workspaceId: string, sessionId: string): Promise<number> {
    return countSessionMessages(this.db, workspaceId, sessionId);
  }

  async messagesUpTo(workspaceId: string, sessionId: string, messageId: string, count: number): Promise<MessageRecord[]> {
    const session = sessionMessages(this.dialect, workspaceId, sessionId);
    const rows = await this.db.all<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages m
       WHERE ${session.where} AND m.pk <= (SELECT pk FROM messages WHERE id = ?)
       ORDER BY ${orderBy(session.order, 'DESC')} LIMIT ?`,
      [...session.params, messageId, count],
    );
    return rows.reverse().map((row) => this.message(row));
  }

  async messagesAfter(scope: { workspaceId?: string; sessionId?: string }, afterPk: number, limit: number): Promise<(MessageRecord & { pk: number })[]> {
    const where = ['m.pk > ?'];
    const params: unknown[] = [afterPk];
    let order: readonly string[] = ['m.pk'];
    if (scope.workspaceId !== undefined && scope.sessionId !== undefined) {
      // through the session's index, as its other ordered reads (session-messages.ts)
      const session = sessionMessages(this.dialect, scope.workspaceId, scope.sessionId);
      where.push(session.where);
      params.push(...session.params);
      order = session.order;
    } else if (scope.workspaceId !== undefined) {
      where.push('m.workspace_id = ?');
      params.push(scope.workspaceId);
    } else if (scope.sessionId !== undefined) {
      where.push('m.session_id = ?');
      params.push(scope.sessionId);
    }
    const rows = await this.db.all<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE ${where.join(' AND ')} ORDER BY ${orderBy(order, 'ASC')} LIMIT ?`, [
      ...params,
      limit,
    ]);
    return rows.map((row) => this.message(row));
  }

  async liveConclusionsByContent(
    scope: { workspaceId: string; observerId: string; observedId: string; level: string; sessionId: string | null },
    contents: readonly string[],
  ): Promise<Map<string, string>> {
    const wanted = new Set(contents.map((content) => content.trim().toLowerCase()));
    const found = new Map<string, string>();
    if (wanted.size === 0) return found;
    // The candidates come through the index on the SQL-folded text (migration 0022), asked with
    // each content trimmed and folded here too; the match is decided here, as the batch's own
    // repeats are: SQL's trim() takes spaces only and SQLite's lower() folds ASCII only.
    const asked = [...new Set(contents.flatMap((content) => [content.trim(), content.trim().toLowerCase()]))];
    const d = this.dialect;
    const rows = await this.db.all<{ id: string; content: string }>(
      `SELECT id, content FROM conclusions
       WHERE workspace_id = ? AND observer_id = ? AND observed_id = ? AND level = ? AND deleted_at IS NULL
         AND ${scope.sessionId === null ? 'session_id IS NULL' : 'session_id = ?'}
         AND ${d.inSubquery(d.contentKey('content'), `SELECT ${d.contentKey('j.value')} FROM ${d.jsonArrayElements(d.jsonParam, 'j')}`)}`,
      [scope.workspaceId, scope.observerId, scope.observedId, scope.level, ...(scope.sessionId === null ? [] : [scope.sessionId]), jsonText(asked)],
    );
    for (const row of rows) {
      const key = row.content.trim().toLowerCase();
      if (wanted.has(key) && !found.has(key)) found.set(key, row.id);
    }
    return found;
  }

  async summaries(workspaceId: string, sessionId: string): Promise<SessionSummaryRecord[]> {
    const rows = await this.db.all<SummaryRow>(
      'SELECT summary_type, content, message_id, message_seq, token_count, created_at FROM session_summaries WHERE workspace_id = ? AND session_id = ?',
      [workspaceId, sessionId],
    );
    return rows.map((row) => ({
      type: row.summary_type,
      content: row.content,
      messageId: row.message_id,
      messageSeq: Number(row.message_seq),
      tokenCount: Number(row.token_count),
      createdAt: this.dialect.readTime(row.created_at),
    }));
  }

  async saveSummary(workspaceId: string, sessionId: string, summary: SessionSummaryRecord): Promise<void> {
    const c = this.dialect;
    // a summary never replaces one that covers a later message (a retried or late job)
    await this.db.run(
      `INSERT INTO session_summaries (workspace_id, session_id, summary_type, content, message_id, message_seq, token_count, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (workspace_id, session_id, summary_type) DO UPDATE SET content = excluded.content, message_id = excluded.message_id,
         message_seq = excluded.message_seq, token_count = excluded.token_count, created_at = excluded.created_at
       WHERE session_summaries.message_seq < excluded.message_seq`,
      [workspaceId, sessionId, summary.type, summary.content, summary.messageId, summary.messageSeq, summary.tokenCount, c.time(summary.createdAt)],
    );
  }
}
