import type { Created, FieldChanges, ListQuery, NewRow, Page, PeerKindFilter, PeerRecord, PeerStore } from '../store.js';
import type { FilterColumns } from './compile-filter.js';
import type { Dialect } from './dialect.js';
import { PeerDeletingError } from '../peer-deleting.js';
import { RowVanishedError, type SqlExecutor } from './driver.js';
import { fieldChanges } from './field-changes.js';
import { listPage } from './list-page.js';
import type { SeekPoints } from './seek-points.js';
import { countPeers, countScopes } from './kept-counts.js';
import { lockWorkspaceRow } from './workspace-store.js';
import { PEER_COLUMNS, PEER_RETURNING, peerFromRow, type PeerRow, type VersionRow, versionText } from './rows.js';

const PEER_ORDER = ['p.created_at', 'p.pk'];
const PEER_FILTER: FilterColumns = { columns: { id: 'p.id', created_at: 'p.created_at', workspace_id: 'p.workspace_id' }, metadata: 'p.metadata', key: 'p.pk' };

/** The `peers` table. */
export class SqlPeerStore implements PeerStore {
  /** `seekPoints`: where earlier pages of its lists ended (seek-points.ts); none inside a transaction. */
  constructor(
    private readonly db: SqlExecutor,
    private readonly d: Dialect,
    private readonly seekPoints?: SeekPoints,
  ) {}

  async find(workspaceId: string, id: string): Promise<PeerRecord | undefined> {
    const row = await this.db.get<PeerRow>(`SELECT ${PEER_COLUMNS} FROM peers p WHERE p.workspace_id = ? AND p.id = ? AND p.deleting_at IS NULL`, [workspaceId, id]);
    return row && peerFromRow(this.d, row);
  }

  async keepLivePeers(workspaceId: string, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const wanted = [...new Set(ids)].sort();
    const rows = await this.db.all<{ id: string; deleting: unknown }>(
      `SELECT id, deleting_at AS deleting FROM peers WHERE workspace_id = ? AND id IN (${wanted.map(() => '?').join(', ')}) ORDER BY id${this.d.forKeyShare}`,
      [workspaceId, ...wanted],
    );
    return new Set(rows.filter((row) => row.deleting === null || row.deleting === undefined).map((row) => row.id));
  }

  /** Throws PeerDeletingError when one of `ids` is marked for deletion. */
  private async refuseDeleting(workspaceId: string, ids: readonly string[]): Promise<void> {
    const row = await this.db.get<{ id: string }>(
      `SELECT id FROM peers WHERE workspace_id = ? AND deleting_at IS NOT NULL AND id IN (${ids.map(() => '?').join(', ')}) LIMIT 1`,
      [workspaceId, ...ids],
    );
    if (row !== undefined) throw new PeerDeletingError(row.id);
  }

  createIfAbsent(workspaceId: string, row: NewRow, now: Date): Promise<Created<PeerRecord>> {
    return this.insertIfAbsent(workspaceId, row, now, null);
  }

  createScopeIfAbsent(workspaceId: string, row: NewRow, now: Date): Promise<Created<PeerRecord>> {
    return this.insertIfAbsent(workspaceId, row, now, 'scope');
  }

  async scopesAmong(workspaceId: string, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db.all<{ id: string }>(
      `SELECT id FROM peers WHERE workspace_id = ? AND kind = 'scope' AND id IN (${ids.map(() => '?').join(', ')})`,
      [workspaceId, ...ids],
    );
    return new Set(rows.map((row) => row.id));
  }

  private async insertIfAbsent(workspaceId: string, row: NewRow, now: Date, kind: 'scope' | null): Promise<Created<PeerRecord>> {
    const d = this.d;
    const found = await this.find(workspaceId, row.id);
    if (found !== undefined) return { record: found, created: false };
    await this.refuseDeleting(workspaceId, [row.id]);
    // the workspace row before the new peer's, as in ensure
    await lockWorkspaceRow(this.db, d, workspaceId);
    const inserted = await this.db.get<PeerRow>(
      `INSERT INTO peers (workspace_id, id, metadata, configuration, created_at, kind) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (workspace_id, id) DO NOTHING RETURNING ${PEER_RETURNING}`,
      [workspaceId, row.id, d.json(row.metadata), d.json(row.configuration), d.time(now), kind],
    );
    if (inserted !== undefined) return { record: peerFromRow(d, inserted), created: true };
    const existing = await this.find(workspaceId, row.id);
    if (existing === undefined) {
      await this.refuseDeleting(workspaceId, [row.id]);
      throw new RowVanishedError(`peer ${row.id} vanished during get-or-create`);
    }
    return { record: existing, created: false };
  }

