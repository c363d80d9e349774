/**
 * The stems of stored messages' texts, kept by message id, so that ranking a message again
 * (the newest matches of a word are the candidates of many searches) counts numbers instead of
 * splitting and stemming its text again. A message's text never changes and its id is never
 * reused, so an entry stays right for as long as it is kept; nothing here depends on what
 * another process does.
 *
 * Each text is kept as the stem numbers of its tokens, in a dictionary of stems shared by all
 * texts. Texts are kept in two generations of at most half of MAX_TOKENS tokens each: once the
 * newer is full it becomes the older and the older is dropped, and a text found in the older is
 * moved to the newer. (Dropping the oldest entries of one Map one by one was tried: after many
 * deletions, finding the oldest live entry walks the deleted ones first, and an insert came to
 * cost 50 µs.) The dictionary is emptied, with the texts, once it holds MAX_STEMS stems (only
 * between two rankings).
 */
import { fold, stem, TOKEN } from './query-terms.js';

const MAX_TOKENS = 500_000;
const MAX_STEMS = 200_000;
/** Longer texts are not kept: they would push out hundreds of ordinary ones. */
const MAX_TEXT_TOKENS = 2_000;

const ASCII_TOKEN_OR_OTHER = /[A-Za-z0-9]+|[^\x00-\x7f]/g;

export class MessageStems {
  private readonly numbers = new Map<string, number>();
  private newer = new Map<string, Int32Array>();
  private older = new Map<string, Int32Array>();
  private newerTokens = 0;
  private olderTokens = 0;

  constructor(
    private readonly maxTokens = MAX_TOKENS,
    private readonly maxStems = MAX_STEMS,
  ) {}

  /** Call before a ranking: empties everything if the dictionary has grown too large. */
  startRanking(): void {
    if (this.numbers.size < this.maxStems) return;
    this.numbers.clear();
    this.newer = new Map();
    this.older = new Map();
    this.newerTokens = this.olderTokens = 0;
  }

  /** The number of a stem, given one if it has none yet. */
  numberOf(stemText: string): number {
    let number = this.numbers.get(stemText);
    if (number === undefined) {
      number = this.numbers.size;
      this.numbers.set(stemText, number);
    }
    return number;
  }

  /** The stem numbers of the message's tokens, in order: from the cache, or from its text. */
  of(id: string, text: string): Int32Array {
    const known = this.newer.get(id);
    if (known !== undefined) return known;
    let stems = this.older.get(id);
    if (stems !== undefined) {
      this.older.delete(id);
      this.olderTokens -= stems.length;
    } else {
      stems = this.split(text);
      if (stems.length > MAX_TEXT_TOKENS) return stems;
    }
    if (this.newerTokens + stems.length > this.maxTokens / 2) {
      this.older = this.newer;
      this.olderTokens = this.newerTokens;
      this.newer = new Map();
      this.newerTokens = 0;
    }
    this.newer.set(id, stems);
    this.newerTokens += stems.length;
    return stems;
  }

  /** Kept texts and their tokens (for tests). */
  get size(): { texts: number; tokens: number } {
    return { texts: this.newer.size + this.older.size, tokens: this.newerTokens + this.olderTokens };
  }

  /** The text's tokens, folded as the index folds them and stemmed, as stem numbers. */
  private split(text: string): Int32Array {
    let tokens = text.match(ASCII_TOKEN_OR_OTHER) ?? [];
    const ascii = tokens.every((token) => token.charCodeAt(0) < 128);
    if (!ascii) tokens = fold(text).match(TOKEN) ?? [];
    const stems = new Int32Array(tokens.length);
    for (let i = 0; i < tokens.length; i++) stems[i] = this.numberOf(stem(ascii ? tokens[i].toLowerCase() : tokens[i]));
    return stems;
  }
}
