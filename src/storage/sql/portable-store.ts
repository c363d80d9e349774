import type { PortableCursor, PortableKind, PortablePage, PortableRows, PortableStore, WalkedKind, WorkspaceKind } from '../portable.js';
import type { JsonObject } from '../store.js';
import type { Dialect } from './dialect.js';
import type { SqlExecutor } from './driver.js';
import { jsonText } from './json-text.js';

type Row = Record<string, unknown>;

/**
 * How one kind is read: its SELECT (columns of the row as the export names them, plus the key
 * columns `k0`, `k1` its pages continue after), the FROM and WHERE naming the workspace at the
 * first `?`, and the key columns (a row's `pk`, or its parent's and its own, or its parent's
 * and a text, compared byte by byte on both databases so the order is the same on either).
 */
interface ReadPlan {
  select: string;
  from: string;
  keys: readonly { expression: string; text?: boolean }[];
  map(d: Dialect, row: Row): unknown;
}

const time = (d: Dialect, value: unknown): Date => d.readTime(value);
/** Conclusions an export carries: the live ones and the superseded ones (a superseded fact is also marked deleted, migration 0042/0044). */
const LIVE_OR_SUPERSEDED = '(c.deleted_at IS NULL OR c.superseded_at IS NOT NULL)';
const maybeTime = (d: Dialect, value: unknown): Date | null => (value === null || value === undefined ? null : d.readTime(value));
const ids = (value: unknown): string[] | null => {
  if (value === null || value === undefined) return null;
  const list: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  return Array.isArray(list) ? list.map(String) : null;
};
const stringList = (value: unknown): string[] => ids(value) ?? [];

