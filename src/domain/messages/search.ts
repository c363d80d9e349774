import type { JsonObject, MessageRecord, MessageSearch, SeqCandidate } from '../../storage/store.js';
import { messageFilter } from '../filters/filters.js';
import type { DomainContext } from '../context.js';
import type { Turn } from '../turns.js';
import { invalidInput } from '../errors.js';
import { reciprocalRankFusion } from './fuse.js';
import { narrowSearchFilters, sessionsOf } from './search-filters.js';
import { queryTerms, type QueryTerm } from './query-terms.js';
import { rankCandidatesInSlices, type RankTerm } from './rank.js';
import { exceedsTokensOf } from './token-count.js';
import { rankMessagesByVector } from './vector-search.js';

/** Longest search query in tokens (contract §7.1). */
export const MAX_QUERY_TOKENS = 8192;

/**
 * How many messages are ranked in full (their text read and scored). It bounds a search's
 * cost whatever the number of matches (docs/decisions/0021-search.md).
 */
export const SEARCH_CANDIDATES = 500;

/**
 * How many of the newest matches of each term are read. Below this a term's count of matches
 * in the scope is exact; a term with more counts as having this many (docs/decisions/0021-search.md).
 */
export const TERM_MATCHES = 1000;

/**
 * The scope's size is counted up to this many messages: counting costs about 1.4 µs a message
 * (a 100,000 cap made a workspace search 14 ms slower), and past it a term's weight depends on
 * its own count more than on the scope's.
 */
export const SCOPE_COUNT_CAP = 10_000;

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
 * BM25's inverse document frequency of a term found in `matches` of `total` messages.
 */
export function inverseDocumentFrequency(matches: number, total: number): number {
  const documents = Math.max(total, matches);
  return Math.log(1 + (documents - matches + 0.5) / (matches + 0.5));
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
  options: { query: string; filters: JsonObject | null | undefined; limit: number; generation: 'v2' | 'v3' },
  steps?: SearchSteps,
): Promise<MessageRecord[]> {
  const canFuse = ctx.reasoning?.models.embedder !== undefined;
  // the full-text ranking first: it also checks the query
  const text = await rankMessagesByText(ctx, scope, { ...options, limit: canFuse ? options.limit * 2 : options.limit }, steps);
  if (!canFuse) return text;
  const vector = await rankMessagesByVector(ctx, scope, options);
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
  options: { query: string; filters: JsonObject | null | undefined; limit: number; generation: 'v2' | 'v3' },
  steps?: SearchSteps,
): Promise<MessageRecord[]> {
  if (await exceedsTokensOf(options.query, MAX_QUERY_TOKENS)) throw invalidInput(`Query exceeds maximum token limit of ${MAX_QUERY_TOKENS}.`);
  const { filters, peerPerspective } = narrowSearchFilters(scope, options.filters);
  const terms = queryTerms(options.query);
  if (terms.length === 0) return [];
  const withinSessions = scope.sessionId === undefined ? sessionsOf(filters) : undefined;
  const narrowing: Narrowing = {
    filter: messageFilter(ctx.store, filters, options.generation),
    peerPerspective,
    withinSessions,
    filterIsWithinSessions: withinSessions !== undefined && filters !== null && Object.keys(filters).length === 1,
  };
  // the reads and the ranking in the search's turn (on SQLite they hold the event loop, turns.ts)
  return ctx.turns.run((turn) => rankInTurn(ctx, scope, terms, narrowing, options.limit, turn, steps));
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

/**
 * The `count` best of the messages the terms found (each term's seqs, newest first, and its
 * weight): a message scores the sum of the weights of the terms that found it; highest score
 * first, newest first between equal scores. Returned newest first, with how many distinct
 * messages were found. The lists are merged newest first, so each message is met once with the
 * set of terms that found it, and dealt out by that set: the sets are few, and each is scored
 * once. (A map of every message and a sort of (score, seq) pairs cost about 0.3 ms for 2,000
 * matches; this about 0.1 ms.)
 */
export function bestFound(matchesOf: readonly (readonly number[])[], weights: readonly number[], count: number): { chosen: number[]; found: number } {
  // a bit of a 32-bit integer per term
  if (matchesOf.length > 32) throw new RangeError(`bestFound takes at most 32 terms, not ${matchesOf.length}`);
  const lists = matchesOf.map((seqs) => (isNewestFirst(seqs) ? seqs : [...seqs].sort((a, b) => b - a)));
  const heads = new Int32Array(lists.length);
  // by the set of terms (a bit each; at most MAX_QUERY_TERMS, 32), the seqs they found, newest first
  const bySet = new Map<number, number[]>();
  let found = 0;
  for (;;) {
    let newest = -Infinity;
    for (let term = 0; term < lists.length; term++) {
      const list = lists[term];
      if (heads[term] < list.length && list[heads[term]] > newest) newest = list[heads[term]];
    }
    if (newest === -Infinity) break;
    let set = 0;
    for (let term = 0; term < lists.length; term++) {
      const list = lists[term];
      while (heads[term] < list.length && list[heads[term]] === newest) {
        set |= 1 << term;
        heads[term]++;
      }
    }
    found++;
    const seqs = bySet.get(set);
    if (seqs === undefined) bySet.set(set, [newest]);
    else seqs.push(newest);
  }
  // summed in the terms' order, as each term's weight was added to the messages it found
  const groups = [...bySet].map(([set, seqs]) => {
    let score = 0;
    for (let term = 0; term < lists.length; term++) if (((set >>> term) & 1) === 1) score += weights[term];
    return { score, seqs };
  });
  groups.sort((a, b) => b.score - a.score);
  const chosen: number[] = [];
  for (let first = 0; first < groups.length && chosen.length < count; ) {
    // sets of equal scores are one rank: their seqs are taken newest first together
    let end = first + 1;
    while (end < groups.length && groups[end].score === groups[first].score) end++;
    const seqs = end === first + 1 ? groups[first].seqs : groups.slice(first, end).flatMap((group) => group.seqs).sort((a, b) => b - a);
    for (const seq of seqs) {
      if (chosen.length === count) break;
      chosen.push(seq);
    }
    first = end;
  }
  return { chosen: chosen.sort((a, b) => b - a), found };
}

function isNewestFirst(seqs: readonly number[]): boolean {
  for (let at = 1; at < seqs.length; at++) if (seqs[at] > seqs[at - 1]) return false;
  return true;
}
