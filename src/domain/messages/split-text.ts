/** Where a long text is preferably cut, best first: paragraph, line, sentence, word. */
const BREAKS = ['\n\n', '\n', '. ', ' '];

/** The index just past `count` characters (code points) from `from`, or the text's end. */
function indexAfter(text: string, from: number, count: number): number {
  let index = from;
  for (let n = 0; n < count && index < text.length; n++) {
    const unit = text.charCodeAt(index);
    const isPair = unit >= 0xd800 && unit <= 0xdbff && (text.charCodeAt(index + 1) & 0xfc00) === 0xdc00;
    index += isPair ? 2 : 1;
  }
  return index;
}

/**
 * Splits `text` into pieces of at most `maxChars` characters, one message each (contract §7.4).
 * Each piece ends just after the last paragraph break in its window, else the last line break,
 * else the last ". ", else the last space; a window with none of them is cut at the limit.
 * Characters are code points, as the reference counts them, so a surrogate pair is never cut.
 * Joining the pieces gives the text back; an empty text is one empty piece.
 */
export function splitText(text: string, maxChars: number): string[] {
  const pieces: string[] = [];
  let start = 0;
  for (;;) {
    const end = indexAfter(text, start, maxChars);
    if (end >= text.length) {
      pieces.push(text.slice(start));
      return pieces;
    }
    // the last break lying wholly inside the window; one at the very start does not count
    const window = text.slice(start, end);
    let cut = end;
    for (const mark of BREAKS) {
      const at = window.lastIndexOf(mark);
      if (at > 0) {
        cut = start + at + mark.length;
        break;
      }
    }
    pieces.push(text.slice(start, cut));
    start = cut;
  }
}