const PLANS: { [K in WorkspaceKind | 'message' | 'conclusion']: ReadPlan } = {
  peer: {
    select: 'p.workspace_id, p.id, p.v1_id, p.kind, p.metadata, p.configuration, p.created_at',
    from: 'peers p WHERE p.workspace_id = ?',
    keys: [{ expression: 'p.pk' }],
    map: (d, r): PortableRows['peer'] => ({
      workspace_id: String(r.workspace_id),
      id: String(r.id),
      v1_id: String(r.v1_id),
      kind: r.kind === 'scope' ? 'scope' : null,
      metadata: d.readJson(r.metadata),
      configuration: d.readJson(r.configuration),
      created_at: time(d, r.created_at),
    }),
  },
  session: {
    select: 's.workspace_id, s.id, s.v1_id, s.is_active, s.metadata, s.configuration, s.created_at',
    from: 'sessions s WHERE s.workspace_id = ?',
    keys: [{ expression: 's.pk' }],
    map: (d, r): PortableRows['session'] => ({
      workspace_id: String(r.workspace_id),
      id: String(r.id),
      v1_id: String(r.v1_id),
      is_active: d.readBool(r.is_active),
      metadata: d.readJson(r.metadata),
      configuration: d.readJson(r.configuration),
      created_at: time(d, r.created_at),
    }),
  },
  membership: {
    select: 'm.workspace_id, m.session_id, m.peer_id, m.configuration, m.joined_at, m.left_at',
    from:
      'session_peers m JOIN sessions s ON s.workspace_id = m.workspace_id AND s.id = m.session_id ' +
      'JOIN peers p ON p.workspace_id = m.workspace_id AND p.id = m.peer_id WHERE m.workspace_id = ?',
    keys: [{ expression: 's.pk' }, { expression: 'p.pk' }],
    map: (d, r): PortableRows['membership'] => ({
      workspace_id: String(r.workspace_id),
      session_id: String(r.session_id),
      peer_id: String(r.peer_id),
      configuration: d.readJson(r.configuration),
      joined_at: time(d, r.joined_at),
      left_at: maybeTime(d, r.left_at),
    }),
  },
  message: {
    select: 'm.workspace_id, m.session_id, m.id, m.peer_id, m.content, m.metadata, m.token_count, m.created_at',
    from: 'messages m WHERE m.workspace_id = ?',
    keys: [{ expression: 'm.pk' }],
    map: (d, r): PortableRows['message'] => ({
      workspace_id: String(r.workspace_id),
      session_id: String(r.session_id),
      id: String(r.id),
      peer_id: String(r.peer_id),
      content: String(r.content),
      metadata: d.readJson(r.metadata),
      token_count: Number(r.token_count),
      created_at: time(d, r.created_at),
    }),
  },
  metamessage: {
    select: 'x.workspace_id, x.id, x.peer_id, x.session_id, x.message_id, x.label, x.content, x.metadata, x.created_at',
    from: 'metamessages x WHERE x.workspace_id = ?',
    keys: [{ expression: 'x.pk' }],
    map: (d, r): PortableRows['metamessage'] => ({
      workspace_id: String(r.workspace_id),
      id: String(r.id),
      peer_id: String(r.peer_id),
      session_id: r.session_id === null ? null : String(r.session_id),
      message_id: r.message_id === null ? null : String(r.message_id),
      label: String(r.label),
      content: String(r.content),
      metadata: d.readJson(r.metadata),
      created_at: time(d, r.created_at),
    }),
  },
  conclusion: {
    select:
      'c.workspace_id, c.id, c.observer_id, c.observed_id, c.session_id, c.level, c.content, c.source_ids, c.source_session_ids, ' +
      'c.times_derived, c.metadata, c.copied_from, c.created_at, c.valid_from, c.superseded_at, c.superseded_by',
    // deleted conclusions are gone for every reader; an export does not bring them back (superseded
    // ones are kept: they are their facts' history)
    from: `conclusions c WHERE c.workspace_id = ? AND ${LIVE_OR_SUPERSEDED}`,
    keys: [{ expression: 'c.pk' }],
    map: (d, r): PortableRows['conclusion'] => ({
      workspace_id: String(r.workspace_id),
      id: String(r.id),
      observer_id: String(r.observer_id),
      observed_id: String(r.observed_id),
      session_id: r.session_id === null ? null : String(r.session_id),
      level: r.level as PortableRows['conclusion']['level'],
      content: String(r.content),
      source_ids: ids(r.source_ids),
      source_session_ids: ids(r.source_session_ids),
      times_derived: Number(r.times_derived),
      metadata: d.readJson(r.metadata),
      copied_from: r.copied_from === null || r.copied_from === undefined ? null : String(r.copied_from),
      created_at: time(d, r.created_at),
      valid_from: r.valid_from === null ? null : time(d, r.valid_from),
      superseded_at: r.superseded_at === null ? null : time(d, r.superseded_at),
      superseded_by: r.superseded_by === null ? null : String(r.superseded_by),
    }),
  },
  peer_card: {
    select: 'c.workspace_id, c.observer_id, c.target_id, c.card, c.updated_at',
    from: 'peer_cards c JOIN peers o ON o.workspace_id = c.workspace_id AND o.id = c.observer_id WHERE c.workspace_id = ?',
    keys: [{ expression: 'o.pk' }, { expression: 'c.target_id', text: true }],
    map: (d, r): PortableRows['peer_card'] => ({
      workspace_id: String(r.workspace_id),
      observer_id: String(r.observer_id),
      target_id: String(r.target_id),
      card: stringList(r.card),
      updated_at: time(d, r.updated_at),
    }),
  },
  summary: {
    select: 'u.workspace_id, u.session_id, u.summary_type, u.content, u.message_id, u.message_seq, u.token_count, u.created_at',
    from: 'session_summaries u JOIN sessions s ON s.workspace_id = u.workspace_id AND s.id = u.session_id WHERE u.workspace_id = ?',
    keys: [{ expression: 's.pk' }, { expression: 'u.summary_type', text: true }],
    map: (d, r): PortableRows['summary'] => ({
      workspace_id: String(r.workspace_id),
      session_id: String(r.session_id),
      summary_type: r.summary_type as 'short' | 'long',
      content: String(r.content),
      message_id: String(r.message_id),
      message_seq: Number(r.message_seq),
      token_count: Number(r.token_count),
      created_at: time(d, r.created_at),
    }),
  },
  dream_state: {
    select: 'c.workspace_id, c.observer_id, c.observed_id, c.last_dream_at, c.explicit_at_last_dream',
    from: 'collection_dreams c JOIN peers o ON o.workspace_id = c.workspace_id AND o.id = c.observer_id WHERE c.workspace_id = ?',
    keys: [{ expression: 'o.pk' }, { expression: 'c.observed_id', text: true }],
    map: (d, r): PortableRows['dream_state'] => ({
      workspace_id: String(r.workspace_id),
      observer_id: String(r.observer_id),
      observed_id: String(r.observed_id),
      last_dream_at: time(d, r.last_dream_at),
      explicit_at_last_dream: Number(r.explicit_at_last_dream),
    }),
  },
  scope_backfill: {
    select: 'b.workspace_id, b.scope_peer_id, b.session_id, b.state, b.updated_at, b.docs_copied',
    from:
      'scope_backfills b JOIN peers p ON p.workspace_id = b.workspace_id AND p.id = b.scope_peer_id ' +
      'JOIN sessions s ON s.workspace_id = b.workspace_id AND s.id = b.session_id WHERE b.workspace_id = ?',
    keys: [{ expression: 'p.pk' }, { expression: 's.pk' }],
    map: (d, r): PortableRows['scope_backfill'] => ({
      workspace_id: String(r.workspace_id),
      scope_peer_id: String(r.scope_peer_id),
      session_id: String(r.session_id),
      state: r.state as PortableRows['scope_backfill']['state'],
      updated_at: time(d, r.updated_at),
      docs_copied: r.docs_copied === null || r.docs_copied === undefined ? null : Number(r.docs_copied),
    }),
  },
  webhook: {
    select: 'w.workspace_id, w.id, w.url, w.created_at',
    from: 'webhook_endpoints w WHERE w.workspace_id = ?',
    keys: [{ expression: 'w.pk' }],
    map: (d, r): PortableRows['webhook'] => ({ workspace_id: String(r.workspace_id), id: String(r.id), url: String(r.url), created_at: time(d, r.created_at) }),
  },
};

