/**
 * Relevance ranking of full-text candidates, the same on every database.
 *
 * The store returns the newest messages that contain every query word (a bounded set, so a
 * search costs the same on a million messages as on a thousand); this module orders them by
 * BM25's term-frequency saturation and length normalisation. Every candidate holds every
 * word, so a corpus-wide inverse document frequency would only reweigh words against each
 * other; it is left out, and reading it is what makes database-side ranking cost grow with
 * the number of matches. Equal scores keep the store's order: newer first.
 *
 * A vector-similarity ranking can later produce its own ordered candidates and be fused with
 * this one before the messages are read.
 */

/** BM25's usual constants: term-frequency saturation and length normalisation. */
const K1 = 1.2;
const B = 0.75;

/** Characters that make up a token, as in SQLite's unicode61 tokenizer (letters, digits, private use). */
const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu;
const ASCII = /^[\x00-\x7f]*$/;

/** Text as the full-text index sees it: lower case, diacritics removed. */
function fold(text: string): string {
  if (ASCII.test(text)) return text.toLowerCase();
  return text.normalize('NFD').replace(/\p{M}+/gu, '').toLowerCase();
}

/** The distinct tokens of the query words. */
export function queryTokens(terms: readonly string[]): string[] {
  const tokens = new Set<string>();
  for (const term of terms) for (const token of fold(term).match(TOKEN) ?? []) tokens.add(token);
  return [...tokens];
}

/** Counts the tokens of `text` and, into `counts`, the occurrences of each of `tokens`. */
function countAny(text: string, wanted: Map<string, number>, counts: Float64Array): number {
  let length = 0;
  for (const token of text.match(TOKEN) ?? []) {
    length++;
    const column = wanted.get(token);
    if (column !== undefined) counts[column]++;
  }
  return length;
}

/** Above this many query tokens, each text token is looked up in a map instead of compared with each. */
const FEW_TOKENS = 8;

/**
 * countAny for ASCII text, without folding it or building a string per token (the common
 * case, several times faster); -1, with `counts` partly filled, when the text is not ASCII.
 * Comparing each text token with each query token suits a few query tokens; with more, the
 * cost would grow as their product, so a map lookup takes over.
 */
function countAscii(text: string, tokens: readonly string[], wanted: Map<string, number>, counts: Float64Array): number {
  const isFew = tokens.length <= FEW_TOKENS;
  let length = 0;
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    let code = i < text.length ? text.charCodeAt(i) : 0;
    if (code > 127) return -1;
    if (code >= 65 && code <= 90) code += 32;
    const inToken = (code >= 97 && code <= 122) || (code >= 48 && code <= 57);
    if (inToken) {
      if (start < 0) start = i;
      continue;
    }
    if (start < 0) continue;
    length++;
    if (isFew) {
      for (let t = 0; t < tokens.length; t++) {
        if (tokens[t].length === i - start && sameAsciiLetters(text, start, tokens[t])) counts[t]++;
      }
    } else {
      const column = wanted.get(text.slice(start, i).toLowerCase());
      if (column !== undefined) counts[column]++;
    }
    start = -1;
  }
  return length;
}

/** Whether `text` at `start` holds `token` (lower-case ASCII), ignoring ASCII case. */
function sameAsciiLetters(text: string, start: number, token: string): boolean {
  for (let k = 0; k < token.length; k++) {
    let code = text.charCodeAt(start + k);
    if (code >= 65 && code <= 90) code += 32;
    if (code !== token.charCodeAt(k)) return false;
  }
  return true;
}

/** The best `limit` of `candidates`, best first (a new array; the input is not changed). */
export function rankCandidates<T extends { content: string }>(terms: readonly string[], candidates: readonly T[], limit = candidates.length): T[] {
  const ranking = rankSteps(terms, candidates, limit);
  for (let step = ranking.next(); ; step = ranking.next()) if (step.done === true) return step.value;
}

/** How long ranking may run before it lets other work in (rankCandidatesInSlices). */
const SLICE_MS = 4;

/**
 * rankCandidates, a slice of at most a few milliseconds at a time: 1,000 candidates of 25,000
 * characters take some 100 to 300 ms to read, which must not hold the event loop.
 */
export async function rankCandidatesInSlices<T extends { content: string }>(terms: readonly string[], candidates: readonly T[], limit = candidates.length): Promise<T[]> {
  const ranking = rankSteps(terms, candidates, limit);
  let sliceStart = performance.now();
  for (let step = ranking.next(); ; step = ranking.next()) {
    if (step.done === true) return step.value;
    if (performance.now() - sliceStart >= SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
}

/** The ranking, yielding after each candidate it reads. */
function* rankSteps<T extends { content: string }>(terms: readonly string[], candidates: readonly T[], limit: number): Generator<void, T[]> {
  const tokens = queryTokens(terms);
  if (candidates.length < 2 || tokens.length === 0) return candidates.slice(0, limit);
  const wanted = new Map(tokens.map((token, index) => [token, index]));
  const lengths = new Float64Array(candidates.length);
  const frequencies = new Float64Array(candidates.length * tokens.length);
  let totalLength = 0;
  for (let row = 0; row < candidates.length; row++) {
    const text = candidates[row].content;
    const counts = frequencies.subarray(row * tokens.length, (row + 1) * tokens.length);
    let length = countAscii(text, tokens, wanted, counts);
    if (length < 0) {
      counts.fill(0);
      length = countAny(fold(text), wanted, counts);
    }
    lengths[row] = length;
    totalLength += length;
    yield;
  }
  const averageLength = totalLength / candidates.length || 1;
  const scores = candidates.map((_, row) => {
    const norm = K1 * (1 - B + (B * lengths[row]) / averageLength);
    let score = 0;
    for (let column = 0; column < tokens.length; column++) {
      const tf = frequencies[row * tokens.length + column];
      score += (tf * (K1 + 1)) / (tf + norm);
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
