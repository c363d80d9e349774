import type { FilterInstant } from '../../storage/store.js';

/*
 * Datetimes in filters, read as the reference's (Python) parser reads them: `YYYY-MM-DD`,
 * optionally followed by `T`/`t`/space, `HH[:MM[:SS[.f+]]]` (`.` or `,`; fraction truncated to
 * microseconds) and an offset `Z`, `±HH`, `±HH:MM`, `±HHMM` or `±HH:MM:SS` (under 24h);
 * surrounding whitespace ignored; naive values are UTC; years 1-9999. Microsecond precision, so
 * not a `Date`.
 */
const DATETIME_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?(Z|z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)?)?$/;

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

/** Days from 1970-01-01 to a proleptic Gregorian date. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** The instant a filter's datetime text names; null when it is not a datetime. */
export function parseDateTime(input: string): FilterInstant | null {
  const m = DATETIME_RE.exec(input.trim());
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  const monthDays = [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > monthDays[month - 1]) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  const fraction = Number((m[7] ?? '').slice(0, 6).padEnd(6, '0'));
  let offsetSeconds = 0;
  const tz = m[8];
  if (tz && tz !== 'Z' && tz !== 'z') {
    const digits = tz.slice(1).replace(/:/g, '');
    const [oh, om, os] = [Number(digits.slice(0, 2)), Number(digits.slice(2, 4) || 0), Number(digits.slice(4, 6) || 0)];
    if (oh > 23 || om > 59 || os > 59) return null;
    offsetSeconds = (tz[0] === '-' ? -1 : 1) * (oh * 3600 + om * 60 + os);
  }
  const seconds = daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offsetSeconds;
  return { micros: BigInt(seconds) * 1_000_000n + BigInt(fraction) };
}
