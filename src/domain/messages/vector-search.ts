import { ModelError } from '../../llm/provider.js';
import { MAX_NEIGHBOURS } from '../../storage/store.js';
import { messageFilter } from '../filters/filters.js';
import type { DomainContext } from '../context.js';
import { embedderOf, embedQuery } from '../search/embeddings.js';
import { narrowSearchFilters, sessionsOf, type MessageSearchOptions, type SearchScope } from './search-filters.js';

/**
 * The query's embedding for rankMessagesByVector, undefined when there is nothing to fuse (no
 * embedding model, no vector stored yet, an empty query, the model failing). Asked for before
 * the full-text ranking runs, it is under way while that reads the database.
 */
export async function queryEmbedding(ctx: DomainContext, scope: SearchScope, query: string): Promise<readonly number[] | undefined> {
  if (embedderOf(ctx) === undefined || query.trim() === '' || (await ctx.store.vectors.dimensions()) === undefined) return undefined;
  try {
    return await embedQuery(ctx, scope.workspaceId, query);
  } catch (error) {
    if (error instanceof ModelError) return undefined;
    throw error;
  }
}

/**
 * The vector half of a hybrid message search (reasoning.md R7): the scope's messages nearest in
 * meaning to the query, nearest first, as ids; a message with several chunks counts once, at
 * its nearest chunk. `limit` x 2 neighbours are read (x 4 with `peer_perspective`, x 4 again
 * with other filters, since the filters and the perspective are applied after the vector
 * search). Undefined when there is nothing to fuse: no embedding model, no vector stored yet,
 * or the embedding model failing (the search then answers by full text alone rather than not
 * at all).
 */
export async function rankMessagesByVector(
  ctx: DomainContext,
  scope: SearchScope,
  options: MessageSearchOptions,
  embedding: Promise<readonly number[] | undefined> = queryEmbedding(ctx, scope, options.query),
): Promise<string[] | undefined> {
  const vector = await embedding;
  if (vector === undefined) return undefined;
  // the same narrowing as the full-text ranking (search.ts)
  const narrowed = narrowSearchFilters(scope, options.filters);
  const peerPerspective = narrowed.peerPerspective;
  const filters = narrowed.filters === null || Object.keys(narrowed.filters).length === 0 ? null : narrowed.filters;
  const factor = (peerPerspective === undefined ? 2 : 4) * (filters === null ? 1 : 4);
  const sessions = scope.sessionId === undefined ? sessionsOf(filters) : undefined;
  const neighbours = await ctx.store.vectors.nearestMessages({
    workspaceId: scope.workspaceId,
    sessionId: scope.sessionId ?? (sessions?.length === 1 ? sessions[0] : undefined),
    sessionIds: sessions !== undefined && sessions.length !== 1 ? sessions : undefined,
    peerId: scope.peerId,
    // what the perspective's peer could see lies in its sessions; their time windows are checked after
    memberOf: peerPerspective,
    vector,
    k: Math.min(MAX_NEIGHBOURS, options.limit * factor),
  });
  const ids = neighbours.map((n) => n.messageId);
  if (filters === null && peerPerspective === undefined) return ids;
  const filter = messageFilter(ctx.store, filters, options.rules);
  const kept = await ctx.store.messages.filterIds({ ...scope, filter, peerPerspective }, ids);
  return ids.filter((id) => kept.has(id));
}
