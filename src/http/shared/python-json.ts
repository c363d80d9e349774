/**
 * JSON parsing that fails the way the reference server does.
 *
 * The reference (FastAPI) answers a malformed body with a 422 `json_invalid` item whose location
 * and message come straight from CPython's `json.loads` (`JSONDecodeError.pos` / `.msg`), so a
 * client can see which character broke. `JSON.parse` error texts and offsets differ between V8
 * versions and never match Python's, hence the small scanner below. It mirrors the C scanner of
 * CPython 3.11/3.12 (`Modules/_json.c` plus `json.decoder.JSONDecoder.decode`): same order of
 * checks, same positions. Python 3.13 reworded the trailing-comma errors; the reference runs an
 * older interpreter, so the older wording is kept.
 */

export type JsonParseResult = { ok: true; value: unknown } | { ok: false; pos: number; msg: string; isTooDeep?: boolean };

/**
 * Deepest nesting of arrays and objects a request body may have. Everything that walks a value
 * (validation, the 422 body that echoes the input, JSON.stringify into the store, SQLite's JSON
 * functions, which stop at 1,000) stays far from its stack or depth limit below this; the v2
 * filter limit of 64 logical levels (two JSON levels each) still fits.
 */
export const MAX_JSON_DEPTH = 256;

/**
 * Parses `text` with Python's acceptance rules. `pos` in a failure is a code-point offset, as
 * Python counts characters, not a UTF-16 index.
 *
 * A single leading U+FEFF is dropped first: the reference hands the raw body bytes to
 * `json.loads`, which decodes a BOM-prefixed body as `utf-8-sig`, so the BOM is neither an
 * error nor counted in positions.
 */
export function parseJsonLikePython(text: string, maxDepth = MAX_JSON_DEPTH): JsonParseResult {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let result: JsonParseResult;
  try {
    result = { ok: true, value: JSON.parse(body) };
  } catch {
    // JSON.parse and Python disagree only on NaN/Infinity/-Infinity (Python accepts them), so
    // the scanner may still succeed; otherwise it finds the error Python would report.
    result = scan(body);
  }
  if (!result.ok) return result;
  const tooDeepAt = nestingBeyond(body, maxDepth);
  if (tooDeepAt < 0) return result;
  return { ok: false, pos: codePointOffset(body, tooDeepAt), msg: `Nesting exceeds maximum depth of ${maxDepth}`, isTooDeep: true };
}

/**
 * Index of the first `[` or `{` that opens level `maxDepth + 1` in valid JSON text, or -1.
 * Strings are skipped with indexOf, so long texts cost little.
 */
function nestingBeyond(text: string, maxDepth: number): number {
  if (text.length <= maxDepth) return -1;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > maxDepth) return i;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--;
    } else if (c === QUOTE) {
      // the closing quote is the next one preceded by an even number of backslashes
      for (;;) {
        i = text.indexOf('"', i + 1);
        if (i < 0) return -1;
        let backslashes = 0;
        while (text.charCodeAt(i - 1 - backslashes) === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
      }
    }
  }
  return -1;
}

class ScanError {
  constructor(
    readonly index: number,
    readonly msg: string,
  ) {}
}

