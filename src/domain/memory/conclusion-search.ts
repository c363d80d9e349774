import type { ConclusionCandidate, ConclusionRecord, ConclusionScope, FilterNode, Store } from '../../storage/store.js';
import type { DomainContext } from '../context.js';
import { documentFilter, type ReadRules } from '../filters/filters.js';
import { reciprocalRankFusion } from '../search/fuse.js';
import { fold, isStopWord, stem, TOKEN } from '../search/query-terms.js';
import { rankCandidates as rankByBm25, type RankTerm } from '../search/rank.js';
import { bestFound, inverseDocumentFrequency, SEARCH_CANDIDATES, TERM_MATCHES } from '../search/scoring.js';

/*
 * One ranking for every search of an observer's conclusions about a peer: `conclusions/query`, a
 * representation's or a session context's `search_query`, the chat's prefetch and its
 * `search_memory` tool, and a dream's discovery (docs/reasoning.md, "How search ranks").
 *
 * - Terms as message search takes them (messages/query-terms.ts): folded (lower case, no
 *   diacritics), English stop words dropped, Porter stems; text written without spaces (CJK) is
 *   split into words by Intl.Segmenter and found inside the content.
 * - BM25 with the statistics of the collection searched: each term's inverse document frequency
 *   from its matches among the collection's conclusions and the collection's size, never from
 *   other collections or workspaces, so what one workspace stores never moves another's results.
 *   The scores are computed here, not by the database, so both databases rank alike.
 * - Exact tokens first: numbers, codes, names (capitalised inside a sentence, or in capitals)
 *   and CJK words of the question, when not common in the collection (in at most half of it),
 *   lift the conclusions holding them as written above those that do not (more of them first).
 * - With an embedding model, the full-text ranking and the vector ranking are fused by
 *   reciprocal rank fusion (k = 60), as message search fuses them; the exact tokens still
 *   come first.
 */

/** Most distinct terms of a question that are searched for. */
export const MAX_CONCLUSION_TERMS = 32;

/** A term of a question: a word (found by its stem) or a CJK word (found inside the text). */
export interface ConclusionTerm {
  /** Folded word, or CJK text. */
  text: string;
  /** The word's Porter stem; undefined for a CJK word, matched as a substring. */
  stem?: string;
  /** A number, code, name or CJK word: conclusions holding it as written rank first. */
  exact: boolean;
}

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;
const CJK_ONLY = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30fc]+$/u;
const DIGIT = /\p{N}/u;
const UPPER = /\p{Lu}/u;
const UPPERS = /\p{Lu}.*\p{Lu}/u;
const SENTENCE_END = /[.!?。！？]/u;

let segmenter: Intl.Segmenter | undefined;

/** The CJK words of a token written without spaces: those of two characters or more, else the token. */
function cjkWords(token: string): string[] {
  segmenter ??= new Intl.Segmenter('und', { granularity: 'word' });
  const words = [...segmenter.segment(token)].map((s) => s.segment).filter((segment) => CJK_ONLY.test(segment) && [...segment].length >= 2);
  if (words.length > 0) return words;
  return CJK_ONLY.test(token) ? [token] : [];
}

/**
 * The terms of a question, in question order, one per stem (or CJK word). Stop words are left
 * out unless the question has nothing else (then it still finds the conclusions holding them).
 */
export function conclusionTerms(query: string): ConclusionTerm[] {
  const words: { token: string; sentenceStart: boolean }[] = [];
  let previousEnd = 0;
  for (const match of query.matchAll(TOKEN)) {
    const between = query.slice(previousEnd, match.index);
    words.push({ token: match[0], sentenceStart: previousEnd === 0 || SENTENCE_END.test(between) });
    previousEnd = match.index + match[0].length;
  }
  const terms = new Map<string, ConclusionTerm>();
  const stops = new Map<string, ConclusionTerm>();
  for (const { token, sentenceStart } of words) {
    if (CJK.test(token)) {
      for (const word of cjkWords(token)) if (!terms.has(`=${word}`)) terms.set(`=${word}`, { text: word, exact: true });
      // letters or digits beside CJK text in one token ("iPhone15の") are left to the CJK words
      continue;
    }
    const folded = fold(token);
    const term: ConclusionTerm = {
      text: folded,
      stem: stem(folded),
      exact: DIGIT.test(token) || UPPERS.test(token) || (UPPER.test(token[0]) && !sentenceStart),
    };
    const into = isStopWord(folded) ? stops : terms;
    const known = into.get(term.stem!);
    if (known === undefined) into.set(term.stem!, term);
    else if (term.exact && !known.exact) into.set(term.stem!, term);
  }
  const chosen = terms.size > 0 ? terms : stops;
  return [...chosen.values()].slice(0, MAX_CONCLUSION_TERMS);
}

