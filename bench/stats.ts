/**
 * What the bench scripts share to sum up their rounds, so that every figure they print follows
 * one rule.
 */

/**
 * The middle of `values` (NaN for none): for an even count the mean of the two middle values, so
 * that two rounds give their mean rather than the larger of them.
 */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const half = sorted.length >> 1;
  if (sorted.length === 0) return NaN;
  return sorted.length % 2 === 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
}

/**
 * Uniform random unit vectors of `dimensions`, the same ones for the same `seed` (a linear
 * congruential generator: reproducible runs, no dependency).
 */
export function seededUnitVectors(dimensions: number, seed: number): () => number[] {
  let state = seed >>> 0;
  return () => {
    const v = Array.from({ length: dimensions }, () => {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      return state / 2 ** 31 - 1;
    });
    const norm = Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
    return v.map((x) => x / norm);
  };
}
