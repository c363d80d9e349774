/*
 * The text a JSON upload becomes. The reference reads the document with Python's `json.loads`
 * and stores `json.dumps(value, ensure_ascii=False)`: one line, ", " and ": " separators,
 * non-ASCII characters kept, integers exact, floats in Python's `repr`, and a key given twice
 * keeps its first place with its last value. Re-serialising with JSON.stringify would lose big
 * integers and `1.0`, and print other separators, so this reads and writes the document itself.
 */

/** Nesting beyond this fails in the reference (Python's recursion limit); here it is invalid. */
const MAX_DEPTH = 1000;

class Invalid extends Error {}

const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** Python's `json.dumps` string form with `ensure_ascii=False`. */
function pythonString(value: string): string {
  return `"${value.replace(/[\u0000-\u001f"\\]/g, (c) => {
    switch (c) {
      case '"':
        return '\\"';
      case '\\':
        return '\\\\';
      case '\b':
        return '\\b';
      case '\f':
        return '\\f';
      case '\n':
        return '\\n';
      case '\r':
        return '\\r';
      case '\t':
        return '\\t';
      default:
        return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
    }
  })}"`;
}

/** Python's `repr(float)`: shortest round-trip digits, exponent form below 1e-4 and from 1e16. */
export function pythonFloat(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return 'Infinity';
  if (value === -Infinity) return '-Infinity';
  const sign = value < 0 || Object.is(value, -0) ? '-' : '';
  const [mantissa, exponent] = Math.abs(value).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  // value = 0.<digits> x 10^point
  const point = Number(exponent) + 1;
  if (point > -4 && point <= 16) {
    if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
    if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}.0`;
    return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
  }
  const e = point - 1;
  const lead = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${lead}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
}

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?/y;
const HEX4 = /^[0-9a-fA-F]{4}$/;

class Reader {
  private pos = 0;

  constructor(private readonly text: string) {}

  document(): string {
    const value = this.value(0);
    this.skipSpace();
    if (this.pos !== this.text.length) throw new Invalid();
    return value;
  }

  private skipSpace(): void {
    // Python's json accepts exactly these four between tokens
    while (this.pos < this.text.length) {
      const c = this.text[this.pos];
      if (c !== ' ' && c !== '\t' && c !== '\n' && c !== '\r') return;
      this.pos++;
    }
  }

  private literal(word: string, rendered = word): string {
    if (!this.text.startsWith(word, this.pos)) throw new Invalid();
    this.pos += word.length;
    return rendered;
  }

  private value(depth: number): string {
    if (depth > MAX_DEPTH) throw new Invalid();
    this.skipSpace();
    const c = this.text[this.pos];
    switch (c) {
      case '"':
        return pythonString(this.string());
      case '{':
        return this.object(depth + 1);
      case '[':
        return this.array(depth + 1);
      case 'n':
        return this.literal('null');
      case 't':
        return this.literal('true');
      case 'f':
        return this.literal('false');
      case 'N':
        return this.literal('NaN');
      case 'I':
        return this.literal('Infinity');
      default:
        if (c === '-' && this.text.startsWith('-Infinity', this.pos)) return this.literal('-Infinity');
        return this.number();
    }
  }

  private number(): string {
    NUMBER.lastIndex = this.pos;
    const match = NUMBER.exec(this.text);
    if (match === null) throw new Invalid();
    this.pos += match[0].length;
    const isFloat = match[1] !== undefined || match[2] !== undefined;
    return isFloat ? pythonFloat(Number(match[0])) : BigInt(match[0]).toString();
  }

  private string(): string {
    this.pos++; // opening quote
    let out = '';
    for (;;) {
      const start = this.pos;
      while (this.pos < this.text.length) {
        const code = this.text.charCodeAt(this.pos);
        if (code === 0x22 || code === 0x5c || code < 0x20) break;
        this.pos++;
      }
      out += this.text.slice(start, this.pos);
      if (this.pos >= this.text.length) throw new Invalid();
      const c = this.text[this.pos++];
      if (c === '"') return out;
      if (c !== '\\') throw new Invalid(); // a raw control character
      const escape = this.text[this.pos++];
      if (escape === 'u') {
        const hex = this.text.slice(this.pos, this.pos + 4);
        if (!HEX4.test(hex)) throw new Invalid();
        this.pos += 4;
        // a \uD8xx\uDCxx pair is one character; a lone surrogate stays as it is, as in Python
        out += String.fromCharCode(parseInt(hex, 16));
      } else if (escape !== undefined && escape in ESCAPES) {
        out += ESCAPES[escape];
      } else {
        throw new Invalid();
      }
    }
  }

  private object(depth: number): string {
    this.pos++;
    // a Map keeps a repeated key at its first place and takes its last value, like a dict
    const entries = new Map<string, string>();
    this.skipSpace();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return '{}';
    }
    for (;;) {
      this.skipSpace();
      if (this.text[this.pos] !== '"') throw new Invalid();
      const key = this.string();
      this.skipSpace();
      if (this.text[this.pos++] !== ':') throw new Invalid();
      entries.set(key, this.value(depth));
      this.skipSpace();
      const next = this.text[this.pos++];
      if (next === '}') break;
      if (next !== ',') throw new Invalid();
    }
    return `{${[...entries].map(([key, value]) => `${pythonString(key)}: ${value}`).join(', ')}}`;
  }

  private array(depth: number): string {
    this.pos++;
    const items: string[] = [];
    this.skipSpace();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return '[]';
    }
    for (;;) {
      items.push(this.value(depth));
      this.skipSpace();
      const next = this.text[this.pos++];
      if (next === ']') break;
      if (next !== ',') throw new Invalid();
    }
    return `[${items.join(', ')}]`;
  }
}

/**
 * The document re-written as the reference stores it (see above), or undefined when Python's
 * `json.loads` would refuse it (or it nests deeper than 1000 levels).
 */
export function jsonUploadText(source: string): string | undefined {
  try {
    return new Reader(source).document();
  } catch (error) {
    if (error instanceof Invalid) return undefined;
    throw error;
  }
}
