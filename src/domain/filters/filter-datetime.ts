import type { FilterInstant } from '../../storage/store.js';
import { readDateTime } from '../iso-datetime.js';

/**
 * The instant a filter's datetime text names, read as the reference's (Python) parser reads it
 * (domain/iso-datetime.ts, grammar 'isoformat'); null when it is not a datetime. Microsecond
 * precision, so not a `Date`.
 */
export function parseDateTime(input: string): FilterInstant | null {
  const micros = readDateTime(input, 'isoformat');
  return micros === undefined ? null : { micros };
}
