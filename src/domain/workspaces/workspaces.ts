import type { Created, JsonObject, Page, WorkspaceRecord } from '../../storage/store.js';
import { WORKSPACE_FILTER } from '../filters/filter-schemas.js';
import { listQuery, type ListRequest } from '../filters/filters.js';
import { inTransaction, type DomainContext } from '../context.js';
import { conflict, notFound } from '../errors.js';
import { purgeQueuedSessions } from '../follow-ups.js';
import { ConflictsPersistedError } from '../../storage/unavailable.js';

export interface WorkspaceInput {
  id: string;
  metadata: JsonObject;
  configuration: JsonObject;
}

/**
 * Existing workspaces are returned unchanged: the body only seeds a new one (contract §7.1). In a
 * transaction, so that a workspace deleted between the insert that found it and the read of it
 * is created again (the work runs again; RowVanishedError) rather than failing.
 */
export function getOrCreateWorkspace(ctx: DomainContext, input: WorkspaceInput): Promise<Created<WorkspaceRecord>> {
  return inTransaction(ctx, (ctx) => ctx.store.workspaces.createIfAbsent(input, ctx.now()));
}

export function listWorkspaces(ctx: DomainContext, request: ListRequest): Promise<Page<WorkspaceRecord>> {
  return ctx.store.workspaces.list(listQuery(ctx.store, request, WORKSPACE_FILTER));
}

/** Top-level configuration keys replace stored ones; other stored keys stay. */
export function mergeConfiguration(stored: JsonObject, changes: JsonObject | undefined): JsonObject | undefined {
  return changes === undefined ? undefined : { ...stored, ...changes };
}

/** Updates a workspace, creating it first when missing (contract §7.1). */
export function updateWorkspace(
  ctx: DomainContext,
  id: string,
  changes: { metadata?: JsonObject; configuration?: JsonObject },
): Promise<WorkspaceRecord> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const { record, created } = await store.workspaces.createIfAbsent(
      { id, metadata: changes.metadata ?? {}, configuration: changes.configuration ?? {} },
      ctx.now(),
    );
    if (created) return record;
    const updated = await store.workspaces.update(id, {
      metadata: changes.metadata,
      configuration: mergeConfiguration(record.configuration, changes.configuration),
    });
    return updated ?? record;
  });
}

export interface DeleteWorkspaceRules {
  /** v3 refuses while active sessions remain; v2 deletes regardless. */
  refuseWithActiveSessions: boolean;
  notFoundMessage: string;
}

/**
 * Deletes the workspace and everything in it; returns the deleted record. Its deleted sessions
 * whose purge is still queued (a client deleting every session, then the workspace) are purged
 * first, batch by batch as their purge job would, so the one transaction that removes the
 * workspace holds the database only for what is left.
 */
export async function deleteWorkspace(ctx: DomainContext, id: string, rules: DeleteWorkspaceRules): Promise<WorkspaceRecord> {
  await purgeQueuedSessions(ctx.store, id);
  const remove = (yieldLocks: boolean) =>
    inTransaction(ctx, async (ctx) => {
      const { store } = ctx;
      const workspace = await store.workspaces.find(id);
      if (workspace === undefined) throw notFound(rules.notFoundMessage);
      if (rules.refuseWithActiveSessions && (await store.workspaces.countActiveSessions(id)) > 0) {
        throw conflict(`Cannot delete workspace '${id}': active session(s) remain. Delete all sessions first.`);
      }
      await store.workspaces.delete(id, { yieldLocks });
      return workspace;
    });
  try {
    // writers of the workspace go first (WorkspaceStore.delete)
    return await remove(true);
  } catch (error) {
    if (!(error instanceof ConflictsPersistedError)) throw error;
    // they kept it waiting on every attempt: once more, waiting its turn
    return remove(false);
  }
}
