/**
 * The stems of stored messages' texts, kept by message id, so that ranking a message again
 * (the newest matches of a word are the candidates of many searches) counts numbers instead of
 * splitting and stemming its text again. A message's text never changes and its id is never
 * reused, so an entry stays right for as long as it is kept; nothing here depends on what
 * another process does.
 *
 * Each text is kept as the stem numbers of its tokens, in a dictionary of stems shared by all
 * texts. The texts are dropped oldest first once they hold MAX_TOKENS tokens; the dictionary
 * is emptied, with the texts, once it holds MAX_STEMS stems (only between two rankings).
 */
import { fold, stem, TOKEN } from './query-terms.js';

const MAX_TOKENS = 500_000;
const MAX_STEMS = 200_000;
/** Longer texts are not kept: they would push out hundreds of ordinary ones. */
const MAX_TEXT_TOKENS = 2_000;

const ASCII_TOKEN_OR_OTHER = /[A-Za-z0-9]+|[^\x00-\x7f]/g;

export class MessageStems {
  private readonly numbers = new Map<string, number>();
  private readonly texts = new Map<string, Int32Array>();
  private tokens = 0;

  constructor(
    private readonly maxTokens = MAX_TOKENS,
    private readonly maxStems = MAX_STEMS,
  ) {}

  /** Call before a ranking: empties everything if the dictionary has grown too large. */
  startRanking(): void {
    if (this.numbers.size < this.maxStems) return;
    this.numbers.clear();
    this.texts.clear();
    this.tokens = 0;
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
    const known = this.texts.get(id);
    if (known !== undefined) return known;
    const stems = this.split(text);
    if (stems.length <= MAX_TEXT_TOKENS) {
      this.texts.set(id, stems);
      this.tokens += stems.length;
      for (const [oldest, dropped] of this.texts) {
        if (this.tokens <= this.maxTokens) break;
        this.texts.delete(oldest);
        this.tokens -= dropped.length;
      }
    }
    return stems;
  }

  /** Kept texts (for tests). */
  get size(): number {
    return this.texts.size;
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
