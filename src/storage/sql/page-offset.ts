/**
 * The row offset of a page. Page numbers have no upper bound in the contract, so a page far past
 * the end (`page=99999999999999999999999`) must still give an empty page: the offset is capped at
 * the largest integer both dialects bind exactly (beyond 2^53 a JS number is no longer an
 * integer, and SQLite refuses a REAL offset).
 */
export function pageOffset(page: number, size: number): number {
  return Math.min((page - 1) * size, Number.MAX_SAFE_INTEGER);
}
