import type { Created, JsonObject, Page, PeerKindFilter, PeerRecord, SessionRecord } from '../../storage/store.js';
import { PEER_FILTER, SESSION_FILTER } from '../filters/filter-schemas.js';
import { listQuery, sessionListQuery, type ListRequest } from '../filters/filters.js';
import { inTransaction, type DomainContext } from '../context.js';

export interface PeerInput {
  id: string;
  metadata?: JsonObject;
  configuration?: JsonObject;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Gets or creates a peer (and its workspace). For an existing peer, non-null metadata and
 * configuration replace the stored values (contract §7.2).
 */
export function getOrCreatePeer(ctx: DomainContext, workspaceId: string, input: PeerInput): Promise<Created<PeerRecord>> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
    const result = await store.peers.createIfAbsent(
      workspaceId,
      { id: input.id, metadata: input.metadata ?? {}, configuration: input.configuration ?? {} },
      now,
    );
    if (result.created) return result;
    const changes = {
      metadata: input.metadata !== undefined && !sameJson(input.metadata, result.record.metadata) ? input.metadata : undefined,
      configuration:
        input.configuration !== undefined && !sameJson(input.configuration, result.record.configuration)
          ? input.configuration
          : undefined,
    };
    if (changes.metadata === undefined && changes.configuration === undefined) return result;
    const updated = await store.peers.update(workspaceId, input.id, changes);
    return { record: updated ?? result.record, created: false };
  });
}

/** Updates a peer, creating it (and its workspace) when missing; non-null fields replace. */
export async function updatePeer(
  ctx: DomainContext,
  workspaceId: string,
  peerId: string,
  changes: { metadata?: JsonObject; configuration?: JsonObject },
): Promise<PeerRecord> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
    const { record, created } = await store.peers.createIfAbsent(
      workspaceId,
      { id: peerId, metadata: changes.metadata ?? {}, configuration: changes.configuration ?? {} },
      now,
    );
    if (created) return record;
    return (await store.peers.update(workspaceId, peerId, changes)) ?? record;
  });
}

/** Seed 4.4: the peers of a workspace, oldest first (reverse flips), filtered; scopes only when `kind` asks for them. */
export function listPeersOfWorkspace(ctx: DomainContext, workspaceId: string, request: ListRequest, kind: PeerKindFilter = 'peers'): Promise<Page<PeerRecord>> {
  return ctx.store.peers.list(workspaceId, listQuery(ctx.store, request, PEER_FILTER), kind);
}

/** Changes whenever a peer of the workspace changes; undefined when the workspace does not exist. */
export function peersVersion(ctx: DomainContext, workspaceId: string): Promise<string | undefined> {
  return ctx.store.peers.version(workspaceId);
}

/** Changes whenever the peer's list of sessions could; undefined when the peer does not exist. */
export function sessionsOfPeerVersion(ctx: DomainContext, workspaceId: string, peerId: string): Promise<string | undefined> {
  return ctx.store.sessions.ofPeerVersion(workspaceId, peerId);
}

/** Seed 4.3: every session the peer has a membership row in, left and inactive ones included. */
export async function listSessionsOfPeer(
  ctx: DomainContext,
  workspaceId: string,
  peerId: string,
  request: ListRequest,
): Promise<Page<SessionRecord>> {
  const query = sessionListQuery(ctx.store, request, SESSION_FILTER);
  // a peer being deleted has no sessions to show (its memberships go with its purge)
  if (await ctx.store.erasure.isDeleting(workspaceId, peerId)) return { items: [], total: 0 };
  return ctx.store.sessions.ofPeer(workspaceId, peerId, query);
}
