import type { JsonObject, MessageRecord } from '../../storage/store.js';
import type { DomainContext } from '../context.js';
import { invalidInput } from '../errors.js';
import { tokenCount } from './token-count.js';

/** Longest search query in tokens (contract §7.1). */
export const MAX_QUERY_TOKENS = 8192;

export interface SearchScope {
  workspaceId: string;
  sessionId?: string;
  peerId?: string;
}

/** The words of a query, as full-text search sees them: letters, digits and underscores. */
export function searchTerms(query: string): string[] {
  return query.match(/[\p{L}\p{N}_]+/gu) ?? [];
}

/**
 * Full-text search over the scope's messages, best match first. Filters narrow the result;
 * scope keys in them are replaced by the scope itself (contract §5.1). Built so a vector
 * similarity ranking can later be merged with this one.
 */
export async function searchMessages(
  ctx: DomainContext,
  scope: SearchScope,
  options: { query: string; filters: JsonObject | null | undefined; limit: number; generation: 'v2' | 'v3' },
): Promise<MessageRecord[]> {
  if (tokenCount(options.query) > MAX_QUERY_TOKENS) throw invalidInput(`Query exceeds maximum token limit of ${MAX_QUERY_TOKENS}.`);
  let filters: JsonObject | null = options.filters ?? null;
  let peerPerspective: string | undefined;
  if (filters !== null) {
    const { peer_perspective: perspective, workspace_id: _w, ...rest } = filters;
    if (typeof perspective === 'string') peerPerspective = perspective;
    if (scope.sessionId !== undefined) delete rest.session_id;
    if (scope.peerId !== undefined) delete rest.peer_id;
    filters = rest;
  }
  return ctx.store.searchMessages({
    workspaceId: scope.workspaceId,
    sessionId: scope.sessionId,
    peerId: scope.peerId,
    terms: searchTerms(options.query),
    filters,
    peerPerspective,
    limit: options.limit,
    generation: options.generation,
  });
}
