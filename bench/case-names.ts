/** The name BENCH_ONLY matches for bench/vectors.ts, which `npm run bench` runs after bench/run.ts. */
export const VECTOR_CASE = 'vector search';
