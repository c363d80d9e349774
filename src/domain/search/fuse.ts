/**
 * Reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009): each ranking gives an item
 * 1 / (k + rank), rank counted from 1; items are ordered by the sum, ties in the order they
 * were first met. k = 60 is the usual constant and the one the reference uses for hybrid
 * search. Merges the full-text ranking of search.ts with a vector-similarity one.
 */
export function reciprocalRankFusion(rankings: readonly (readonly string[])[], k = 60): string[] {
  const scores = new Map<string, number>();
  for (const ranking of rankings) {
    ranking.forEach((id, index) => scores.set(id, (scores.get(id) ?? 0) + 1 / (k + index + 1)));
  }
  return [...scores.entries()].sort(([, a], [, b]) => b - a).map(([id]) => id);
}
