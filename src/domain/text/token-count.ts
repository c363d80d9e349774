import { createRequire } from 'node:module';
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';

/*
 * Token counts under the o200k_base encoding (contract §7.4), at a cost that grows with the
 * length of the text and not faster, and without holding the event loop (docs/decisions/0023-token-counting.md).
 *
 * The encoder first splits text into pieces (a word with its leading space, up to three digits,
 * a run of punctuation or of white space), then merges each piece's bytes pair by pair; that
 * merge takes time quadratic in the piece's length in bytes, so one 200,000-letter word costs
 * tens of seconds. Pieces of more than LONG_PIECE bytes of UTF-8 are therefore counted in chunks
 * of at most LONG_PIECE bytes: the count of ordinary text (every piece shorter than that) is
 * exact, the count of a longer run is the sum of its chunks' counts. Bytes, not characters, so
 * that a chunk costs about as much in any script (1,024 CJK characters, 3 KB, took 15 ms; 341
 * of them 2.2 ms).
 */

/** Most bytes of UTF-8 in a piece counted whole; longer runs are counted at most LONG_PIECE bytes at a time. */
export const LONG_PIECE = 1024;

/** Text of at most this many characters has at most LONG_PIECE bytes (three per UTF-16 unit): no piece in it can be long. */
const SHORT_TEXT = Math.floor(LONG_PIECE / 3);

/** Text shorter than this is counted in one call: no piece in it can be long. */
const SEGMENT = 4096;

/** How long counting may run before it lets other work in (async counting only). */
const SLICE_MS = 4;

type Encoder = typeof import('gpt-tokenizer/encoding/o200k_base');

/**
 * The o200k_base encoder, loaded on the first count: its tables take some 59 MB of memory and
 * 130 ms to load, which a process that only reads (or a search whose query is short enough,
 * see exceedsTokens) never pays. Loaded with require so that synchronous counts can load it.
 */
let encoder: Encoder | undefined;

function loadEncoder(): Encoder {
  const loaded = createRequire(import.meta.url)('gpt-tokenizer/encoding/o200k_base') as Encoder;
  // The encoder keeps the pieces it merged, to reuse them; 10,000 of them keep ordinary text as
  // fast as the default 100,000 do, and bound what distinct long pieces can hold in memory.
  loaded.setMergeCacheSize(10_000);
  return loaded;
}

// special-token texts such as `<|endoftext|>` count as the ordinary text they are
const AS_TEXT = { disallowedSpecial: new Set<string>() };

function countTokens(text: string, options: typeof AS_TEXT): number {
  return (encoder ??= loadEncoder()).countTokens(text, options);
}

/** Whether the encoder is loaded (tests of the lazy load). */
export function encoderLoaded(): boolean {
  return encoder !== undefined;
}

/**
 * Whether `text` has at most `limit` tokens without counting them: every token encodes at least
 * one byte of UTF-8, and a UTF-16 unit at most three bytes, so a text has at most as many tokens
 * as bytes, and at most three times as many as its length.
 */
function fitsWithoutCounting(text: string, limit: number): boolean {
  return text.length * 3 <= limit || Buffer.byteLength(text, 'utf8') <= limit;
}

/** Whether a piece is counted in chunks (more than LONG_PIECE bytes of UTF-8). */
function isLong(piece: string): boolean {
  return piece.length > SHORT_TEXT && (piece.length > LONG_PIECE || Buffer.byteLength(piece, 'utf8') > LONG_PIECE);
}

/**
 * Counts `text` in steps, each bounded by SEGMENT characters or LONG_PIECE bytes: yields the
 * tokens of each step. Whole pieces are grouped into segments (the split of a run of whole
 * pieces is the same as within the whole text, so their count is exact); a long piece is cut
 * into chunks on code point boundaries.
 */
function* countSteps(text: string): Generator<number> {
  if (text.length <= SHORT_TEXT || (text.length <= LONG_PIECE && Buffer.byteLength(text, 'utf8') <= LONG_PIECE)) {
    yield text.length === 0 ? 0 : countTokens(text, AS_TEXT);
    return;
  }
  let start = 0;
  let end = 0;
  for (const match of text.matchAll(O200K_TOKEN_SPLIT_REGEX)) {
    const piece = match[0];
    const at = match.index;
    if (isLong(piece)) {
      if (end > start) yield countTokens(text.slice(start, end), AS_TEXT);
      yield* chunkSteps(piece);
      start = end = at + piece.length;
      continue;
    }
    end = at + piece.length;
    if (end - start >= SEGMENT) {
      yield countTokens(text.slice(start, end), AS_TEXT);
      start = end;
    }
  }
  if (end > start) yield countTokens(text.slice(start, end), AS_TEXT);
}

