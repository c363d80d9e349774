import type { Page, WebhookEndpointRecord, WebhookStore } from '../store.js';
import type { Dialect } from './dialect.js';
import type { SqlExecutor } from './driver.js';
import { pageOffset } from './page-offset.js';
import { WEBHOOK_COLUMNS, webhookFromRow, type WebhookRow } from './rows.js';

/** The `webhook_endpoints` table. */
export class SqlWebhookStore implements WebhookStore {
  constructor(
    private readonly db: SqlExecutor,
    private readonly d: Dialect,
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
    const row = await this.db.get<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhook_endpoints WHERE id = ?`, [id]);
    return row && webhookFromRow(this.d, row);
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
    return (await this.db.run('DELETE FROM webhook_endpoints WHERE workspace_id = ? AND id = ?', [workspaceId, id])) > 0;
  }
}
