/*
 * The scoring pieces message search and conclusion search share: the limits of a ranking, BM25's
 * term weight, and the choice of the best candidates from each term's matches.
 */

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
 * BM25's inverse document frequency of a term found in `matches` of `total` messages.
 */
export function inverseDocumentFrequency(matches: number, total: number): number {
  const documents = Math.max(total, matches);
  return Math.log(1 + (documents - matches + 0.5) / (matches + 0.5));
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
