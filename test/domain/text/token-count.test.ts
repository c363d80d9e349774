import { readFileSync } from 'node:fs';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { LONG_PIECE, countTokensOf, countTokensOfEach, exceedsTokens, tokenCount } from '../../../src/domain/text/token-count.js';

/** The encoder's own count, special-token texts counted as text. */
const exact = (text: string) => countTokens(text, { disallowedSpecial: new Set() });

const samples: [string, string][] = [
  ['english', 'The quick brown fox jumps over the lazy dog. It\'s 3:45 p.m., and we\'ve 1,234,567 reasons to stay.\n\n'],
  ['code', 'export function add(a: number, b: number): number {\n\treturn a + b; // sum\n}\nconst xs = [1, 2, 3].map((x) => x ** 2);\n'],
  ['unicode', 'Größe café naïve — 東京で会いましょう。我们明天见！Привет, мир! 안녕하세요 😀🎉👩‍👩‍👧 العربية हिन्दी\u00a0\u200b\t\r\n'],
  ['special-token text', 'before <|endoftext|> after <|im_start|>user'],
  ['white space', 'a  b   c\n\n\n  d\t\t e    \n'],
];

describe('tokenCount', () => {
  it('equals the encoder\'s exact count on ordinary text', () => {
    for (const [name, text] of samples) expect(tokenCount(text), name).toBe(exact(text));
    expect(tokenCount('')).toBe(0);
  });

  it('equals the exact count on long ordinary documents (counted in segments)', () => {
    const documents = ['README.md', 'docs/reasoning.md', 'bench/README.md', 'src/storage/sql/sql-store.ts', 'src/domain/search/rank.ts'].map((file) => readFileSync(file, 'utf8'));
    documents.push(samples.map(([, text]) => text).join('').repeat(200));
    for (const text of documents) {
      expect(text.length).toBeGreaterThan(4096);
      expect(tokenCount(text)).toBe(exact(text));
    }
  });

  it('is exact for a piece of LONG_PIECE characters and counts longer runs in chunks', () => {
    // the piece is the word with its leading space
    const piece = 'y'.repeat(LONG_PIECE - 1);
    expect(tokenCount(`say ${piece} now`)).toBe(exact(`say ${piece} now`));
    expect(tokenCount(`say ${piece}y now`)).toBe(exact('say') + exact(` ${piece}`) + exact('y') + exact(' now'));
    // 'yyyy' is one token, so chunks of a multiple of four characters lose nothing
    expect(tokenCount('y'.repeat(200_000))).toBe(50_000);
  });

  it('counts a long run quickly, whatever it is made of', () => {
    const runs = ['y'.repeat(200_000), ' '.repeat(200_000), '!'.repeat(200_000), '記'.repeat(50_000), '😀'.repeat(50_000)];
    let seed = 1;
    runs.push(Array.from({ length: 100_000 }, () => String.fromCharCode(97 + ((seed = (seed * 48271) % 2147483647) % 26))).join(''));
    for (const run of runs) {
      const started = performance.now();
      const tokens = tokenCount(run);
      // unchunked, each of these takes from 2 s to well over a minute
      expect(performance.now() - started, run.slice(0, 8)).toBeLessThan(1500);
      expect(tokens).toBeGreaterThan(0);
    }
  });

  it('cuts a long run into chunks of at most LONG_PIECE bytes of UTF-8, never inside a surrogate pair', () => {
    // U+1F600 is four bytes (two UTF-16 units): after the '!', 255 fit in the first chunk, then 256 a chunk
    const run = '!' + '😀'.repeat(LONG_PIECE);
    expect(tokenCount(run)).toBe(exact('!' + '😀'.repeat(255)) + 3 * exact('😀'.repeat(256)) + exact('😀'));
    // a CJK character is three bytes: 341 of them a chunk, so a chunk costs about as much as 1,024 letters
    // (a sentence without punctuation repeated: its tokens span characters, so where a chunk ends changes the count)
    const cjk = '我们的国家人民今天非常高兴地一起工作'.repeat(120).slice(0, 2_000);
    const chunks = [0, 341, 682, 1023, 1364, 1705].map((start) => exact(cjk.slice(start, start + 341)));
    expect(tokenCount(cjk)).toBe(chunks.reduce((sum, tokens) => sum + tokens, 0));
    // a piece of exactly LONG_PIECE bytes (341 x 3 + 1) is counted whole
    expect(tokenCount(cjk.slice(0, 341) + 'a')).toBe(exact(cjk.slice(0, 341) + 'a'));
  });

  it('stops once the limit is passed', () => {
    const text = 'y'.repeat(200_000);
    const counted = tokenCount(text, 8192);
    expect(counted).toBeGreaterThan(8192);
    expect(counted).toBeLessThan(50_000);
    expect(exceedsTokens(text, 8192)).toBe(true);
    expect(exceedsTokens('a few words', 3)).toBe(false);
    expect(exceedsTokens('a few words here', 3)).toBe(true);
  });
});

describe('countTokensOf', () => {
  it('gives the same counts as tokenCount, short and long text alike', async () => {
    const texts = [...samples.map(([, text]) => text), samples.map(([, text]) => text).join('').repeat(100), 'y'.repeat(30_000)];
    expect(await countTokensOfEach(texts)).toEqual(texts.map((text) => tokenCount(text)));
    expect(await countTokensOf('y'.repeat(200_000), 8192)).toBe(tokenCount('y'.repeat(200_000), 8192));
  });

  it('lets timers run while a long text is counted', async () => {
    let seed = 7;
    const text = Array.from({ length: 100_000 }, () => String.fromCharCode(97 + ((seed = (seed * 48271) % 2147483647) % 26))).join('');
    const gaps: number[] = [];
    let last = performance.now();
    const timer = setInterval(() => {
      gaps.push(performance.now() - last);
      last = performance.now();
    }, 1);
    await countTokensOf(text);
    clearInterval(timer);
    // some 100 ms of counting, never more than a slice at a time
    expect(gaps.length).toBeGreaterThan(5);
    expect(Math.max(...gaps)).toBeLessThan(30);
  });
});
