import { describe, expect, it } from 'vitest';
import { jsonUploadText, pythonFloat } from '../../../src/domain/messages/json-text.js';

/* Expected texts are what Python's json.dumps(json.loads(source), ensure_ascii=False) prints. */

describe('jsonUploadText', () => {
  it('writes one line with Python separators, keeping non-ASCII text', () => {
    expect(jsonUploadText('{\n "a" : [1,2, {"b":null}],\n "c": "é☕"}')).toBe('{"a": [1, 2, {"b": null}], "c": "é☕"}');
    expect(jsonUploadText('  []  ')).toBe('[]');
    expect(jsonUploadText('{}')).toBe('{}');
    expect(jsonUploadText('"text"')).toBe('"text"');
    expect(jsonUploadText('true')).toBe('true');
  });

  it('keeps integers exact and writes floats as Python does', () => {
    expect(jsonUploadText('[12345678901234567890, -0, 1.0, 1.50, 1e2, 1E400, -1e400, 0.00001, 1e16, 123.456]')).toBe(
      '[12345678901234567890, 0, 1.0, 1.5, 100.0, Infinity, -Infinity, 1e-05, 1e+16, 123.456]',
    );
    expect(jsonUploadText('[NaN, Infinity, -Infinity]')).toBe('[NaN, Infinity, -Infinity]');
  });

  it('escapes like Python and decodes escapes', () => {
    expect(jsonUploadText('"a\\"b\\\\c\\/d\\n\\t\\u0001\\u00e9\\ud83d\\ude00"')).toBe('"a\\"b\\\\c/d\\n\\t\\u0001é😀"');
  });

  it('keeps a repeated key at its first place with its last value', () => {
    expect(jsonUploadText('{"a": 1, "b": 2, "a": 3}')).toBe('{"a": 3, "b": 2}');
  });

  it('refuses what json.loads refuses', () => {
    for (const bad of ['', '{', '{"a": 1,}', '[1,]', '{"a" 1}', "{'a': 1}", '01', '1.', '.5', '-', '+1', '"\u0001"', '"\\x"', '"\\u12"', 'nul', '1 2', '\ufeff{}', '\u00a0{}', 'undefined']) {
      expect(jsonUploadText(bad), JSON.stringify(bad)).toBeUndefined();
    }
  });

  it('refuses nesting deeper than 1000 levels without exhausting the stack', () => {
    expect(jsonUploadText('['.repeat(1000) + ']'.repeat(1000))).toBe('['.repeat(1000) + ']'.repeat(1000));
    expect(jsonUploadText('['.repeat(100_000) + ']'.repeat(100_000))).toBeUndefined();
  });
});

describe('pythonFloat', () => {
  it('matches repr(float)', () => {
    const cases: [number, string][] = [
      [0, '0.0'],
      [-0, '-0.0'],
      [0.1, '0.1'],
      [0.0001, '0.0001'],
      [1e-7, '1e-07'],
      [123456789012345678, '1.2345678901234568e+17'],
      [1e15, '1000000000000000.0'],
      [2.5e-300, '2.5e-300'],
      [-3.25, '-3.25'],
    ];
    for (const [value, text] of cases) expect(pythonFloat(value)).toBe(text);
  });
});