/** How one kind is written: its table, columns (with the placeholder each takes) and what it returns. */
interface WritePlan<K extends PortableKind> {
  table: string;
  columns: readonly string[];
  /** The placeholder of each column (`?`, or the dialect's JSON one). */
  json?: readonly string[];
  returning: string;
  values(d: Dialect, row: PortableRows[K]): unknown[];
}

const obj = (value: JsonObject): string => jsonText(value);

const WRITES: { [K in Exclude<PortableKind, 'conclusion_vector' | 'message_vector'>]: WritePlan<K> } = {
  workspace: {
    table: 'workspaces',
    columns: ['id', 'v1_id', 'metadata', 'configuration', 'created_at'],
    json: ['metadata', 'configuration'],
    returning: 'id',
    values: (d, r) => [r.id, r.v1_id, obj(r.metadata), obj(r.configuration), d.time(r.created_at)],
  },
  peer: {
    table: 'peers',
    columns: ['workspace_id', 'id', 'v1_id', 'kind', 'metadata', 'configuration', 'created_at'],
    json: ['metadata', 'configuration'],
    returning: 'id',
    values: (d, r) => [r.workspace_id, r.id, r.v1_id, r.kind, obj(r.metadata), obj(r.configuration), d.time(r.created_at)],
  },
  session: {
    table: 'sessions',
    columns: ['workspace_id', 'id', 'v1_id', 'is_active', 'metadata', 'configuration', 'created_at'],
    json: ['metadata', 'configuration'],
    returning: 'id',
    values: (d, r) => [r.workspace_id, r.id, r.v1_id, d.bool(r.is_active), obj(r.metadata), obj(r.configuration), d.time(r.created_at)],
  },
  membership: {
    table: 'session_peers',
    columns: ['workspace_id', 'session_id', 'peer_id', 'configuration', 'joined_at', 'left_at'],
    json: ['configuration'],
    returning: 'peer_id',
    values: (d, r) => [r.workspace_id, r.session_id, r.peer_id, obj(r.configuration), d.time(r.joined_at), r.left_at === null ? null : d.time(r.left_at)],
  },
  message: {
    table: 'messages',
    columns: ['id', 'workspace_id', 'session_id', 'peer_id', 'content', 'metadata', 'token_count', 'created_at'],
    json: ['metadata'],
    returning: 'id',
    values: (d, r) => [r.id, r.workspace_id, r.session_id, r.peer_id, r.content, obj(r.metadata), r.token_count, d.time(r.created_at)],
  },
  metamessage: {
    table: 'metamessages',
    columns: ['id', 'workspace_id', 'peer_id', 'session_id', 'message_id', 'label', 'content', 'metadata', 'created_at'],
    json: ['metadata'],
    returning: 'id',
    values: (d, r) => [r.id, r.workspace_id, r.peer_id, r.session_id, r.message_id, r.label, r.content, obj(r.metadata), d.time(r.created_at)],
  },
  conclusion: {
    table: 'conclusions',
    columns: [
      'id',
      'workspace_id',
      'observer_id',
      'observed_id',
      'session_id',
      'level',
      'content',
      'source_ids',
      'source_session_ids',
      'times_derived',
      'metadata',
      'copied_from',
      'created_at',
      'valid_from',
      'superseded_at',
      'superseded_by',
      'deleted_at',
    ],
    json: ['source_ids', 'source_session_ids', 'metadata'],
    returning: 'id',
    values: (d, r) => [
      r.id,
      r.workspace_id,
      r.observer_id,
      r.observed_id,
      r.session_id,
      r.level,
      r.content,
      r.source_ids === null ? null : jsonText(r.source_ids),
      r.source_session_ids === null ? null : jsonText(r.source_session_ids),
      r.times_derived,
      obj(r.metadata),
      r.copied_from,
      d.time(r.created_at),
      r.valid_from === null ? null : d.time(r.valid_from),
      r.superseded_at === null ? null : d.time(r.superseded_at),
      r.superseded_by,
      // a superseded fact is stored as the store keeps one: out of every default read
      r.superseded_at === null ? null : d.time(r.superseded_at),
    ],
  },
  peer_card: {
    table: 'peer_cards',
    columns: ['workspace_id', 'observer_id', 'target_id', 'card', 'updated_at'],
    json: ['card'],
    returning: 'target_id',
    values: (d, r) => [r.workspace_id, r.observer_id, r.target_id, jsonText(r.card), d.time(r.updated_at)],
  },
  summary: {
    table: 'session_summaries',
    columns: ['workspace_id', 'session_id', 'summary_type', 'content', 'message_id', 'message_seq', 'token_count', 'created_at'],
    returning: 'session_id',
    values: (d, r) => [r.workspace_id, r.session_id, r.summary_type, r.content, r.message_id, r.message_seq, r.token_count, d.time(r.created_at)],
  },
  dream_state: {
    table: 'collection_dreams',
    columns: ['workspace_id', 'observer_id', 'observed_id', 'last_dream_at', 'explicit_at_last_dream'],
    returning: 'observed_id',
    values: (d, r) => [r.workspace_id, r.observer_id, r.observed_id, d.time(r.last_dream_at), r.explicit_at_last_dream],
  },
  scope_backfill: {
    table: 'scope_backfills',
    columns: ['workspace_id', 'scope_peer_id', 'session_id', 'state', 'updated_at', 'docs_copied'],
    returning: 'session_id',
    values: (d, r) => [r.workspace_id, r.scope_peer_id, r.session_id, r.state, d.time(r.updated_at), r.docs_copied],
  },
  webhook: {
    table: 'webhook_endpoints',
    columns: ['id', 'workspace_id', 'url', 'created_at'],
    returning: 'id',
    values: (d, r) => [r.id, r.workspace_id, r.url, d.time(r.created_at)],
  },
};

