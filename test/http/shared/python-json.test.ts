import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_JSON_DEPTH, parseJsonLikePython } from '../../../src/http/shared/python-json.js';

// Expected positions and messages are those of CPython 3.11's json.loads on the UTF-8 bytes of
// each input (the C scanner; 3.13 words trailing commas differently and is not the reference).
const failures: ReadonlyArray<readonly [string, number, string]> = [
  ['', 0, 'Expecting value'],
  ['   ', 3, 'Expecting value'],
  ['{"a": }', 6, 'Expecting value'],
  ['{"a":}', 5, 'Expecting value'],
  ['[', 1, 'Expecting value'],
  ['-', 0, 'Expecting value'],
  ['-Inf', 0, 'Expecting value'],
  ['[-]', 1, 'Expecting value'],
  ['nul', 0, 'Expecting value'],
  ['True', 0, 'Expecting value'],
  ['[NaN, nan]', 6, 'Expecting value'],
  ['{"a":\t1,\n "b" : [true,, false]}', 22, 'Expecting value'],
  ['{"a" 1}', 5, "Expecting ':' delimiter"],
  ['[1 2]', 3, "Expecting ',' delimiter"],
  ['[1,2', 4, "Expecting ',' delimiter"],
  ['{"a":1 "b":2}', 7, "Expecting ',' delimiter"],
  ['{"k":"v"', 8, "Expecting ',' delimiter"],
  // A dangling exponent is backtracked, so the number ends at the `e`.
  ['[1e, 2]', 2, "Expecting ',' delimiter"],
  ['{} x', 3, 'Extra data'],
  ['{"a":1}}', 7, 'Extra data'],
  ['1.', 1, 'Extra data'],
  ['01', 1, 'Extra data'],
  ['1e5x', 3, 'Extra data'],
  // U+00A0 is not JSON whitespace for Python either.
  ['{"a":1}\u00a0', 7, 'Extra data'],
  ["{'a':1}", 1, 'Expecting property name enclosed in double quotes'],
  ['{1:2}', 1, 'Expecting property name enclosed in double quotes'],
  ['{', 1, 'Expecting property name enclosed in double quotes'],
  // Trailing commas, 3.11/3.12 wording.
  ['{"a":1,}', 7, 'Expecting property name enclosed in double quotes'],
  ['[1,]', 3, 'Expecting value'],
  ['"abc', 0, 'Unterminated string starting at'],
  ['["ok", "abc', 7, 'Unterminated string starting at'],
  ['"a\\', 0, 'Unterminated string starting at'],
  ['"a\nb"', 2, 'Invalid control character at'],
  ['"tab\there"', 4, 'Invalid control character at'],
  ['"\\x"', 1, 'Invalid \\escape'],
  ['"\\u12x4"', 2, 'Invalid \\uXXXX escape'],
  // Four hex digits with nothing after them is an escape error, not an unterminated string.
  ['"\\u0041', 2, 'Invalid \\uXXXX escape'],
  ['"\\ud800\\u12x4"', 8, 'Invalid \\uXXXX escape'],
  // Python counts code points: the emoji is one character, not two UTF-16 units.
  ['{"😀": x}', 6, 'Expecting value'],
];

describe('parseJsonLikePython', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it.each(failures)('%j fails at %i with %s', (text, pos, msg) => {
    expect(parseJsonLikePython(text)).toEqual({ ok: false, pos, msg });
  });

  it('returns what JSON.parse returns for valid input, through JSON.parse', () => {
    const text = '{"a": [1, 2.5e3, "x\\u0041", null, true, {"b": -0.1E-2}], "c": "\\ud83d\\ude00"}';
    const spy = vi.spyOn(JSON, 'parse');
    const result = parseJsonLikePython(text);
    expect(spy).toHaveBeenCalledTimes(1);
    expect(result).toEqual({ ok: true, value: { a: [1, 2500, 'xA', null, true, { b: -0.001 }], c: '😀' } });
  });

  it('accepts NaN, Infinity and -Infinity as Python does', () => {
    const result = parseJsonLikePython('{"a": [NaN, {"b": -Infinity}], "c": Infinity, "d": "\\u00e9", "e": [1, 2]}');
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const value = result.value as { a: [number, { b: number }]; c: number; d: string; e: number[] };
    expect(value.a[0]).toBeNaN();
    expect(value.a[1].b).toBe(Number.NEGATIVE_INFINITY);
    expect(value.c).toBe(Number.POSITIVE_INFINITY);
    expect(value.d).toBe('é');
    expect(value.e).toEqual([1, 2]);
  });

  it('accepts the constants at top level and rejects what follows them', () => {
    expect(parseJsonLikePython(' NaN ')).toMatchObject({ ok: true, value: Number.NaN });
    expect(parseJsonLikePython('-Infinity')).toEqual({ ok: true, value: Number.NEGATIVE_INFINITY });
    expect(parseJsonLikePython('NaNx')).toEqual({ ok: false, pos: 3, msg: 'Extra data' });
  });

  it('keeps a "__proto__" key as data when the scanner builds the value', () => {
    const result = parseJsonLikePython('{"__proto__": {"polluted": true}, "n": NaN}');
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const value = result.value as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['__proto__', 'n']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('lets the last duplicate key win, like both parsers', () => {
    expect(parseJsonLikePython('{"a": 1, "a": NaN, "a": 3}')).toEqual({ ok: true, value: { a: 3 } });
  });

  it('skips a leading BOM, as json.loads does for utf-8-sig bytes, and does not count it', () => {
    expect(parseJsonLikePython('\ufeff{"a":1}')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseJsonLikePython('\ufeff{"a":}')).toEqual({ ok: false, pos: 5, msg: 'Expecting value' });
  });

  it('survives deep nesting without overflowing the stack', () => {
    expect(parseJsonLikePython('['.repeat(100_000))).toEqual({ ok: false, pos: 100_000, msg: 'Expecting value' });
    const deep = `${'['.repeat(50_000)}NaN${']'.repeat(50_000)}`;
    expect(parseJsonLikePython(deep, Infinity).ok).toBe(true);
  });

  it('refuses valid JSON nested deeper than the limit, at the bracket that goes too deep', () => {
    const tooDeep = { ok: false, pos: 3, msg: 'Nesting exceeds maximum depth of 3', isTooDeep: true };
    expect(parseJsonLikePython('[[[1]]]', 3)).toEqual({ ok: true, value: [[[1]]] });
    expect(parseJsonLikePython('[[[[1]]]]', 3)).toEqual(tooDeep);
    expect(parseJsonLikePython('[{"a":[{}]}]', 3)).toEqual({ ...tooDeep, pos: 7 });
    expect(parseJsonLikePython(String.raw`[[["[[[[\\",{"\"[[":"{{{"}]]]`, 3)).toEqual({ ...tooDeep, pos: 12 });
    expect(parseJsonLikePython(String.raw`["\ud83d\ude00😀",[[[NaN]]]]`, 3)).toEqual({ ...tooDeep, pos: 19 }); // the emoji counts once
    expect(parseJsonLikePython(`${'['.repeat(50_000)}NaN${']'.repeat(50_000)}`)).toEqual({ ...tooDeep, pos: MAX_JSON_DEPTH, msg: `Nesting exceeds maximum depth of ${MAX_JSON_DEPTH}` });
  });
});