/**
 * The tokens of a long piece, in chunks of at most LONG_PIECE bytes of UTF-8 (as many code points
 * as fit; a surrogate pair is never cut, a lone surrogate counts as the three bytes it encodes to).
 */
function* chunkSteps(piece: string): Generator<number> {
  let start = 0;
  let bytes = 0;
  for (let at = 0; at < piece.length; ) {
    const unit = piece.charCodeAt(at);
    const isPair = unit >= 0xd800 && unit <= 0xdbff && at + 1 < piece.length && (piece.charCodeAt(at + 1) & 0xfc00) === 0xdc00;
    const width = unit < 0x80 ? 1 : unit < 0x800 ? 2 : isPair ? 4 : 3;
    if (bytes + width > LONG_PIECE) {
      yield countTokens(piece.slice(start, at), AS_TEXT);
      start = at;
      bytes = 0;
    }
    bytes += width;
    at += isPair ? 2 : 1;
  }
  if (start < piece.length) yield countTokens(piece.slice(start), AS_TEXT);
}

/**
 * Tokens of `text`, counted on the spot. Its cost is linear in the length (a few milliseconds per
 * 10,000 characters), so it suits text of bounded size; the count stops early once it exceeds
 * `limit` (the result is then some number above `limit`).
 */
export function tokenCount(text: string, limit = Number.POSITIVE_INFINITY): number {
  if (text.length > SEGMENT) {
    const ahead = countedAhead.get(text);
    if (ahead !== undefined) return ahead.tokens;
  }
  let total = 0;
  for (const tokens of countSteps(text)) {
    total += tokens;
    if (total > limit) break;
  }
  return total;
}

/**
 * Whether `text` has more than `limit` tokens, checked on the spot; the count stops once it is
 * over, so the cost is bounded by the limit (and the text's length), whatever the text.
 */
export function exceedsTokens(text: string, limit: number): boolean {
  if (fitsWithoutCounting(text, limit)) return false;
  return tokenCount(text, limit) > limit;
}

/**
 * Counts of long texts made ahead of a synchronous check (see countAhead), by text, with the
 * number of requests holding each; an entry lives while a request that counted it is in flight.
 */
const countedAhead = new Map<string, { tokens: number; holders: number }>();

/**
 * Counts the long ones among `texts` in slices (countTokensOf) so that a synchronous
 * tokenCount of the same text during the request, such as a validation rule whose message
 * needs the whole count, finds the count made instead of running the encoder on the spot.
 * Call the returned function when the request is done.
 */
export async function countAhead(texts: readonly string[]): Promise<() => void> {
  const held: string[] = [];
  const release = () => {
    for (const text of held) {
      const entry = countedAhead.get(text);
      if (entry !== undefined && --entry.holders === 0) countedAhead.delete(text);
    }
  };
  try {
    for (const text of texts) {
      if (text.length <= SEGMENT) continue;
      const entry = countedAhead.get(text);
      if (entry !== undefined) {
        entry.holders++;
      } else {
        const tokens = await countTokensOf(text);
        const raced = countedAhead.get(text);
        if (raced !== undefined) raced.holders++;
        else countedAhead.set(text, { tokens, holders: 1 });
      }
      held.push(text);
    }
  } catch (error) {
    release();
    throw error;
  }
  return release;
}

/** Counting runs one text at a time, so that however many requests count, the loop waits one slice. */
let queue: Promise<unknown> = Promise.resolve();

/**
 * Tokens of `text`, like tokenCount, but long text is counted a slice of at most a few
 * milliseconds at a time, one text at a time across the process, letting other work run in
 * between. Short text is counted at once.
 */
export function countTokensOf(text: string, limit = Number.POSITIVE_INFINITY): Promise<number> {
  if (text.length <= SEGMENT) return Promise.resolve(tokenCount(text, limit));
  const ahead = countedAhead.get(text);
  if (ahead !== undefined) return Promise.resolve(ahead.tokens);
  const turn = queue.then(() => countInSlices(text, limit));
  queue = turn.catch(() => undefined);
  return turn;
}

/** exceedsTokens, counting long text in slices (countTokensOf). */
export async function exceedsTokensOf(text: string, limit: number): Promise<boolean> {
  if (fitsWithoutCounting(text, limit)) return false;
  return (await countTokensOf(text, limit)) > limit;
}

/** Tokens of each text, in order (see countTokensOf). */
export async function countTokensOfEach(texts: readonly string[]): Promise<number[]> {
  const counts: number[] = [];
  for (const text of texts) counts.push(await countTokensOf(text));
  return counts;
}

async function countInSlices(text: string, limit: number): Promise<number> {
  let total = 0;
  let sliceStart = performance.now();
  for (const tokens of countSteps(text)) {
    total += tokens;
    if (total > limit) break;
    if (performance.now() - sliceStart >= SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
  return total;
}