/** Rows per INSERT statement (13 columns at most: far below either database's parameter limit). */
const ROWS_PER_STATEMENT = 100;

export class SqlPortableStore implements PortableStore {
  constructor(
    private readonly db: SqlExecutor,
    private readonly d: Dialect,
  ) {}

  /** Byte order for a text key (PostgreSQL's default collation would order by locale). */
  private textKey(expression: string): string {
    return this.d.name === 'postgres' ? `${expression} COLLATE "C"` : expression;
  }

  /** The keyset condition `(k0, k1, ...) > after` and the ORDER BY, for keys in order. */
  private keyset(keys: ReadPlan['keys'], after: PortableCursor): { where: string; params: unknown[]; order: string } {
    const exprs = keys.map((k) => (k.text === true ? this.textKey(k.expression) : k.expression));
    const order = exprs.join(', ');
    if (after === undefined) return { where: '', params: [], order };
    // (a > ?) OR (a = ? AND b > ?) ...
    const ors: string[] = [];
    const params: unknown[] = [];
    for (let i = 0; i < exprs.length; i++) {
      const ands: string[] = [];
      for (let j = 0; j < i; j++) {
        ands.push(`${exprs[j]} = ?`);
        params.push(after[j]);
      }
      ands.push(`${exprs[i]} > ?`);
      params.push(after[i]);
      ors.push(`(${ands.join(' AND ')})`);
    }
    return { where: ` AND (${ors.join(' OR ')})`, params, order };
  }

