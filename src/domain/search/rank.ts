/**
 * Relevance ranking of full-text candidates, the same on every database.
 *
 * The store returns a bounded set of messages holding any of the query's terms (search.ts);
 * this module orders them by BM25: each term's inverse document frequency (its `weight`,
 * computed by the caller over the scope's matches), term-frequency saturation and length
 * normalisation. Terms are Porter stems (query-terms.ts), counted in each text as the index
 * counts them. Equal scores keep the input order: the caller passes newer first.
 *
 * A vector-similarity ranking can produce its own ordered candidates and be fused with this
 * one before the messages are read.
 */
import { fold, stem, TOKEN } from './query-terms.js';

/** BM25's usual constants: term-frequency saturation and length normalisation. */
const K1 = 1.2;
const B = 0.75;

/** A term to rank by: a Porter stem and its weight (BM25's inverse document frequency). */
export interface RankTerm {
  stem: string;
  weight: number;
}

/** The distinct tokens of the query words, folded as the index folds them (not stemmed). */
export function queryTokens(terms: readonly string[]): string[] {
  const tokens = new Set<string>();
  for (const term of terms) for (const token of fold(term).match(TOKEN) ?? []) tokens.add(token);
  return [...tokens];
}

/** Words as RankTerms of equal weight, one per stem; stop words count too. */
function toRankTerms(terms: readonly (string | RankTerm)[]): RankTerm[] {
  const byStem = new Map<string, RankTerm>();
  for (const term of terms) {
    if (typeof term !== 'string') {
      if (!byStem.has(term.stem)) byStem.set(term.stem, term);
      continue;
    }
    for (const token of fold(term).match(TOKEN) ?? []) {
      const key = stem(token);
      if (!byStem.has(key)) byStem.set(key, { stem: key, weight: 1 });
    }
  }
  return [...byStem.values()];
}

/** Whether each ASCII character is part of a token (a letter or a digit), as unicode61 splits ASCII. */
const ASCII_TOKEN_CHAR = new Uint8Array(128);
for (let code = 0; code < 128; code++) ASCII_TOKEN_CHAR[code] = /[A-Za-z0-9]/.test(String.fromCharCode(code)) ? 1 : 0;

/**
 * Which two-letter starts of an ASCII token may stem to a wanted stem. Porter's stemmer rewrites
 * only a word's ending: a stem keeps the word's first letter, and its second letter too but for
 * one rule, a `y` turned into `i` ("ays" -> "ai"); a stem of one letter comes from a word that
 * starts with it ("ies" -> "i"). A token whose start is not among these is counted without being
 * cut out or stemmed, nor is one shorter than every wanted stem (rank.test.ts checks both rules
 * against the stemmer over generated words).
 */
interface Starts {
  /** By first letter: any token starting with it may stem to a wanted stem of one letter. */
  firsts: Uint8Array;
  /** By first and second letter (`first << 7 | second`, both lower case ASCII). */
  pairs: Uint8Array;
  /**
   * The shortest wanted stem's length: Porter's stemmer never makes a word longer (each rule
   * replaces an ending by a shorter one or by one of the same length), so a shorter token cannot
   * stem to any of them ("the" is not counted for "think").
   */
  shortest: number;
}

function startsOf(stems: readonly string[]): Starts {
  const firsts = new Uint8Array(128);
  const pairs = new Uint8Array(128 * 128);
  const shortest = stems.reduce((least, wanted) => Math.min(least, wanted.length), Infinity);
  for (const wanted of stems) {
    const first = wanted.charCodeAt(0);
    if (first >= 128) continue;
    if (wanted.length === 1) {
      firsts[first] = 1;
      continue;
    }
    const second = wanted.charCodeAt(1);
    if (second >= 128) continue;
    pairs[(first << 7) | second] = 1;
    if (second === 105 /* i */) pairs[(first << 7) | 121 /* y */] = 1;
  }
  return { firsts, pairs, shortest };
}

/** An ASCII letter in lower case (upper-case letters fold by setting one bit), other codes as they are. */
function lower(code: number): number {
  return code >= 65 && code <= 90 ? code | 32 : code;
}

/**
 * Counts the tokens of `text` and, into `counts`, the occurrences of each wanted stem. ASCII text
 * (most of it) is walked a character at a time, without building its tokens; only a token whose
 * start may stem to a wanted stem (startsOf) is cut out, put in lower case and stemmed, and
 * stems are remembered. Text with a character beyond ASCII is folded and split as the index does
 * (countStemsFolded).
 */