function fail(index: number, msg: string): never {
  throw new ScanError(index, msg);
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;

const SIMPLE_ESCAPES: Record<string, string> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

// Python's scanner tries these by their first character before falling back to a number, so
// `-Infinity` must be checked before the number rule sees the minus sign.
const CONSTANTS: ReadonlyArray<readonly [string, unknown]> = [
  ['null', null],
  ['true', true],
  ['false', false],
  ['NaN', Number.NaN],
  ['Infinity', Number.POSITIVE_INFINITY],
  ['-Infinity', Number.NEGATIVE_INFINITY],
];

type Frame = { array: unknown[] } | { object: Record<string, unknown>; key: string };

// The container stack is explicit so that a deeply nested body cannot overflow the JS stack.
function scan(text: string): JsonParseResult {
  try {
    return { ok: true, value: new Scanner(text).run() };
  } catch (err) {
    if (err instanceof ScanError) {
      return { ok: false, pos: codePointOffset(text, err.index), msg: err.msg };
    }
    throw err;
  }
}

class Scanner {
  private readonly len: number;

  constructor(private readonly text: string) {
    this.len = text.length;
  }

  run(): unknown {
    const { text, len } = this;
    const stack: Frame[] = [];
    let i = this.skipWhitespace(0);

    for (;;) {
      // A value starts exactly at i; callers have already skipped whatever whitespace Python skips.
      let value: unknown;
      if (i >= len) fail(i, 'Expecting value');
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        [value, i] = this.scanString(i + 1);
      } else if (c === OPEN_BRACE) {
        i = this.skipWhitespace(i + 1);
        if (i < len && text.charCodeAt(i) === CLOSE_BRACE) {
          value = {};
          i++;
        } else {
          const frame = { object: {} as Record<string, unknown>, key: '' };
          i = this.scanKey(frame, i);
          stack.push(frame);
          continue;
        }
      } else if (c === OPEN_BRACKET) {
        i = this.skipWhitespace(i + 1);
        if (i < len && text.charCodeAt(i) === CLOSE_BRACKET) {
          value = [];
          i++;
        } else {
          stack.push({ array: [] });
          continue;
        }
      } else {
        [value, i] = this.scanScalar(i);
      }

      // Attach the finished value to its container, closing as many containers as end here.
      for (;;) {
        const top = stack[stack.length - 1];
        if (top === undefined) {
          i = this.skipWhitespace(i);
          if (i !== len) fail(i, 'Extra data');
          return value;
        }
        const close = 'array' in top ? CLOSE_BRACKET : CLOSE_BRACE;
        if ('array' in top) {
          top.array.push(value);
        } else {
          setOwn(top.object, top.key, value);
        }
        i = this.skipWhitespace(i);
        if (i < len && text.charCodeAt(i) === close) {
          value = 'array' in top ? top.array : top.object;
          stack.pop();
          i++;
          continue;
        }
        if (i >= len || text.charCodeAt(i) !== COMMA) fail(i, "Expecting ',' delimiter");
        i = this.skipWhitespace(i + 1);
        // Python 3.11/3.12 have no trailing-comma check: `{"a":1,}` fails on the missing key
        // name and `[1,]` on the missing value, which is what happens here naturally.
        if (!('array' in top)) i = this.scanKey(top, i);
        break;
      }
    }
  }

  /** Reads `"key"` and the colon; returns where the member's value starts. */
  private scanKey(frame: { key: string }, start: number): number {
    const { text, len } = this;
    if (start >= len || text.charCodeAt(start) !== QUOTE) {
      fail(start, 'Expecting property name enclosed in double quotes');
    }
    let i: number;
    [frame.key, i] = this.scanString(start + 1);
    i = this.skipWhitespace(i);
    if (i >= len || text.charCodeAt(i) !== COLON) fail(i, "Expecting ':' delimiter");
    return this.skipWhitespace(i + 1);
  }

  /** `start` is just past the opening quote; returns the string and the index past the closing one. */
  private scanString(start: number): [string, number] {
    const { text, len } = this;
    const begin = start - 1;
    let out = '';
    let i = start;
    for (;;) {
      const chunkStart = i;
      let c = 0;
      for (; i < len; i++) {
        c = text.charCodeAt(i);
        if (c === QUOTE || c === BACKSLASH) break;
        // json.loads runs with strict=True: raw control characters are refused inside strings.
        if (c <= 0x1f) fail(i, 'Invalid control character at');
      }
      if (i >= len) fail(begin, 'Unterminated string starting at');
      out += text.slice(chunkStart, i);
      if (c === QUOTE) return [out, i + 1];

      i++;
      if (i >= len) fail(begin, 'Unterminated string starting at');
      const esc = text[i];
      if (esc !== 'u') {
        const decoded = SIMPLE_ESCAPES[esc];
        if (decoded === undefined) fail(i - 1, 'Invalid \\escape');
        out += decoded;
        i++;
        continue;
      }

      // CPython reports \u errors at the `u`, and insists on at least one character after the
      // four hex digits (`"\u0041` with no closing quote is an escape error, not "unterminated").
      const uIndex = i;
      const end = i + 5;
      if (end >= len) fail(uIndex, 'Invalid \\uXXXX escape');
      let unit = 0;
      for (let j = i + 1; j < end; j++) {
        const digit = hexValue(text.charCodeAt(j));
        if (digit < 0) fail(uIndex, 'Invalid \\uXXXX escape');
        unit = unit * 16 + digit;
      }
      // CPython joins a \uD8xx\uDCxx pair into one code point; appending both UTF-16 units gives
      // the same JS string, and a failing second escape is reported at its own `u` either way,
      // so each escape can be decoded on its own.
      out += String.fromCharCode(unit);
      i = end;
    }
  }

  private scanScalar(start: number): [unknown, number] {
    const { text } = this;
    for (const [word, value] of CONSTANTS) {
      if (text.startsWith(word, start)) return [value, start + word.length];
    }
    const end = this.matchNumber(start);
    return [Number(text.slice(start, end)), end];
  }

  /** Python's number rule: a failed optional part (`1.`, `1e`) ends the number before it. */
  private matchNumber(start: number): number {
    const { text, len } = this;
    let i = start;
    if (text.charCodeAt(i) === MINUS) i++;
    const first = i < len ? text.charCodeAt(i) : -1;
    if (first === ZERO) {
      i++;
    } else if (first > ZERO && first <= NINE) {
      i++;
      while (i < len && isDigit(text.charCodeAt(i))) i++;
    } else {
      fail(start, 'Expecting value');
    }
    if (i + 1 < len && text[i] === '.' && isDigit(text.charCodeAt(i + 1))) {
      i += 2;
      while (i < len && isDigit(text.charCodeAt(i))) i++;
    }
    if (i + 1 < len && (text[i] === 'e' || text[i] === 'E')) {
      let j = i + 1;
      if (j + 1 < len && (text[j] === '+' || text[j] === '-')) j++;
      const digitsStart = j;
      while (j < len && isDigit(text.charCodeAt(j))) j++;
      if (j > digitsStart) i = j;
    }
    return i;
  }

  private skipWhitespace(start: number): number {
    const { text, len } = this;
    let i = start;
    // Python's json skips only these four; other Unicode spaces are errors, as in JSON.parse.
    while (i < len) {
      const c = text.charCodeAt(i);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      i++;
    }
    return i;
  }
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

function hexValue(c: number): number {
  if (c >= ZERO && c <= NINE) return c - ZERO;
  const lower = c | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}

// A plain assignment of "__proto__" would change the prototype instead of adding a key, unlike
// JSON.parse (and Python), which both keep it as ordinary data.
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

/** Python indexes by code point: each surrogate pair before `index` counts once. */
function codePointOffset(text: string, index: number): number {
  let pairs = 0;
  for (let i = 0; i + 1 < index; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        pairs++;
        i++;
      }
    }
  }
  return index - pairs;
}
