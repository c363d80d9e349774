import { describe, expect, it } from 'vitest';
import { jsonText } from '../../../src/storage/sql/json-text.js';

describe('jsonText', () => {
  it('writes plain values as JSON.stringify does', () => {
    const value = { a: ['x', 1, null], 'b\\u0000': 'a backslash before u0000 is text', pair: '\ud83d\ude00' };
    expect(jsonText(value)).toBe(JSON.stringify(value));
  });

  it('puts U+FFFD in place of NULs and unpaired surrogates, in keys and values, at any depth', () => {
    const text = jsonText({ ['k\u0000']: ['a\u0000b', { deep: '\udc00x\ud800' }], pair: '\ud83d\ude00' });
    expect(text).not.toMatch(/\\u(0000|d[89a-f])/i);
    expect(JSON.parse(text)).toEqual({ ['k\ufffd']: ['a\ufffdb', { deep: '\ufffdx\ufffd' }], pair: '\ud83d\ude00' });
  });

  it('keeps a key named __proto__ an ordinary key when it rewrites', () => {
    const value = JSON.parse('{"__proto__": {"a": "\\u0000"}}');
    expect(jsonText(value)).toBe('{"__proto__":{"a":"\ufffd"}}');
  });
});
