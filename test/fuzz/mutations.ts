import fc from 'fast-check';

/** Keys that find something on `Object.prototype` when looked up on a plain object. */
export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__'];

const LONE_HIGH = '\ud800';
const LONE_LOW = '\udc00';

/** Strings that have broken parsers, tokenizers, indexes and encoders before. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    `a\u0000b`,
    LONE_HIGH,
    `x${LONE_LOW}y`,
    `${LONE_LOW}${LONE_HIGH}`,
    '\u202e\u0645\u0631\u062d\u0628\u0627',
    '\ufeff',
    '🎉👩‍👩‍👧‍👦',
    'e\u0301\u0301\u0301',
    '%00',
    "'; DROP TABLE peers; --",
    '" OR 1=1 --',
    '*',
    '"unterminated',
    'NEAR(a b)',
    'a AND OR NOT b',
    '\\',
    '$gt',
    '__proto__',
    'constructor',
    '9'.repeat(400),
    '1e999',
    'NaN',
    '-Infinity',
    '2024-13-45T25:61:61Z',
    '0000-00-00',
  ),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  // long runs without a break: token counting and full-text indexing grow fastest on these
  fc.integer({ min: 2_000, max: 60_000 }).map((n) => 'y'.repeat(n)),
  fc.integer({ min: 2_000, max: 30_000 }).map((n) => 'lorem ipsum '.repeat(Math.ceil(n / 12))),
);

function nested(depth: number, array: boolean): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = array ? [value] : { a: value };
  return value;
}

/** A value of some other type than expected, or an odd one of the expected type. */
export const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  oddString,
  fc.constantFrom<unknown>(null, true, false, 0, -1, -0, 1.5, 1e308, -1e308, 2 ** 53 + 1, 2 ** 64, [], {}, [null], [[]], { '': '' }),
  fc.constantFrom(...PROTOTYPE_KEYS).map((key) => JSON.parse(`{${JSON.stringify(key)}: {"a": 1}}`) as unknown),
  fc.integer({ min: 50, max: 3_000 }).chain((depth) => fc.boolean().map((array) => nested(depth, array))),
  fc.integer({ min: 200, max: 20_000 }).map((n) => Array.from({ length: n }, (_, i) => i)),
  fc.jsonValue({ maxDepth: 3 }),
);

/** Every place in `value` that a mutation can replace: a list of keys from the root. */
function paths(value: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(prefix);
  if (out.length > 200) return out;
  if (Array.isArray(value)) value.forEach((item, index) => paths(item, [...prefix, index], out));
  else if (value !== null && typeof value === 'object') for (const key of Object.keys(value)) paths((value as Record<string, unknown>)[key], [...prefix, key], out);
  return out;
}

function setAt(root: unknown, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  let target = root as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) target = target[key] as Record<string | number, unknown>;
  Object.defineProperty(target, path[path.length - 1], { value, enumerable: true, writable: true, configurable: true });
  return root;
}

/** Replaces one place of a valid value with an odd one. */
export function replaceSomewhere(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.tuple(valid, fc.nat(), oddValue).map(([value, pick, odd]) => {
    const copy = structuredClone(value);
    const all = paths(copy);
    return setAt(copy, all[pick % all.length], odd);
  });
}

/** Adds a prototype-named key to one object in a valid value (or wraps it in one). */
export function addPrototypeKey(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.tuple(valid, fc.nat(), fc.constantFrom(...PROTOTYPE_KEYS), fc.constantFrom<unknown>(1, 'x', {}, { a: 1 }, [], null, true)).map(([value, pick, key, inner]) => {
    const copy = structuredClone(value);
    const objects = paths(copy)
      .map((path) => path.reduce<unknown>((node, step) => (node as Record<string | number, unknown>)[step], copy))
      .filter((node): node is Record<string, unknown> => node !== null && typeof node === 'object' && !Array.isArray(node));
    if (objects.length === 0) return { [key]: inner, value: copy };
    Object.defineProperty(objects[pick % objects.length], key, { value: inner, enumerable: true, writable: true, configurable: true });
    return copy;
  });
}

/** Body texts that are not the JSON a route expects. */
export const rawBodyText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '{',
    '}',
    '{"a":',
    '[1,]',
    '{"a":1,}',
    "{'a': 1}",
    'NaN',
    'Infinity',
    '-Infinity',
    '{"a": NaN}',
    'nul',
    'null',
    'true',
    '123',
    '"text"',
    '[]',
    '[{}]',
    '"\\ud800"',
    '{"a":"\\u0000"}',
    '{"\\u0000":1}',
    '\u0000',
    '{"a":"\\x"}',
    '{"a": 1} {"b": 2}',
    '\ufeff{}',
    '{"__proto__": {"polluted": true}}',
    '{"constructor": {"prototype": {"polluted": true}}}',
  ),
  fc.integer({ min: 100, max: 200_000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth)),
  fc.integer({ min: 100, max: 100_000 }).map((depth) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)),
  fc.integer({ min: 100, max: 100_000 }).map((depth) => '['.repeat(depth)),
  fc.string({ unit: 'binary', maxLength: 60 }),
);

/** Raw bytes that are not valid UTF-8. */
export const invalidUtf8: fc.Arbitrary<Buffer> = fc.constantFrom(
  Buffer.from([0xff, 0xfe, 0xfd]),
  Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), // {"a":"\xc3("}
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0x80]),
);

/** Path segments, already percent-encoded, that are not ordinary ids. */
export const oddPathSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
    '%00',
    'a%00b',
    '%ED%A0%80',
    '%FF%FE',
    '.',
    '..',
    '%2E%2E',
    '%2F',
    'a%2Fb',
    '%25',
    '%zz',
    '%',
    '%20',
    '%C3%BC%E6%97%A5%F0%9F%8E%89',
    'null',
    'undefined',
    '-1',
    '0',
    'list',
    'a'.repeat(512),
    'a'.repeat(513),
    'a'.repeat(2_100),
  ),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, 'x'))),
);

/** Query values, already percent-encoded, that are not what the parameter expects. */
export const oddQueryValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('', 'abc', '-1', '0', '1.5', '1e999', '99999999999999999999999', 'NaN', 'true', 'null', '%00', '%ED%A0%80', '%zz', '[1]', '{}', 'a'.repeat(10_000)),
  fc.string({ maxLength: 12 }).map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, 'x'))),
);
