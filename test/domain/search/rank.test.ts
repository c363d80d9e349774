import { describe, expect, it } from 'vitest';
import { fold, stem, TOKEN } from '../../../src/domain/search/query-terms.js';
import { queryTokens, rankCandidates, rankCandidatesInSlices } from '../../../src/domain/search/rank.js';

const docs = (...contents: string[]) => contents.map((content, index) => ({ id: `m${index}`, content }));
const order = (ranked: { id: string }[]) => ranked.map((doc) => doc.id);

describe('rankCandidates', () => {
  it('puts more occurrences of a word first', () => {
    const ranked = rankCandidates(['plan'], docs('a plan for today', 'plan plan plan it all', 'the plan and the other plan'));
    expect(order(ranked)).toEqual(['m1', 'm2', 'm0']);
  });

  it('prefers the shorter message at equal counts', () => {
    const ranked = rankCandidates(['tea'], docs('tea with milk and sugar and a slice of lemon on the side', 'green tea'));
    expect(order(ranked)).toEqual(['m1', 'm0']);
  });

  it('keeps the given order (newest first) between equal scores, and does not change its input', () => {
    const input = docs('one cat', 'two cat', 'red cat');
    expect(order(rankCandidates(['cat'], input))).toEqual(['m0', 'm1', 'm2']);
    expect(order(input)).toEqual(['m0', 'm1', 'm2']);
  });

  it('counts every word of the query', () => {
    const ranked = rankCandidates(['coffee', 'beans'], docs('coffee and beans, and more', 'beans, coffee and beans, and more'));
    expect(order(ranked)).toEqual(['m1', 'm0']);
  });

  it('folds case and diacritics as the full-text index does', () => {
    expect(queryTokens(['Café', 'NAÏVE', 'foo_bar'])).toEqual(['cafe', 'naive', 'foo', 'bar']);
    const ranked = rankCandidates(['cafe'], docs('a cafe', 'CAFÉ café Café'));
    expect(order(ranked)).toEqual(['m1', 'm0']);
  });

  it('counts words in any case, and in text that is not ASCII after an ASCII start', () => {
    const ranked = rankCandidates(['plan'], docs('plan one two three', 'PLAN Plan plan', 'plan plan — café'));
    expect(order(ranked)).toEqual(['m1', 'm2', 'm0']);
  });

  it('ranks as BM25 computed over the folded tokens of each whole text, on mixed random text', () => {
    // the reference: every text folded and split as the index does, every token stemmed
    const reference = (terms: string[], input: { id: string; content: string }[]) => {
      const stems = [...new Set(terms.flatMap((term) => (fold(term).match(TOKEN) ?? []).map(stem)))];
      const tokenLists = input.map((doc) => (fold(doc.content).match(TOKEN) ?? []).map(stem));
      const average = tokenLists.reduce((sum, tokens) => sum + tokens.length, 0) / input.length || 1;
      const scores = tokenLists.map((tokens) => {
        const norm = 1.2 * (1 - 0.75 + (0.75 * tokens.length) / average);
        let score = 0;
        for (const s of stems) {
          const tf = tokens.filter((token) => token === s).length;
          score += (1 * (tf * 2.2)) / (tf + norm);
        }
        return score;
      });
      return input.map((_, row) => row).sort((a, b) => scores[b] - scores[a] || a - b).map((row) => input[row].id);
    };
    let seed = 11;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    // with words whose stem's second letter is not theirs ("ays" -> "ai") or whose stem is one letter ("ies" -> "i")
    const vocabulary = ['Plan', 'plans', 'planning', 'garden', 'GARDENS', 'café', 'naïve', 'tea', 'x2', '42', 'the', 'Größe', 'run', 'running', 'AYS', 'ai', 'eyed', 'ies', 'I', 'days'];
    const separators = [' ', ', ', '. ', ' — ', '\n', '-', '_'];
    const text = () =>
      Array.from({ length: 1 + Math.floor(random() * 12) }, () => vocabulary[Math.floor(random() * vocabulary.length)] + separators[Math.floor(random() * separators.length)]).join('');
    for (let round = 0; round < 50; round++) {
      const input = docs(...Array.from({ length: 40 }, text));
      const terms = Array.from({ length: 1 + Math.floor(random() * 3) }, () => vocabulary[Math.floor(random() * vocabulary.length)]);
      expect(order(rankCandidates(terms, input)), `${terms.join(' ')}`).toEqual(reference(terms, input));
    }
  });

  it('stems only words that may reach a wanted stem: a stem keeps the first letter of its word, and the second but for y -> i, and is never longer', () => {
    // every word of up to four letters of this alphabet, alone and with endings the stemmer rewrites
    const letters = 'aeiouybcdglnstz0';
    const endings = ['', 's', 'es', 'ies', 'ed', 'ing', 'ational', 'ly', 'ness', 'izing', 'ement', 'yed', 'ys'];
    const broken: string[] = [];
    const walk = (prefix: string, depth: number) => {
      for (const ending of prefix === '' ? [] : endings) {
        const word = prefix + ending;
        const stemmed = stem(word);
        const kept = stemmed.length === 1 ? stemmed[0] === word[0] : stemmed[0] === word[0] && (stemmed[1] === word[1] || (stemmed[1] === 'i' && word[1] === 'y'));
        if (!kept) broken.push(`${word} -> ${stemmed}`);
        // nor is a stem ever longer than its word
        if (stemmed.length > word.length) broken.push(`${word} -> ${stemmed} (longer)`);
      }
      if (depth > 0) for (const letter of letters) walk(prefix + letter, depth - 1);
    };
    walk('', 4);
    expect(broken.slice(0, 10)).toEqual([]);
    // and the ranking counts such words
    // (equal scores keep the given order: a word left uncounted would leave m0 first)
    expect(order(rankCandidates(['ays'], docs('days and days', 'the AYS, ayed')))).toEqual(['m1', 'm0']);
    expect(order(rankCandidates(['ies'], docs('plain text', 'ies')))).toEqual(['m1', 'm0']);
  });

  it('returns only the best `limit`, in the same order as the full ranking', () => {
    const input = docs('cat', 'cat cat', 'a cat', 'cat cat cat', 'the cat', 'cat and dog', 'cat cat cat cat');
    const full = order(rankCandidates(['cat'], input));
    for (const limit of [0, 1, 2, 3, 6, 7, 10]) expect(order(rankCandidates(['cat'], input, limit))).toEqual(full.slice(0, limit));
  });

  it('ranks a query of many words the same way, at a cost linear in the text', () => {
    const words = Array.from({ length: 3000 }, (_, i) => `w${i.toString(36)}`);
    const base = words.join(' ');
    // the second holds every word and the first twelve once more: it ranks first, in any case
    const input = docs(base, `${base} ${words.slice(0, 12).join(' ').toUpperCase()}`, `${base} ${words[0]}`);
    expect(order(rankCandidates(words.slice(0, 12), input))).toEqual(['m1', 'm2', 'm0']);
    const many = Array.from({ length: 300 }, (_, i) => ({ id: `m${i}`, content: i === 7 ? `${base} ${base}` : base }));
    const started = performance.now();
    // comparing every text word with every query word took some 12 s here
    expect(order(rankCandidates(words, many, 1))).toEqual(['m7']);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('ranks long candidates in slices, with the same result, letting other work run in between', async () => {
    const filler = 'word '.repeat(5_000);
    const long = Array.from({ length: 600 }, (_, i) => ({ id: `m${i}`, content: i % 7 === 0 ? `${filler} plan ${'plan '.repeat(i % 5)}` : filler }));
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    const sliced = await rankCandidatesInSlices(['plan', 'word'], long, 10);
    clearInterval(timer);
    expect(order(sliced)).toEqual(order(rankCandidates(['plan', 'word'], long, 10)));
    // the first (newest) of those with the most extra 'plan's: 14 % 7 === 0 and 14 % 5 === 4
    expect(order(sliced)[0]).toBe('m14');
    expect(ticks).toBeGreaterThan(0);
  });
});