/**
 * Collections of at most this many conclusions are read whole and matched here (the same terms
 * the index would find: folded tokens' Porter stems); larger ones through the words' index. At
 * this size every term's matches are counted exactly either way (TERM_MATCHES).
 */
export const READ_WHOLE_COLLECTION = 1000;

/** A collection searched, with the filters that narrow it. */
export interface ConclusionTextSearch extends ConclusionScope {
  query: string;
  /** Document filters (contract §5.1), parsed; null for none. */
  filter: FilterNode | null;
  limit: number;
  /** Return the `limit` best newest first (by time, then storage order) instead of best first. */
  newestFirst?: boolean;
}

/** What a search's steps read (bench/search-eval.ts, tests). */
export interface ConclusionSearchSteps {
  terms: ConclusionTerm[];
  /** The collection's size and each term's matches in it, as the weights were taken from. */
  collectionSize: number;
  matches: number[];
  candidates: number;
}

/**
 * The `limit` best of a collection's conclusions for a question by full text, best first (see
 * the top of this file): each term's newest TERM_MATCHES matches in the collection (after the
 * filters) are read, which also counts them; the SEARCH_CANDIDATES best by summed weights
 * (newest first between equals) are read and scored by BM25; exact tokens first.
 */
export async function rankConclusionsByText(store: Store, search: ConclusionTextSearch, steps?: ConclusionSearchSteps): Promise<ConclusionRecord[]> {
  const terms = conclusionTerms(search.query);
  if (terms.length === 0 || search.limit <= 0) return [];
  const scope: ConclusionScope = { workspaceId: search.workspaceId, observerId: search.observerId, observedId: search.observedId, sessionIds: search.sessionIds, includeSuperseded: search.includeSuperseded };
  const total = await store.memory.countCollection(scope);
  let matchesOf: number[][];
  let read: Map<number, ConclusionCandidate> | undefined;
  if (total <= READ_WHOLE_COLLECTION) {
    // a small collection is read whole and its matches found here: one statement through the
    // collection's index instead of one search of the words' index per term, each walking the
    // term's matches in every collection (up to 16 ms of CPU a query in a store of 100,000)
    const rows = await store.memory.collectionContents({ ...scope, filter: search.filter, limit: READ_WHOLE_COLLECTION });
    read = new Map(rows.map((row) => [row.pk, row]));
    matchesOf = terms.map(() => []);
    for (const row of rows) {
      const stems = new Set((fold(row.content).match(TOKEN) ?? []).map(stem));
      terms.forEach((term, i) => {
        if (term.stem !== undefined ? stems.has(term.stem) : row.content.includes(term.text)) matchesOf[i].push(row.pk);
      });
    }
  } else {
    matchesOf = await Promise.all(
      terms.map((term) =>
        store.memory.conclusionMatches({ ...scope, term: term.stem === undefined ? { substring: term.text } : { word: term.text }, filter: search.filter, limit: TERM_MATCHES }),
      ),
    );
  }
  const weights = terms.map((_, i) => inverseDocumentFrequency(matchesOf[i].length, total));
  const { chosen } = bestFound(matchesOf, weights, SEARCH_CANDIDATES);
  const candidates = read !== undefined ? chosen.map((pk) => read.get(pk)!) : await store.memory.conclusionContents(search.workspaceId, chosen, search.includeSuperseded);
  // exact tokens common in the collection (a peer's own name in most facts about them) say nothing
  const exact = terms.map((term, i) => term.exact && matchesOf[i].length * 2 <= Math.max(total, matchesOf[i].length));
  const best = rankCandidates(terms, weights, exact, candidates, search.limit);
  if (steps !== undefined) Object.assign(steps, { terms, collectionSize: total, matches: matchesOf.map((m) => m.length), candidates: candidates.length });
  const found = await store.memory.conclusionsByPks(search.workspaceId, best, search.includeSuperseded);
  if (search.newestFirst === true) found.sort((a, b) => b.conclusion.createdAt.getTime() - a.conclusion.createdAt.getTime() || b.pk - a.pk);
  return found.map((row) => row.conclusion);
}

