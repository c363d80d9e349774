import { describe, expect, it } from 'vitest';
import { bestFound } from '../../../src/domain/search/scoring.js';

/** The plain reading of bestFound: every message's summed weight, sorted by (score, newest). */
function reference(matchesOf: number[][], weights: number[], count: number): { chosen: number[]; found: number } {
  const found = new Map<number, number>();
  matchesOf.forEach((seqs, term) => {
    for (const seq of seqs) found.set(seq, (found.get(seq) ?? 0) + weights[term]);
  });
  const chosen = [...found.entries()]
    .sort(([seqA, a], [seqB, b]) => b - a || seqB - seqA)
    .slice(0, count)
    .map(([seq]) => seq)
    .sort((a, b) => b - a);
  return { chosen, found: found.size };
}

describe('bestFound', () => {
  it('chooses as summing every message and sorting by score then newest would, on random matches', () => {
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const matches = (size: number, span: number) => {
      const seqs = new Set<number>();
      while (seqs.size < size) seqs.add(1 + Math.floor(random() * span));
      return [...seqs];
    };
    for (let round = 0; round < 200; round++) {
      const terms = 1 + Math.floor(random() * 5);
      // equal weights in a third of the rounds: different sets of terms then tie
      const weights = Array.from({ length: terms }, () => (round % 3 === 0 ? 1.5 : Math.round(random() * 40) / 8));
      const newestFirst = round % 4 !== 0;
      const matchesOf = Array.from({ length: terms }, () => {
        const span = 1 + Math.floor(random() * 200);
        const seqs = matches(Math.floor(random() * Math.min(60, span)), span);
        return newestFirst ? seqs.sort((a, b) => b - a) : seqs;
      });
      const count = 1 + Math.floor(random() * 80);
      expect(bestFound(matchesOf, weights, count), `round ${round}`).toEqual(reference(matchesOf, weights, count));
    }
  });

  it('puts messages found by more or heavier terms first, and the newest between equals', () => {
    // 9 found by both; 7 and 3 by the heavier term; 8 and 5 by the lighter one
    expect(bestFound([[9, 7, 3], [9, 8, 5]], [2, 1], 3)).toEqual({ chosen: [9, 7, 3], found: 5 });
    expect(bestFound([[9, 7, 3], [9, 8, 5]], [1, 1], 3)).toEqual({ chosen: [9, 8, 7], found: 5 });
    expect(bestFound([[], []], [1, 1], 3)).toEqual({ chosen: [], found: 0 });
  });

  it('takes the 32 terms a query may have, each its own bit, and no more', () => {
    // the last term alone finds 1 and weighs most: a 32nd bit taken for the sign still counts
    const matchesOf = Array.from({ length: 32 }, (_, term) => (term === 31 ? [1] : [2]));
    const weights = Array.from({ length: 32 }, (_, term) => (term === 31 ? 100 : 1));
    expect(bestFound(matchesOf, weights, 1)).toEqual({ chosen: [1], found: 2 });
    expect(() => bestFound(Array.from({ length: 33 }, () => [1]), Array(33).fill(1), 1)).toThrow(RangeError);
  });
});