  async workspaces(ids: readonly string[] | undefined, after: PortableCursor, limit: number): Promise<PortablePage<'workspace'>> {
    const params: unknown[] = [];
    let where = 'w.pk > ?';
    params.push(after === undefined ? 0 : after[0]);
    if (ids !== undefined) {
      where += ` AND ${this.d.inJsonArray('w.id')}`;
      params.push(jsonText(ids));
    }
    const rows = await this.db.all<Row>(
      `SELECT w.pk AS k0, w.id, w.v1_id, w.metadata, w.configuration, w.created_at FROM workspaces w WHERE ${where} ORDER BY w.pk LIMIT ?`,
      [...params, limit],
    );
    const d = this.d;
    return {
      rows: rows.map((r) => ({
        id: String(r.id),
        v1_id: String(r.v1_id),
        metadata: d.readJson(r.metadata),
        configuration: d.readJson(r.configuration),
        created_at: time(d, r.created_at),
      })),
      next: rows.length < limit ? undefined : [Number(rows[rows.length - 1].k0)],
    };
  }

  async walk<K extends WalkedKind>(kind: K, workspaceIds: readonly string[] | undefined, after: PortableCursor, limit: number): Promise<PortablePage<K>> {
    if (kind === 'conclusion_vector' || kind === 'message_vector') {
      const page = await this.d.vectorIndex(this.db).exportPage(kind === 'conclusion_vector' ? 'conclusions' : 'messages', workspaceIds, after, limit);
      return {
        rows: page.rows.map((r) =>
          kind === 'conclusion_vector'
            ? { workspace_id: r.workspaceId, conclusion_id: r.id, vector: r.vector }
            : { workspace_id: r.workspaceId, message_id: r.id, chunk: r.chunk, vector: r.vector },
        ) as PortableRows[K][],
        next: page.next,
      };
    }
    const plan = PLANS[kind as 'message' | 'conclusion'];
    const alias = kind === 'message' ? 'm' : 'c';
    const table = kind === 'message' ? 'messages m' : `conclusions c WHERE ${LIVE_OR_SUPERSEDED}`;
    const where: string[] = [`${alias}.pk > ?`];
    const params: unknown[] = [after === undefined ? 0 : Number(after[0])];
    if (workspaceIds !== undefined) {
      // SQLite: `+` keeps the planner on the table's own order (an index of the workspace would
      // be read whole and sorted for every page)
      where.push(this.d.inJsonArray(`${this.d.name === 'sqlite' ? '+' : ''}${alias}.workspace_id`));
      params.push(jsonText(workspaceIds));
    }
    const from = table.includes(' WHERE ') ? `${table} AND ${where.join(' AND ')}` : `${table} WHERE ${where.join(' AND ')}`;
    // a walk may pass many rows of other workspaces: on SQLite off the event loop (read-thread.ts)
    const sql = `SELECT ${alias}.pk AS k0, ${plan.select} FROM ${from} ORDER BY ${alias}.pk LIMIT ?`;
    const rows = this.db.allAside !== undefined ? await this.db.allAside<Row>(sql, [...params, limit]) : await this.db.all<Row>(sql, [...params, limit]);
    return {
      rows: rows.map((r) => plan.map(this.d, r) as PortableRows[K]),
      next: rows.length < limit ? undefined : [Number(rows[rows.length - 1].k0)],
    };
  }

