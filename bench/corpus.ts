/**
 * Text for the message cases: short chat-like sentences drawn from a vocabulary of a few
 * thousand words with a Zipf-like distribution (word of rank r has weight 1 / r^s), so search
 * terms range from very common to rare as in real text. Deterministic: one seed, one corpus.
 *
 * The vocabulary's head is a hand-written list of common English words (so sentences read
 * roughly like English and the most frequent terms are the usual function words); its long
 * tail is the whole words of the o200k_base token list, which ships with gpt-tokenizer
 * (frequent strings in real text: words, and some word stems and non-English words).
 */
import { countTokens, decode } from 'gpt-tokenizer/encoding/o200k_base';

// prettier-ignore
const HEAD = `
the i to and you a it is of that in for my we this be on have with do not me so can just but what was are
your if at about will like know get all they one there how think would out up no yes from or now time want
good he she go need see some more make really then when as an by going could right here today work also back
did should been well because new maybe thanks day people much still any tomorrow first our them which
something next week again call help take very meeting last sure only way look let sounds great where why
over thing try after before other even many most send free done said tell got made find give use lot
little long never always every morning evening night tonight weekend monday friday later soon early late
home office team project plan email message report idea problem question answer doctor school class
family friend kids mom dad dinner lunch breakfast coffee tea book movie music song game trip flight hotel
city car train bus weather rain sun cold warm hot house room kitchen garden rent money price order store
client customer budget deadline code server database bug release feature test design data model file
document slides notes list update change issue fix version user account password login phone number
address birthday party gift present health sleep run walk gym exercise dog cat food recipe chicken pasta
salad pizza cake water coffee shop market bank card payment invoice contract schedule calendar agenda
review feedback draft final start finish stop wait hold move open close read write watch play listen learn
teach remember forget understand explain agree decide choose buy sell pay spend save share post check
confirm cancel book reserve arrive leave stay visit meet join invite bring pick drop ready busy happy
sorry tired sick fine nice bad best better worse big small high low old young easy hard quick slow
important different same whole half full empty quiet loud clear simple
`;

/** Vocabulary: the head above, then whole-word tokens of o200k_base in token order, deduplicated. */
export function buildVocabulary(size: number): string[] {
  const seen = new Set<string>();
  const words: string[] = [];
  const add = (word: string) => {
    if (words.length < size && !seen.has(word)) {
      seen.add(word);
      words.push(word);
    }
  };
  for (const word of HEAD.split(/\s+/)) if (word !== '') add(word);
  // token ids up to 200,000; " word" tokens of 4 to 12 lowercase letters
  for (let id = 0; id < 200_000 && words.length < size; id++) {
    const text = decode([id]);
    if (/^ [a-z]{4,12}$/.test(text)) add(text.slice(1));
  }
  return words;
}

/** mulberry32: a small fast PRNG, so the corpus is the same on every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * Generates message texts: 1 or 2 sentences of 4 to 16 words (mean about 12 words, 65
 * characters per message), capitalised, with an occasional comma and a full stop or question
 * mark. `lastWords` holds the vocabulary ranks used by the last message, deduplicated, so the
 * loader can count each word's document frequency without re-tokenising.
 */
export class Corpus {
  readonly words: string[];
  private readonly cumulative: Float64Array;
  private readonly random: () => number;
  private readonly tokenMemo = new Map<string, number>();
  private readonly used: Int32Array;
  private usedCount = 0;
  private stamp = 0;
  private readonly stamps: Int32Array;

  constructor(vocabularySize: number, seed: number, zipfExponent = 1.0) {
    this.words = buildVocabulary(vocabularySize);
    this.cumulative = new Float64Array(this.words.length);
    let sum = 0;
    for (let rank = 0; rank < this.words.length; rank++) {
      sum += 1 / (rank + 1) ** zipfExponent;
      this.cumulative[rank] = sum;
    }
    for (let rank = 0; rank < this.words.length; rank++) this.cumulative[rank] /= sum;
    this.random = seededRandom(seed);
    this.used = new Int32Array(64);
    this.stamps = new Int32Array(this.words.length);
  }

  /** A vocabulary rank drawn from the Zipf distribution (binary search on the cumulative weights). */
  private rank(): number {
    const u = this.random();
    let lo = 0;
    let hi = this.cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cumulative[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private sentence(parts: string[]): void {
    const length = 4 + Math.floor(this.random() * 13);
    for (let i = 0; i < length; i++) {
      const rank = this.rank();
      if (this.stamps[rank] !== this.stamp && this.usedCount < this.used.length) {
        this.stamps[rank] = this.stamp;
        this.used[this.usedCount++] = rank;
      }
      let word = this.words[rank];
      if (i === 0) word = word[0].toUpperCase() + word.slice(1);
      if (i === length - 1) word += this.random() < 0.2 ? '?' : '.';
      else if (i > 1 && this.random() < 0.06) word += ',';
      parts.push(word);
    }
  }

  /** The next message text. */
  message(): string {
    this.stamp++;
    this.usedCount = 0;
    const parts: string[] = [];
    this.sentence(parts);
    if (this.random() < 0.35) this.sentence(parts);
    return parts.join(' ');
  }

  /** Vocabulary ranks in the last message, each once. */
  lastWords(): Int32Array {
    return this.used.subarray(0, this.usedCount);
  }

  /**
   * o200k_base token count of a text this corpus generated, memoised per space-separated
   * piece. Exact, not an approximation: the tokenizer's pre-tokenisation splits before each
   * space-led word and never merges across those points, so a message's count is the sum of
   * its pieces' counts (`checkTokenCounts` verifies this against the real tokenizer).
   */
  tokenCount(text: string): number {
    let total = 0;
    let start = 0;
    while (start < text.length) {
      const space = text.indexOf(' ', start + 1);
      const piece = text.slice(start, space === -1 ? text.length : space);
      let n = this.tokenMemo.get(piece);
      if (n === undefined) {
        n = countTokens(piece);
        this.tokenMemo.set(piece, n);
      }
      total += n;
      start = space === -1 ? text.length : space;
    }
    return total;
  }
}

/** Counts how many of `texts` get the same token count from the memo as from the tokenizer. */
export function checkTokenCounts(corpus: Corpus, texts: string[], exact: (text: string) => number): number {
  let same = 0;
  for (const text of texts) if (corpus.tokenCount(text) === exact(text)) same++;
  return same;
}
