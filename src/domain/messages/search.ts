import type { MessageRecord, MessageSearch, SeqCandidate } from '../../storage/store.js';
import { messageFilter } from '../filters/filters.js';
import type { DomainContext } from '../context.js';
import type { Turn } from '../turns.js';
import { invalidInput } from '../errors.js';
import { reciprocalRankFusion } from '../search/fuse.js';
import { narrowSearchFilters, sessionsOf, type MessageSearchOptions, type SearchScope } from './search-filters.js';
import { queryTerms, type QueryTerm } from '../search/query-terms.js';
import { rankCandidatesInSlices, type RankTerm } from '../search/rank.js';
import { exceedsTokensOf } from '../text/token-count.js';
import { bestFound, inverseDocumentFrequency, MAX_QUERY_TOKENS, SEARCH_CANDIDATES, TERM_MATCHES } from '../search/scoring.js';
import { queryEmbedding, rankMessagesByVector } from './vector-search.js';

/**
 * The scope's size is counted up to this many messages: counting costs about 1.4 µs a message
 * (a 100,000 cap made a workspace search 14 ms slower), and past it a term's weight depends on
 * its own count more than on the scope's.
 */
export const SCOPE_COUNT_CAP = 10_000;

export type { SearchScope } from './search-filters.js';

/** The words of a query, as full-text search sees them: letters, digits and underscores. */
export function searchTerms(query: string): string[] {
  return query.match(/[\p{L}\p{N}_]+/gu) ?? [];
}

/** What the bench's search analysis reads of one search. */
export interface SearchSteps {
  terms: number;
  matches: number;
  candidates: number;
}

/**
 * Full-text search over the scope's messages, best match first, ranked as a search engine
 * ranks a question: its terms are its words other than stop words, stemmed (query-terms.ts);
 * a message matches when it holds any of them. For each term the newest TERM_MATCHES matches
 * of the scope (after the filters) are read, which also counts the term's matches; each
 * message found gets the summed inverse document frequencies of the terms it was found by,
 * the SEARCH_CANDIDATES best of them (newest first between equals) are read and ranked by
 * BM25 (rank.ts), and the best `limit` are returned. A query of one term reads its newest
 * matches with their text at once (oneTermCandidates). Filters narrow the result; scope keys in
 * them are replaced by the scope itself (contract §5.1). When message vectors exist, this
 * ranking (2 x `limit`) and the vector ranking (vector-search.ts) are merged by reciprocal rank
 * fusion (fuse.ts), so a message found by meaning alone is found too.
 */
export async function searchMessages(
  ctx: DomainContext,
  scope: SearchScope,
  options: MessageSearchOptions,
  steps?: SearchSteps,
): Promise<MessageRecord[]> {
  const canFuse = ctx.reasoning?.models.embedder !== undefined;
  // the query and the filters checked first: a search refused makes no model call
  const ranking = await textRanking(ctx, scope, { ...options, limit: canFuse ? options.limit * 2 : options.limit }, steps);
  if (!canFuse) return ranking();
  // the query's embedding (a model call) is under way while the full-text ranking reads the
  // database, so a search waits for the longer of the two, not for both in turn; the two
  // rankings' reads still go one after the other (side by side they cost the soak's server and
  // database more CPU: more connections at work at once). A failed ranking leaves the
  // embedding's end unheeded.
  const embedding = queryEmbedding(ctx, scope, options.query);
  embedding.catch(() => undefined);
  const text = await ranking();
  const vector = await rankMessagesByVector(ctx, scope, options, embedding);
  if (vector === undefined) return text.slice(0, options.limit);
  // hybrid (reasoning.md R7): both rankings merged by reciprocal rank fusion, k = 60
  const fused = reciprocalRankFusion([text.map((m) => m.id), vector]).slice(0, options.limit);
  const records = new Map(text.map((m) => [m.id, m]));
  const missing = fused.filter((id) => !records.has(id));
  for (const message of await ctx.store.messages.byIds(scope.workspaceId, missing)) records.set(message.id, message);
  // a message deleted between the reads is left out
  return fused.flatMap((id) => records.get(id) ?? []);
}

/** searchMessages' full-text ranking, the best `limit` (as many as SEARCH_CANDIDATES) of it. */
export async function rankMessagesByText(
  ctx: DomainContext,
  scope: SearchScope,
  options: MessageSearchOptions,
  steps?: SearchSteps,
): Promise<MessageRecord[]> {
  return (await textRanking(ctx, scope, options, steps))();
}

