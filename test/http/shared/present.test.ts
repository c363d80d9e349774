import { describe, expect, it } from 'vitest';
import { isoTime, isoTimeOf } from '../../../src/http/shared/present.js';
import { PreciseDate } from '../../../src/storage/precise-date.js';

/** A deterministic generator (mulberry32), so a failure names a date that can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const YEAR_0 = -62_167_219_200_000; // 0000-01-01T00:00:00Z
const YEAR_10000 = 253_402_300_800_000; // +010000-01-01T00:00:00Z

describe('isoTime', () => {
  it('writes whole seconds without a fraction and other times with six digits', () => {
    expect(isoTime(new Date('2024-03-05T07:08:09Z'))).toBe('2024-03-05T07:08:09Z');
    expect(isoTime(new Date('2024-03-05T07:08:09.001Z'))).toBe('2024-03-05T07:08:09.001000Z');
    expect(isoTime(new Date('2024-03-05T23:59:59.999Z'))).toBe('2024-03-05T23:59:59.999000Z');
    expect(isoTime(new Date(0))).toBe('1970-01-01T00:00:00Z');
  });

  it('writes the microseconds of a finer time', () => {
    const at = Date.UTC(2024, 0, 1, 10, 0, 0, 123);
    expect(isoTime(new PreciseDate(at, 456))).toBe('2024-01-01T10:00:00.123456Z');
    expect(isoTime(new PreciseDate(at - 123, 1))).toBe('2024-01-01T10:00:00.000001Z');
    expect(isoTime(new PreciseDate(Date.UTC(1969, 11, 31, 23, 59, 59, 999), 999))).toBe('1969-12-31T23:59:59.999999Z');
    for (const [ms, micros] of [[at, 456], [at - 123, 1], [YEAR_10000 + 500, 7], [YEAR_0 - 1, 999]]) {
      expect(isoTime(new PreciseDate(ms, micros))).toBe(isoTimeOf(new PreciseDate(ms, micros)));
    }
    expect(isoTimeOf(new PreciseDate(YEAR_10000 + 500, 7))).toBe('+010000-01-01T00:00:00.500007Z');
    expect(isoTimeOf(new Date(YEAR_10000))).toBe('+010000-01-01T00:00:00Z');
  });

  it('equals the toISOString-based formatter on edge cases', () => {
    const edges = [
      0, -1, 1, 999, 1000, -999, -1000, -1001, 86_399_999, 86_400_000, -86_400_000, -86_400_001,
      Date.UTC(2000, 1, 29, 12), Date.UTC(1900, 1, 28, 23, 59, 59, 999), Date.UTC(1900, 2, 1),
      Date.UTC(2100, 1, 28, 23, 59, 59, 500), Date.UTC(1969, 11, 31, 23, 59, 59, 999), Date.UTC(2038, 0, 19, 3, 14, 8),
      YEAR_0, YEAR_0 + 1, YEAR_0 - 1, YEAR_10000 - 1, YEAR_10000, YEAR_10000 + 1000,
      -8_640_000_000_000_000, 8_640_000_000_000_000,
    ];
    for (const ms of edges) expect(isoTime(new Date(ms)), String(ms)).toBe(isoTimeOf(new Date(ms)));
  });

  it('equals the toISOString-based formatter on 200,000 random dates, near and far apart', () => {
    const random = seeded(20_240_305);
    const now = Date.UTC(2026, 0, 1);
    let mismatches = 0;
    for (let i = 0; i < 200_000; i++) {
      const kind = i % 4;
      const ms =
        kind === 0 ? Math.floor((random() * 2 - 1) * 8_640_000_000_000_000)   // anywhere a Date can be
        : kind === 1 ? Math.floor(YEAR_0 + random() * (YEAR_10000 - YEAR_0))   // four-digit years
        : kind === 2 ? now + Math.floor(random() * 30 * 86_400_000)            // a month of recent times
        : Math.floor(now / 1000) * 1000 + Math.floor(random() * 3) * 86_400_000; // whole seconds, alternating days
      const date = new Date(ms);
      if (isoTime(date) !== isoTimeOf(date)) {
        mismatches++;
        expect(isoTime(date), String(ms)).toBe(isoTimeOf(date));
      }
    }
    expect(mismatches).toBe(0);
  });

  it('refuses an invalid date as toISOString does', () => {
    expect(() => isoTime(new Date(Number.NaN))).toThrow(RangeError);
  });
});
