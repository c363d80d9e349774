/*
 * The one reader of ISO 8601 date-times, in the two grammars the reference's parsers accept:
 * - 'pydantic' (request bodies and forms): `YYYY-MM-DD`, optionally `T`, `t`, `_` or a space and
 *   `HH:MM[:SS[.f]]`, then `Z` or `±HH:MM` / `±HHMM`;
 * - 'isoformat' (Python's `datetime.fromisoformat`: filters, token expiries): `YYYY-MM-DD`,
 *   optionally `T`, `t` or a space and `HH[:MM[:SS[.f]]]`, then `Z`, `±HH`, `±HH:MM`, `±HHMM` or
 *   `±HH:MM:SS`; surrounding whitespace ignored.
 * In both the fraction is `.` or `,` and kept to microseconds, a value without an offset is UTC,
 * and the calendar is checked (no 30 February, years 1 to 9999).
 */

export type DateTimeGrammar = 'pydantic' | 'isoformat';

const GRAMMARS: Record<DateTimeGrammar, RegExp> = {
  pydantic: /^(\d{4})-(\d{2})-(\d{2})(?:[T t_](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(Z|z|[+-]\d{2}:?\d{2})?)?$/,
  isoformat: /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?(Z|z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)?)?$/,
};

const isLeap = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;

/** Days in `month` (1-12) of `year`. */
export const daysInMonth = (year: number, month: number) => [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];

/** Days from 1970-01-01 to a proleptic Gregorian date. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** Microseconds since 1970-01-01T00:00:00Z of the instant `text` names; undefined when it names none in `grammar`. */
export function readDateTime(text: string, grammar: DateTimeGrammar): bigint | undefined {
  const m = GRAMMARS[grammar].exec(grammar === 'isoformat' ? text.trim() : text);
  if (m === null) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const fraction = BigInt((m[7] ?? '').slice(0, 6).padEnd(6, '0'));
  let offsetSeconds = 0;
  const zone = m[8];
  if (zone !== undefined && zone !== 'Z' && zone !== 'z') {
    const digits = zone.slice(1).replaceAll(':', '');
    const [oh, om, os] = [Number(digits.slice(0, 2)), Number(digits.slice(2, 4) || 0), Number(digits.slice(4, 6) || 0)];
    if (oh > 23 || om > 59 || os > 59) return undefined;
    offsetSeconds = (zone.startsWith('-') ? -1 : 1) * (oh * 3600 + om * 60 + os);
  }
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds;
  return BigInt(seconds) * 1_000_000n + fraction;
}
