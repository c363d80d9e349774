import { describe, expect, it } from 'vitest';
import { tokenCount } from '../../../src/domain/text/token-count.js';
import { chunkText } from '../../../src/domain/search/embeddings.js';

describe('chunkText', () => {
  it('keeps a text that fits whole', () => {
    expect(chunkText('a short text', 16)).toEqual(['a short text']);
  });

  it.each([
    ['words', Array.from({ length: 400 }, (_, i) => `word${i % 37}`).join(' ')],
    ['CJK', '我们今天去公园散步然后在湖边吃了午饭'.repeat(30)],
    ['emoji', '🙂🎉👩‍👩‍👧‍👦🚀'.repeat(60)],
  ])('cuts %s into chunks within the limit, each repeating the last fifth of the one before', (_name, text) => {
    const chunks = chunkText(text, 32);
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) expect(tokenCount(chunk)).toBeLessThanOrEqual(32);
    expect(text.startsWith(chunks[0])).toBe(true);
    expect(text.endsWith(chunks.at(-1)!)).toBe(true);
    // the chunks, each without the part it repeats, give the text back
    let rebuilt = chunks[0];
    for (let i = 0; i + 1 < chunks.length; i++) {
      const points = Array.from(chunks[i]);
      const tail = points.slice(points.length - Math.floor(points.length * 0.2)).join('');
      expect(tail.length).toBeGreaterThan(0);
      expect(chunks[i + 1].startsWith(tail)).toBe(true);
      rebuilt += chunks[i + 1].slice(tail.length);
    }
    expect(rebuilt).toBe(text);
    // no surrogate pair is cut
    for (const chunk of chunks) expect(chunk).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
  });
});