/**
 * The row keys of the `limit` best candidates: more exact tokens first, then BM25 (rank.ts, which
 * counts the stems in each text without splitting most of it; a CJK term weighs in candidate
 * choice and as an exact token), then the newest.
 */
function rankCandidates(terms: readonly ConclusionTerm[], weights: readonly number[], exact: readonly boolean[], candidates: readonly ConclusionCandidate[], limit: number): number[] {
  const newestFirst = [...candidates].sort((a, b) => b.pk - a.pk);
  const rankTerms: RankTerm[] = terms.flatMap((term, i) => (term.stem === undefined ? [] : [{ stem: term.stem, weight: weights[i] }]));
  const exactTerms = terms.filter((_, i) => exact[i]);
  if (exactTerms.length === 0) return rankByBm25(rankTerms, newestFirst, limit).map((c) => c.pk);
  // every candidate in BM25 order, then those holding more exact tokens first (a stable sort)
  const held = new Map(newestFirst.map((c) => [c.pk, exactTokensHeld(c.content, exactTerms)]));
  return rankByBm25(rankTerms, newestFirst, newestFirst.length)
    .map((c, at) => ({ pk: c.pk, at, held: held.get(c.pk)! }))
    .sort((a, b) => b.held - a.held || a.at - b.at)
    .slice(0, limit)
    .map((c) => c.pk);
}

/** How many of the question's exact tokens a text holds as written (as a whole token; a CJK word inside the text). */
function exactTokensHeld(content: string, exactTerms: readonly ConclusionTerm[]): number {
  if (exactTerms.length === 0) return 0;
  const folded = fold(content);
  // a token is looked for among the text's tokens only when the text holds it at all; a CJK
  // word in the text as written (folding decomposes Hangul and drops kana's voicing marks)
  if (!exactTerms.some((term) => (term.stem === undefined ? content : folded).includes(term.text))) return 0;
  const tokens = new Set(folded.match(TOKEN) ?? []);
  return exactTerms.filter((term) => (term.stem === undefined ? content.includes(term.text) : tokens.has(term.text))).length;
}

/** The vector half of a hybrid search (conclusions.ts nearestConclusions), undefined when vectors are off. */
export type VectorRanking = (topK: number) => Promise<ConclusionRecord[] | undefined>;

/**
 * A collection's conclusions for a question, best first: the full-text ranking alone, or fused
 * with `byVector`'s ranking (2 x `limit` of each) by reciprocal rank fusion when vectors are on.
 * The question's exact tokens then lift the conclusions holding them (when they are rare enough
 * in the collection, as the full-text ranking found them).
 */
export async function rankConclusions(
  ctx: DomainContext,
  scope: ConclusionScope,
  options: { query: string; filters: unknown; rules: ReadRules; limit: number; newestFirst?: boolean },
  byVector?: VectorRanking,
): Promise<ConclusionRecord[]> {
  // a malformed filter is its 422 before any model call
  const filter = documentFilter(ctx.store, options.filters, options.rules);
  const steps = {} as ConclusionSearchSteps;
  const fuse = byVector !== undefined;
  if (!fuse) return rankConclusionsByText(ctx.store, { ...scope, query: options.query, filter, limit: options.limit, newestFirst: options.newestFirst }, steps);
  const text = await rankConclusionsByText(ctx.store, { ...scope, query: options.query, filter, limit: options.limit * 2 }, steps);
  const vector = await byVector(options.limit * 2);
  if (vector === undefined) return text.slice(0, options.limit);
  const records = new Map([...vector, ...text].map((c) => [c.id, c]));
  const fused = reciprocalRankFusion([text.map((c) => c.id), vector.map((c) => c.id)]);
  const exactTerms = (steps.terms ?? []).filter((term, i) => term.exact && steps.matches[i] * 2 <= Math.max(steps.collectionSize, steps.matches[i]));
  const held = new Map(fused.map((id) => [id, exactTokensHeld(records.get(id)!.content, exactTerms)]));
  // stable: fused order between equal counts
  return fused
    .map((id, at) => ({ id, at }))
    .sort((a, b) => held.get(b.id)! - held.get(a.id)! || a.at - b.at)
    .slice(0, options.limit)
    .map(({ id }) => records.get(id)!);
}