  async page<K extends WorkspaceKind>(kind: K, workspaceId: string, after: PortableCursor, limit: number): Promise<PortablePage<K>> {
    const plan = PLANS[kind];
    const keyset = this.keyset(plan.keys, after);
    const keyColumns = plan.keys.map((k, i) => `${k.expression} AS k${i}`).join(', ');
    const rows = await this.db.all<Row>(`SELECT ${keyColumns}, ${plan.select} FROM ${plan.from}${keyset.where} ORDER BY ${keyset.order} LIMIT ?`, [
      workspaceId,
      ...keyset.params,
      limit,
    ]);
    const last = rows[rows.length - 1];
    return {
      rows: rows.map((r) => plan.map(this.d, r) as PortableRows[K]),
      next: rows.length < limit ? undefined : plan.keys.map((k, i) => (k.text === true ? String(last[`k${i}`]) : Number(last[`k${i}`]))),
    };
  }

  async insert<K extends PortableKind>(kind: K, rows: readonly PortableRows[K][]): Promise<string[]> {
    if (rows.length === 0) return [];
    if (kind === 'conclusion_vector' || kind === 'message_vector') return this.insertVectors(kind, rows as readonly PortableRows['conclusion_vector' | 'message_vector'][]);
    const plan = WRITES[kind as keyof typeof WRITES] as unknown as WritePlan<K>;
    const placeholders = plan.columns.map((c) => (plan.json?.includes(c) === true ? this.d.jsonParam : '?'));
    const inserted: string[] = [];
    for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
      const chunk = rows.slice(start, start + ROWS_PER_STATEMENT);
      const returned = await this.db.all<{ key: string }>(
        `INSERT INTO ${plan.table} (${plan.columns.join(', ')}) VALUES ${chunk.map(() => `(${placeholders.join(', ')})`).join(', ')}
         ON CONFLICT DO NOTHING RETURNING ${plan.returning} AS key`,
        chunk.flatMap((row) => plan.values(this.d, row)),
      );
      for (const row of returned) inserted.push(String(row.key));
    }
    return inserted;
  }

  private async insertVectors(kind: 'conclusion_vector' | 'message_vector', rows: readonly PortableRows['conclusion_vector' | 'message_vector'][]): Promise<string[]> {
    const index = this.d.vectorIndex(this.db);
    if (kind === 'conclusion_vector') {
      const list = rows as readonly PortableRows['conclusion_vector'][];
      const found = await this.db.all<Row>(
        `SELECT c.id, c.workspace_id, c.observer_id, c.observed_id, c.level, c.session_id FROM conclusions c WHERE ${this.d.inJsonArray('c.id')} AND c.deleted_at IS NULL`,
        [jsonText(list.map((r) => r.conclusion_id))],
      );
      const byId = new Map(found.map((r) => [String(r.id), r]));
      const put = list.flatMap((r) => {
        const c = byId.get(r.conclusion_id);
        if (c === undefined || c.workspace_id !== r.workspace_id) return [];
        return [
          {
            conclusionId: r.conclusion_id,
            workspaceId: r.workspace_id,
            observerId: String(c.observer_id),
            observedId: String(c.observed_id),
            level: c.level as PortableRows['conclusion']['level'],
            sessionId: c.session_id === null ? null : String(c.session_id),
            vector: r.vector,
          },
        ];
      });
      if (put.length > 0) await index.putConclusions(put);
      return put.map((p) => p.conclusionId);
    }
    const list = rows as readonly PortableRows['message_vector'][];
    const found = await this.db.all<Row>(`SELECT m.id, m.workspace_id, m.session_id, m.peer_id FROM messages m WHERE ${this.d.inJsonArray('m.id')}`, [
      jsonText([...new Set(list.map((r) => r.message_id))]),
    ]);
    const byId = new Map(found.map((r) => [String(r.id), r]));
    const put = list.flatMap((r) => {
      const m = byId.get(r.message_id);
      if (m === undefined || m.workspace_id !== r.workspace_id) return [];
      return [{ messageId: r.message_id, chunk: r.chunk, workspaceId: r.workspace_id, sessionId: String(m.session_id), peerId: String(m.peer_id), vector: r.vector }];
    });
    if (put.length > 0) await index.putMessageChunks(put);
    return put.map((p) => p.messageId);
  }
}
