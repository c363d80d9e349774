import { describe, expect, it } from 'vitest';
import { splitText } from '../../../src/domain/messages/split-text.js';

describe('splitText', () => {
  it('keeps a text within the limit whole, the empty text included', () => {
    expect(splitText('', 10)).toEqual(['']);
    expect(splitText('exactly 10', 10)).toEqual(['exactly 10']);
  });

  it('prefers a paragraph break, then a line break, then a sentence end, then a space', () => {
    expect(splitText('aaa bb. c\nd\n\neeeeeeeeee', 14)).toEqual(['aaa bb. c\nd\n\n', 'eeeeeeeeee']);
    expect(splitText('aaa bb. c\ndddd eeeeeeee', 14)).toEqual(['aaa bb. c\n', 'dddd eeeeeeee']);
    expect(splitText('aaa bb. cccc ddddddd', 14)).toEqual(['aaa bb. ', 'cccc ddddddd']);
    expect(splitText('aaa bbbbbbbbbbbbbbb', 14)).toEqual(['aaa ', 'bbbbbbbbbbbbbbb'.slice(0, 14), 'b']);
  });

  it('cuts at the limit when the window has no break, and ignores a break at its very start', () => {
    expect(splitText('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
    expect(splitText(' abcdefgh', 4)).toEqual([' abc', 'defg', 'h']);
  });

  it('only looks inside the current window', () => {
    // the paragraph break lies in the first window, not the second
    expect(splitText('ab\n\ncdefghijk', 5)).toEqual(['ab\n\n', 'cdefg', 'hijk']);
  });

  it('counts code points, never cutting a surrogate pair', () => {
    const text = '😀'.repeat(5);
    const pieces = splitText(text, 2);
    expect(pieces).toEqual(['😀😀', '😀😀', '😀']);
    expect(pieces.join('')).toBe(text);
  });

  it('gives the text back when the pieces are joined', () => {
    const text = Array.from({ length: 400 }, (_, i) => `Sentence ${i}.${i % 7 === 0 ? '\n\n' : i % 3 === 0 ? '\n' : ' '}`).join('');
    const pieces = splitText(text, 250);
    expect(pieces.join('')).toBe(text);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(250);
  });
});
