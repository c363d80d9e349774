import { PeerDeletingError } from '../../storage/peer-deleting.js';
import { inTransaction, type DomainContext } from '../context.js';
import { notFound } from '../errors.js';

/**
 * The card the observer peer keeps about `targetId` (its own card when the target is itself);
 * null when none was set. The observer must exist (contract §7.2).
 */
export async function getPeerCard(ctx: DomainContext, workspaceId: string, observerId: string, targetId: string): Promise<string[] | null> {
  const observer = await ctx.store.peers.find(workspaceId, observerId);
  if (observer === undefined) throw notFound(`Peer ${observerId} not found in workspace ${workspaceId}`);
  return (await ctx.store.memory.findPeerCard(workspaceId, observerId, targetId)) ?? null;
}

/**
 * Replaces the observer's card about `targetId`, creating the observer peer (and its workspace)
 * when missing; the target need not exist. Returns the card as stored.
 */
export function setPeerCard(
  ctx: DomainContext,
  workspaceId: string,
  observerId: string,
  targetId: string,
  card: string[],
): Promise<string[]> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
    await store.peers.ensure(workspaceId, [observerId], now);
    // a card about a peer being deleted is refused, as any write naming it (the target kept to the commit)
    await store.peers.keepLivePeers(workspaceId, [targetId]);
    if (await store.erasure.isDeleting(workspaceId, targetId)) throw new PeerDeletingError(targetId);
    await store.memory.savePeerCard(workspaceId, observerId, targetId, card, now);
    return card;
  });
}
