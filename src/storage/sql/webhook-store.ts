import type { Page, WebhookEndpointRecord, WebhookStore } from '../store.js';
import type { Dialect } from './dialect.js';
import type { SqlExecutor } from './driver.js';
import { pageOffset } from './page-offset.js';
import { WEBHOOK_COLUMNS, webhookFromRow, type WebhookRow } from './rows.js';

/** How long an endpoint found stays known without being read again (another process may delete it). */
export const ENDPOINT_MEMO_MS = 1000;

/**
 * Endpoints found lately, by id: every delivery looks its endpoint up, and an endpoint receives
 * its deliveries one after another, so under load most lookups were of the endpoint read a few
 * milliseconds before (one statement in eight under the soak's load). A delete through a store
 * sharing it forgets the endpoint at once; one by another process is seen within
 * ENDPOINT_MEMO_MS, so a delivery may still go out in that second.
 */
export class EndpointMemo {
  private readonly found = new Map<string, { record: WebhookEndpointRecord; until: number }>();

  get(id: string, now: number): WebhookEndpointRecord | undefined {
    const entry = this.found.get(id);
    if (entry === undefined) return undefined;
    if (entry.until > now) return entry.record;
    this.found.delete(id);
    return undefined;
  }

  set(record: WebhookEndpointRecord, now: number): void {
    // endpoints are few; the bound only keeps a long-lived process from collecting them
    if (this.found.size >= 10_000) this.found.clear();
    this.found.set(record.id, { record, until: now + ENDPOINT_MEMO_MS });
  }

  forget(id: string): void {
    this.found.delete(id);
  }
}

/** The `webhook_endpoints` table. */
export class SqlWebhookStore implements WebhookStore {
  /**
   * `memo`: endpoints found, shared by a store and the stores of its transactions; filled only
   * outside a transaction (`fills`), whose reads may be of rows it then rolls back.
   */
  constructor(
    private readonly db: SqlExecutor,
    private readonly d: Dialect,
    private readonly memo = new EndpointMemo(),
    private readonly fills = false,
  ) {}

  async count(workspaceId: string): Promise<number> {
    const row = await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM webhook_endpoints WHERE workspace_id = ?', [workspaceId]);
    return Number(row?.n ?? 0);
  }

  async ids(workspaceId: string): Promise<string[]> {
    const rows = await this.db.all<{ id: string }>('SELECT id FROM webhook_endpoints WHERE workspace_id = ? ORDER BY pk', [workspaceId]);
    return rows.map((row) => row.id);
  }

  async findByUrl(workspaceId: string, url: string): Promise<WebhookEndpointRecord | undefined> {
    const row = await this.db.get<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhook_endpoints WHERE workspace_id = ? AND url = ?`, [workspaceId, url]);
    return row && webhookFromRow(this.d, row);
  }

  async find(id: string): Promise<WebhookEndpointRecord | undefined> {
    const known = this.memo.get(id, Date.now());
    if (known !== undefined) return known;
    const row = await this.db.get<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhook_endpoints WHERE id = ?`, [id]);
    const record = row && webhookFromRow(this.d, row);
    if (record !== undefined && this.fills) this.memo.set(record, Date.now());
    return record;
  }

  async insert(record: WebhookEndpointRecord): Promise<WebhookEndpointRecord | undefined> {
    const row = await this.db.get<WebhookRow>(
      `INSERT INTO webhook_endpoints (id, workspace_id, url, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (workspace_id, url) DO NOTHING RETURNING ${WEBHOOK_COLUMNS}`,
      [record.id, record.workspaceId, record.url, this.d.time(record.createdAt)],
    );
    return row && webhookFromRow(this.d, row);
  }

  async list(workspaceId: string, page: number, size: number): Promise<Page<WebhookEndpointRecord>> {
    const rows = await this.db.all<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhook_endpoints WHERE workspace_id = ? LIMIT ? OFFSET ?`, [
      workspaceId,
      size,
      pageOffset(page, size),
    ]);
    return { items: rows.map((row) => webhookFromRow(this.d, row)), total: await this.count(workspaceId) };
  }

  async delete(workspaceId: string, id: string): Promise<boolean> {
    this.memo.forget(id);
    return (await this.db.run('DELETE FROM webhook_endpoints WHERE workspace_id = ? AND id = ?', [workspaceId, id])) > 0;
  }
}
