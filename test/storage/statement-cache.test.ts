import { afterEach, describe, expect, it } from 'vitest';
import { SqliteDriver } from '../../src/storage/sqlite/sqlite-driver.js';
import { STATEMENT_CACHE_CHARS, statementCache } from '../../src/storage/sql/statement-cache.js';

/** A statement of its own text, `chars` long: one more shape, as a filter of a new shape is. */
const distinct = (i: number, chars: number) => `SELECT ${i} AS n /* ${'x'.repeat(chars)} */`;

describe('statement caches', () => {
  const gcBefore = (globalThis as { gc?: () => void }).gc;
  afterEach(() => {
    (globalThis as { gc?: () => void }).gc = gcBefore;
  });

  it('keep at most STATEMENT_CACHE_CHARS of SQL text, dropping the least recently used', () => {
    const dropped: string[] = [];
    const cache = statementCache<{ n: number }>((sql) => dropped.push(sql));
    const texts = Array.from({ length: 500 }, (_, i) => distinct(i, 20_000));
    cache.set(texts[0], { n: 0 });
    for (let i = 1; i < texts.length; i++) {
      cache.set(texts[i], { n: i });
      // the first one stays in use, so it stays
      expect(cache.get(texts[0])).toEqual({ n: 0 });
    }
    expect(cache.calculatedSize).toBeLessThanOrEqual(STATEMENT_CACHE_CHARS);
    expect(dropped.length).toBeGreaterThan(250);
    expect(dropped).not.toContain(texts[0]);
    expect(cache.has(texts[1])).toBe(false);
    expect(cache.has(texts[499])).toBe(true);
  });

  it('SQLite asks for a collection once the statements it dropped add up to a cache of them', async () => {
    let collections = 0;
    (globalThis as { gc?: () => void }).gc = () => collections++;
    const driver = new SqliteDriver(':memory:');
    try {
      // 2.5 caches' worth of distinct statements, each run once
      const count = Math.ceil((2.5 * STATEMENT_CACHE_CHARS) / 20_000);
      for (let i = 0; i < count; i++) expect(await driver.get<{ n: number }>(distinct(i, 20_000))).toEqual({ n: i });
      await new Promise((resolve) => setImmediate(resolve));
      expect(collections).toBe(1);
    } finally {
      await driver.close();
    }
  });
});
