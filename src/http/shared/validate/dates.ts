import { daysInMonth, readDateTime } from '../../../domain/iso-datetime.js';
import { dateOfEpochMicros, PreciseDate } from '../../../storage/precise-date.js';
import { INVALID, Schema, item } from './core.js';

/** The reason pydantic gives for year 0, which it reports as `datetime_parsing` (not `..._from_date_...`). */
export const YEAR_0_REASON = 'year 0 is out of range';

/**
 * What is wrong with the date that starts `text`, as pydantic says it: the first of its ten
 * characters that is wrong, the month or day out of range, year 0; undefined when it is a date.
 */
function dateFault(text: string): string | undefined {
  if (text.length < 10) return 'input is too short';
  const digits = (from: number, to: number) => /^\d+$/.test(text.slice(from, to));
  if (!digits(0, 4)) return 'invalid character in year';
  if (text[4] !== '-') return 'invalid date separator, expected `-`';
  if (!digits(5, 7)) return 'invalid character in month';
  if (text[7] !== '-') return 'invalid date separator, expected `-`';
  if (!digits(8, 10)) return 'invalid character in day';
  const [year, month, day] = [Number(text.slice(0, 4)), Number(text.slice(5, 7)), Number(text.slice(8, 10))];
  if (month < 1 || month > 12) return 'month value is outside expected range of 1-12';
  if (day < 1 || day > daysInMonth(year, month)) return 'day value is outside expected range';
  if (year === 0) return YEAR_0_REASON;
  return undefined;
}

/**
 * Why pydantic refuses `text` as a datetime: the reason of its fallback, the date parser, which
 * it reports in either case (a valid date followed by anything it did not take is "extra").
 */
const dateProblem = (text: string) => dateFault(text) ?? 'unexpected extra characters at the end of the input';

/**
 * Parses the ISO 8601 forms pydantic accepts for a datetime (domain/iso-datetime.ts, grammar
 * 'pydantic'); naive values are taken as UTC. A refused text gives pydantic's reason.
 */
export function parseIsoDateTime(text: string): Date | string {
  const micros = dateFault(text) === undefined ? readDateTime(text, 'pydantic') : undefined;
  if (micros === undefined) return dateProblem(text);
  // whole milliseconds, rounded down (before 1970 too), and the microseconds past them
  const ms = micros >= 0n ? micros / 1000n : -((-micros + 999n) / 1000n);
  const rest = Number(micros - ms * 1000n);
  return rest === 0 ? new Date(Number(ms)) : new PreciseDate(Number(ms), rest);
}

/** The range of Python's datetime (years 1 to 9999), in milliseconds since 1970. */
const EARLIEST_MS = -62_135_596_800_000;
const LATEST_MS = 253_402_300_799_999;

export function datetime(): Schema<Date> {
  return {
    parse(input, loc, errors) {
      // a string of digits (with a fraction) is a unix timestamp too, as a number is
      const stamp = typeof input === 'string' && /^[+-]?\d+(?:\.\d*)?$/.test(input) ? Number(input) : input;
      if (typeof stamp === 'number' && Number.isFinite(stamp)) {
        // pydantic reads large numbers as milliseconds, small ones as seconds
        const ms = Math.abs(stamp) > 2e10 ? stamp : stamp * 1000;
        if (ms >= EARLIEST_MS && ms <= LATEST_MS) return dateOfEpochMicros(Math.round(ms * 1000));
        const bound = ms > LATEST_MS ? 'dates after 9999' : 'dates before 0001';
        errors.push(item('datetime_parsing', loc, `Input should be a valid datetime, ${bound} are not supported as unix timestamps`, input, { error: `${bound} are not supported as unix timestamps` }));
        return INVALID;
      }
      if (typeof input !== 'string') {
        errors.push(item('datetime_type', loc, 'Input should be a valid datetime', input));
        return INVALID;
      }
      const parsed = parseIsoDateTime(input);
      if (parsed === YEAR_0_REASON) {
        errors.push(item('datetime_parsing', loc, `Input should be a valid datetime, ${parsed}`, input, { error: parsed }));
        return INVALID;
      }
      if (typeof parsed === 'string') {
        errors.push(
          item('datetime_from_date_parsing', loc, `Input should be a valid datetime or date, ${parsed}`, input, {
            error: parsed,
          }),
        );
        return INVALID;
      }
      return parsed;
    },
    jsonSchema: () => ({ type: 'string', format: 'date-time' }),
  };
}