function countStems(text: string, wanted: Map<string, number>, starts: Starts, initials: Set<number>, counts: Float64Array, at: number): number {
  const length = text.length;
  let tokens = 0;
  let end = 0;
  while (end < length) {
    let code = text.charCodeAt(end);
    if (code >= 128) return countStemsFolded(text, wanted, initials, counts, at);
    if (ASCII_TOKEN_CHAR[code] === 0) {
      end++;
      continue;
    }
    const start = end;
    do code = ++end < length ? text.charCodeAt(end) : 0;
    while (code < 128 && ASCII_TOKEN_CHAR[code] === 1);
    tokens++;
    // a token cut short by a character beyond ASCII is left to countStemsFolded, which starts over
    if (code >= 128) continue;
    if (end - start < starts.shortest) continue;
    const first = lower(text.charCodeAt(start));
    if (starts.firsts[first] === 0 && (end - start < 2 || starts.pairs[(first << 7) | lower(text.charCodeAt(start + 1))] === 0)) continue;
    const column = wanted.get(stem(text.slice(start, end).toLowerCase()));
    if (column !== undefined) counts[at + column]++;
  }
  return tokens;
}

/** countStems for text beyond ASCII: folded (lower case, no diacritics) and split by TOKEN. */
function countStemsFolded(text: string, wanted: Map<string, number>, initials: Set<number>, counts: Float64Array, at: number): number {
  // the ASCII scan may have counted tokens before it met this text's first non-ASCII character
  counts.fill(0, at, at + wanted.size);
  const tokens = fold(text).match(TOKEN) ?? [];
  for (const token of tokens) {
    if (!initials.has(token.charCodeAt(0))) continue;
    const column = wanted.get(stem(token));
    if (column !== undefined) counts[at + column]++;
  }
  return tokens.length;
}

/** The best `limit` of `candidates`, best first (a new array; the input is not changed). */
export function rankCandidates<T extends { content: string }>(terms: readonly (string | RankTerm)[], candidates: readonly T[], limit = candidates.length): T[] {
  const ranking = rankSteps(terms, candidates, limit);
  for (let step = ranking.next(); ; step = ranking.next()) if (step.done === true) return step.value;
}

/** How long ranking may run before it lets other work in (rankCandidatesInSlices). */
const SLICE_MS = 4;

/**
 * rankCandidates, a slice of at most a few milliseconds at a time: 1,000 candidates of 25,000
 * characters take some 100 to 300 ms to read, which must not hold the event loop. Between
 * slices it awaits `pause` (by default the loop's next check phase; a search's turn.pause()).
 */
export async function rankCandidatesInSlices<T extends { content: string }>(
  terms: readonly (string | RankTerm)[],
  candidates: readonly T[],
  limit = candidates.length,
  pause: () => Promise<unknown> = () => new Promise((resolve) => setImmediate(resolve)),
): Promise<T[]> {
  const ranking = rankSteps(terms, candidates, limit);
  let sliceStart = performance.now();
  for (let step = ranking.next(); ; step = ranking.next()) {
    if (step.done === true) return step.value;
    if (performance.now() - sliceStart >= SLICE_MS) {
      await pause();
      sliceStart = performance.now();
    }
  }
}

/** The ranking, yielding after each candidate it reads. */
function* rankSteps<T extends { content: string }>(terms: readonly (string | RankTerm)[], candidates: readonly T[], limit: number): Generator<void, T[]> {
  const ranked = toRankTerms(terms);
  if (candidates.length < 2 || ranked.length === 0) return candidates.slice(0, limit);
  const wanted = new Map(ranked.map((term, index) => [term.stem, index]));
  const starts = startsOf(ranked.map((term) => term.stem));
  const initials = new Set(ranked.map((term) => term.stem.charCodeAt(0)));
  const lengths = new Float64Array(candidates.length);
  const frequencies = new Float64Array(candidates.length * ranked.length);
  let totalLength = 0;
  for (let row = 0; row < candidates.length; row++) {
    lengths[row] = countStems(candidates[row].content, wanted, starts, initials, frequencies, row * ranked.length);
    totalLength += lengths[row];
    yield;
  }
  const averageLength = totalLength / candidates.length || 1;
  const scores = candidates.map((_, row) => {
    const norm = K1 * (1 - B + (B * lengths[row]) / averageLength);
    let score = 0;
    for (let column = 0; column < ranked.length; column++) {
      const tf = frequencies[row * ranked.length + column];
      score += (ranked[column].weight * (tf * (K1 + 1))) / (tf + norm);
    }
    return score;
  });
  return bestRows(scores, limit).map((row) => candidates[row]);
}

/**
 * The rows of the `limit` highest scores, highest first, the lower row first between equal
 * scores. For a small `limit` (a search's is at most 100) one pass keeps a sorted list of the
 * best so far, which beats sorting every row.
 */
function bestRows(scores: readonly number[], limit: number): number[] {
  if (limit > 100) return Array.from(scores.keys()).sort((a, b) => scores[b] - scores[a] || a - b).slice(0, limit);
  const best: number[] = [];
  for (let row = 0; row < scores.length; row++) {
    const score = scores[row];
    if (best.length === limit && score <= scores[best[limit - 1]]) continue;
    let at = best.length;
    while (at > 0 && scores[best[at - 1]] < score) at--;
    best.splice(at, 0, row);
    if (best.length > limit) best.pop();
  }
  return best;
}
