import { afterAll, describe, expect, it } from 'vitest';
import { vectorText } from '../../src/storage/vector-index.js';
import { openFreshDatabase } from '../support/fresh-database.js';
import { DIALECT } from '../support/test-app.js';

/*
 * The text a vector goes to pgvector in (storage/vector-index.ts, vectorText): every value must
 * arrive as the float32 it rounds to, whatever its size, and the database must read the text so.
 */

/** Values over the whole float32 range: tiny, huge, negative, round, and doubles between float32s. */
function samples(): number[] {
  let seed = 7;
  const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648);
  const values = [0, -0, 1, -1, 0.1, 1 / 3, 2 ** -149, -(2 ** -126), 3.4028234663852886e38, 1e-45, 123456789, 0.5 + 2 ** -30];
  for (let i = 0; i < 2000; i++) values.push((random() - 0.5) * 10 ** Math.floor(random() * 70 - 40));
  return values;
}

describe('vector text', () => {
  it('writes each value so that it reads back as the same float32', () => {
    const values = samples();
    const text = vectorText(values);
    expect(text.startsWith('[') && text.endsWith(']')).toBe(true);
    const read = (JSON.parse(text) as number[]).map((x) => Math.fround(x));
    expect(read).toHaveLength(values.length);
    for (const [i, x] of values.entries()) expect(read[i]).toBe(Math.fround(x) === 0 ? 0 : Math.fround(x));
    // nine significant digits at most
    for (const value of text.slice(1, -1).split(',')) expect(value.replace(/^-/, '').replace(/e.*$/, '').replace('.', '').replace(/^0+/, '').length).toBeLessThanOrEqual(9);
  });

  describe.runIf(DIALECT === 'postgres')('on PostgreSQL', () => {
    let database: Awaited<ReturnType<typeof openFreshDatabase>> | undefined;
    afterAll(() => database?.close());

    it('is read by pgvector as the same float32 values', async () => {
      database = await openFreshDatabase();
      const values = samples().filter((x) => Math.abs(Math.fround(x)) < 1e38);
      const [row] = await database.driver.all<{ v: string }>('SELECT ?::vector::text AS v', [vectorText(values)]);
      const stored = (JSON.parse(row.v) as number[]).map((x) => Math.fround(x));
      expect(stored).toEqual(values.map((x) => (Math.fround(x) === 0 ? 0 : Math.fround(x))));
    });
  });
});