/** rankMessagesByText in two: the query checked and the filters read (either may refuse the search), then the ranking returned to run. */
async function textRanking(ctx: DomainContext, scope: SearchScope, options: MessageSearchOptions, steps?: SearchSteps): Promise<() => Promise<MessageRecord[]>> {
  if (await exceedsTokensOf(options.query, MAX_QUERY_TOKENS)) throw invalidInput(`Query exceeds maximum token limit of ${MAX_QUERY_TOKENS}.`);
  const { filters, peerPerspective } = narrowSearchFilters(scope, options.filters);
  const terms = queryTerms(options.query);
  if (terms.length === 0) return () => Promise.resolve([]);
  const withinSessions = scope.sessionId === undefined ? sessionsOf(filters) : undefined;
  const narrowing: Narrowing = {
    filter: messageFilter(ctx.store, filters, options.rules),
    peerPerspective,
    withinSessions,
    filterIsWithinSessions: withinSessions !== undefined && filters !== null && Object.keys(filters).length === 1,
  };
  // the reads and the ranking in the search's turn (on SQLite they hold the event loop, turns.ts)
  return () => ctx.turns.run((turn) => rankInTurn(ctx, scope, terms, narrowing, options.limit, turn, steps));
}

async function rankInTurn(
  ctx: DomainContext,
  scope: SearchScope,
  terms: readonly QueryTerm[],
  narrowing: Narrowing,
  limit: number,
  turn: Turn,
  steps: SearchSteps | undefined,
): Promise<MessageRecord[]> {
  const { ranked, candidates, matches } =
    terms.length === 1 ? await oneTermCandidates(ctx, scope, terms[0], narrowing) : await manyTermCandidates(ctx, scope, terms, narrowing);
  if (steps !== undefined) Object.assign(steps, { terms: terms.length, matches, candidates: candidates.length });
  const best = await rankCandidatesInSlices(ranked, candidates, limit, () => turn.pause());
  // by row: the candidates' seqs, not their ids (an index look-up each)
  const records = new Map((await ctx.store.messages.bySeqs(scope.workspaceId, best.map((c) => c.seq))).map((m) => [m.id, m]));
  return best.flatMap((candidate) => records.get(candidate.id) ?? []);
}

/** What narrows a search within its scope: the filters, and the sessions they name at the top level. */
interface Narrowing {
  filter: ReturnType<typeof messageFilter>;
  peerPerspective: string | undefined;
  withinSessions: readonly string[] | undefined;
  /** The filter is the `withinSessions` condition alone. */
  filterIsWithinSessions: boolean;
}

interface Candidates {
  ranked: RankTerm[];
  candidates: SeqCandidate[];
  /** Distinct messages found by the terms. */
  matches: number;
}

/** The store's search for the newest `candidates` matches of one term in the scope. */
function termSearch(scope: SearchScope, term: QueryTerm, narrowing: Narrowing, candidates: number): MessageSearch {
  return { workspaceId: scope.workspaceId, sessionId: scope.sessionId, peerId: scope.peerId, terms: [term.word], ...narrowing, candidates };
}

/**
 * One term: its newest matches are the candidates, read with their text in one statement. Its
 * weight scales every score alike, so the order does not depend on it and the scope is not
 * counted.
 */
async function oneTermCandidates(ctx: DomainContext, scope: SearchScope, term: QueryTerm, narrowing: Narrowing): Promise<Candidates> {
  const candidates = await ctx.store.messages.searchCandidates(termSearch(scope, term, narrowing, Math.min(TERM_MATCHES, SEARCH_CANDIDATES)));
  return { ranked: [{ stem: term.stem, weight: 1 }], candidates, matches: candidates.length };
}

/**
 * Several terms: the newest matches of each, weighted by inverse document frequency; the
 * SEARCH_CANDIDATES best-weighted messages (newest first between equals) are read with their text.
 */
async function manyTermCandidates(
  ctx: DomainContext,
  scope: SearchScope,
  terms: readonly QueryTerm[],
  narrowing: Narrowing,
): Promise<Candidates> {
  const matchesOf = await Promise.all(terms.map((term) => ctx.store.messages.searchMatches(termSearch(scope, term, narrowing, TERM_MATCHES))));
  const total = await ctx.store.messages.countInScope(scope, SCOPE_COUNT_CAP);
  const ranked: RankTerm[] = terms.map((term, index) => ({ stem: term.stem, weight: inverseDocumentFrequency(matchesOf[index].length, total) }));
  const { chosen, found } = bestFound(matchesOf, ranked.map((term) => term.weight), SEARCH_CANDIDATES);
  const texts = new Map((await ctx.store.messages.searchContents(scope.workspaceId, chosen)).map((c) => [c.seq, c]));
  // a message deleted between the reads is left out
  const candidates = chosen.flatMap((seq) => texts.get(seq) ?? []);
  return { ranked, candidates, matches: found };
}