  async ensure(workspaceId: string, ids: string[], now: Date): Promise<void> {
    if (ids.length === 0) return;
    const wanted = [...new Set(ids)];
    const present = await this.db.all<{ id: string; deleting: unknown }>(
      `SELECT id, deleting_at AS deleting FROM peers WHERE workspace_id = ? AND id IN (${wanted.map(() => '?').join(', ')})`,
      [workspaceId, ...wanted],
    );
    const deleting = present.find((row) => row.deleting !== null && row.deleting !== undefined);
    if (deleting !== undefined) throw new PeerDeletingError(deleting.id);
    if (present.length === wanted.length) return;
    // A new peer's trigger writes the workspace row: locked before any peer row, so that a
    // transaction already holding it (one that created a session) and this one do not each
    // wait for what the other inserted. Sorted, so concurrent inserts take rows in one order.
    await lockWorkspaceRow(this.db, this.d, workspaceId);
    const sorted = wanted.sort();
    const time = this.d.time(now);
    const values = sorted.map(() => "(?, ?, '{}', '{}', ?)").join(', ');
    const params = sorted.flatMap((id) => [workspaceId, id, time]);
    await this.db.run(
      `INSERT INTO peers (workspace_id, id, metadata, configuration, created_at) VALUES ${values}
       ON CONFLICT (workspace_id, id) DO NOTHING`,
      params,
    );
  }

  async update(workspaceId: string, id: string, changes: FieldChanges): Promise<PeerRecord | undefined> {
    const { sets, params } = fieldChanges(this.d, changes);
    if (sets.length === 0) return this.find(workspaceId, id);
    await lockWorkspaceRow(this.db, this.d, workspaceId);
    const row = await this.db.get<PeerRow>(
      `UPDATE peers SET ${sets.join(', ')} WHERE workspace_id = ? AND id = ? AND deleting_at IS NULL
       RETURNING ${PEER_RETURNING}`,
      [...params, workspaceId, id],
    );
    return row && peerFromRow(this.d, row);
  }

  list(workspaceId: string, query: ListQuery, kind: PeerKindFilter = 'peers'): Promise<Page<PeerRecord>> {
    const where = {
      peers: 'p.workspace_id = ? AND p.kind IS NULL AND p.deleting_at IS NULL',
      scopes: "p.workspace_id = ? AND p.kind = 'scope' AND p.deleting_at IS NULL",
      all: 'p.workspace_id = ? AND p.deleting_at IS NULL',
    }[kind];
    const total = async () =>
      kind === 'peers'
        ? countPeers(this.db, workspaceId)
        : kind === 'scopes'
          ? countScopes(this.db, workspaceId)
          : (await countPeers(this.db, workspaceId)) + (await countScopes(this.db, workspaceId));
    return listPage<PeerRow, PeerRecord>(
      this.db,
      this.d,
      { from: 'peers p', where, params: [workspaceId], select: PEER_COLUMNS, order: PEER_ORDER, filterColumns: PEER_FILTER },
      query,
      (row) => peerFromRow(this.d, row),
      total,
      // the seek points of one version belong to one list: only the default one keeps them
      kind === 'peers' && this.seekPoints !== undefined ? { points: this.seekPoints, version: () => this.version(workspaceId) } : undefined,
    );
  }

  version(workspaceId: string): Promise<string | undefined> {
    return peersVersion(this.db, workspaceId);
  }
}

/** PeerStore.version: the workspace's peers' version with the workspace row's incarnation. */
export async function peersVersion(db: SqlExecutor, workspaceId: string): Promise<string | undefined> {
  // v1_id is random per workspace row: a recreated workspace never matches an old token
  const row = await db.get<VersionRow>('SELECT v1_id AS incarnation, peers_version AS v FROM workspaces WHERE id = ?', [workspaceId]);
  return versionText(row);
}
