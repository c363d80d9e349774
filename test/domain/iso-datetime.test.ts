import { describe, expect, it } from 'vitest';
import { readDateTime } from '../../src/domain/iso-datetime.js';

/* The one date-time reader, in the grammar of each of the reference's parsers. */

const micros = (iso: string) => BigInt(Date.parse(iso)) * 1000n;

describe('readDateTime', () => {
  it('reads what both grammars accept to the same instant, to the microsecond', () => {
    for (const grammar of ['pydantic', 'isoformat'] as const) {
      expect(readDateTime('2024-02-29', grammar)).toBe(micros('2024-02-29T00:00:00Z'));
      expect(readDateTime('2024-02-29T12:30:15.123456+02:00', grammar)).toBe(micros('2024-02-29T10:30:15.123Z') + 456n);
      expect(readDateTime('2024-02-29 12:30:15,5-0130', grammar)).toBe(micros('2024-02-29T14:00:15.500Z'));
      expect(readDateTime('1969-12-31T23:59:59.999999Z', grammar)).toBe(-1n);
      expect(readDateTime('0001-01-01T00:00:00Z', grammar)).toBe(-62_135_596_800_000_000n);
    }
  });

  it('refuses what no calendar has, in either grammar', () => {
    for (const grammar of ['pydantic', 'isoformat'] as const) {
      for (const text of ['2023-02-29', '2024-13-01', '2024-04-31', '0000-01-01', '2024-01-01T24:00', '2024-01-01T10:60', '2024-01-01T10:00+24:00', 'tomorrow', '']) {
        expect(readDateTime(text, grammar), `${grammar} ${text}`).toBeUndefined();
      }
    }
  });

  it("keeps each grammar's own forms: an underscore for pydantic; an hour alone, short and long offsets and whitespace for isoformat", () => {
    expect(readDateTime('2024-01-01_10:00', 'pydantic')).toBe(micros('2024-01-01T10:00:00Z'));
    expect(readDateTime('2024-01-01_10:00', 'isoformat')).toBeUndefined();
    expect(readDateTime(' 2024-01-01T10+05 ', 'isoformat')).toBe(micros('2024-01-01T05:00:00Z'));
    expect(readDateTime('2024-01-01T10:00:00+05:30:15', 'isoformat')).toBe(micros('2024-01-01T04:29:45Z'));
    expect(readDateTime('2024-01-01T10', 'pydantic')).toBeUndefined();
    expect(readDateTime(' 2024-01-01', 'pydantic')).toBeUndefined();
    expect(readDateTime('2024-01-01T10:00+05', 'pydantic')).toBeUndefined();
  });
});
