import type { JsonObject, MessageRecord } from '../../storage/store.js';
import type { DomainContext } from '../context.js';
import { invalidInput } from '../errors.js';
import { rankCandidatesInSlices } from './rank.js';
import { countTokensOf } from './token-count.js';

/** Longest search query in tokens (contract §7.1). */
export const MAX_QUERY_TOKENS = 8192;

/**
 * How many of the newest matching messages are ranked. It bounds a search's cost whatever
 * the number of matches (docs/decisions.md, "Search"); a query whose words occur in more
 * messages than this ranks the most recent of them.
 */
export const SEARCH_CANDIDATES = 1000;

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
 * Full-text search over the scope's messages, best match first: the newest
 * SEARCH_CANDIDATES messages holding every word of the query (and passing the filters) are
 * ranked (rank.ts) and the best `limit` read. Filters narrow the result; scope keys in them
 * are replaced by the scope itself (contract §5.1). A vector-similarity ranking can later be
 * fused with this one between the ranking and the read.
 */
export async function searchMessages(
  ctx: DomainContext,
  scope: SearchScope,
  options: { query: string; filters: JsonObject | null | undefined; limit: number; generation: 'v2' | 'v3' },
): Promise<MessageRecord[]> {
  if ((await countTokensOf(options.query, MAX_QUERY_TOKENS)) > MAX_QUERY_TOKENS) throw invalidInput(`Query exceeds maximum token limit of ${MAX_QUERY_TOKENS}.`);
  let filters: JsonObject | null = options.filters ?? null;
  let peerPerspective: string | undefined;
  if (filters !== null) {
    const { peer_perspective: perspective, workspace_id: _w, ...rest } = filters;
    if (typeof perspective === 'string') peerPerspective = perspective;
    if (scope.sessionId !== undefined) delete rest.session_id;
    if (scope.peerId !== undefined) delete rest.peer_id;
    filters = rest;
  }
  const terms = searchTerms(options.query);
  const candidates = await ctx.store.searchCandidates({
    workspaceId: scope.workspaceId,
    sessionId: scope.sessionId,
    peerId: scope.peerId,
    terms,
    filters,
    peerPerspective,
    candidates: SEARCH_CANDIDATES,
    generation: options.generation,
  });
  const best = await rankCandidatesInSlices(terms, candidates, options.limit);
  const records = new Map((await ctx.store.messagesByIds(scope.workspaceId, best.map((candidate) => candidate.id))).map((m) => [m.id, m]));
  // a message deleted between the two reads is left out
  return best.flatMap((candidate) => records.get(candidate.id) ?? []);
}
