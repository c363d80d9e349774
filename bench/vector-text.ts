/**
 * What a vector's text for pgvector costs (storage/vector-index.ts, vectorText), beside the
 * shortest text of each value as a double that it replaced: `npx tsx bench/vector-text.ts`.
 * For 64 and 1,536 dimensions (the soak's fake model and a common embedding size), 200 vectors
 * of doubles as a model's JSON gives them, medians of 5 rounds, the two alternating in each
 * round; prints µs a vector, the text's length and the ratio.
 */
import { vectorText } from '../src/storage/vector-index.js';

const ROUNDS = 5;
const shortestDoubles = (vector: ArrayLike<number>) => `[${Array.from(vector, (x) => Math.fround(x)).join(',')}]`;

function microsPerVector(format: (vector: number[]) => string, vectors: number[][]): number {
  const started = performance.now();
  for (let pass = 0; pass < 5; pass++) for (const vector of vectors) format(vector);
  return ((performance.now() - started) * 1000) / (5 * vectors.length);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

for (const dimensions of [64, 1536]) {
  const vectors = Array.from({ length: 200 }, () => Array.from({ length: dimensions }, () => Math.random() * 0.2 - 0.1));
  // the first runs of each, before timing
  for (const vector of vectors) {
    shortestDoubles(vector);
    vectorText(vector);
  }
  const before: number[] = [];
  const after: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    before.push(microsPerVector(shortestDoubles, vectors));
    after.push(microsPerVector(vectorText, vectors));
  }
  const length = (format: (vector: number[]) => string) => vectors.reduce((sum, vector) => sum + format(vector).length, 0) / vectors.length;
  console.log(
    `${String(dimensions).padStart(5)} dimensions: shortest doubles ${median(before).toFixed(1)} µs (${length(shortestDoubles).toFixed(0)} characters), ` +
      `float32 in 9 digits ${median(after).toFixed(1)} µs (${length(vectorText).toFixed(0)} characters): ${(median(before) / median(after)).toFixed(2)} times as fast`,
  );
}
