/**
 * A time finer than a millisecond. Engram's own clock readings are whole milliseconds and stay
 * plain `Date`s; a time a client gives (a message's `created_at`: `...00.123456Z`) keeps its
 * microseconds through the store and back onto the wire (contract §1.5: six fractional digits).
 * `micros` is the part within the millisecond, 1 to 999 (a Date's own part is whole
 * milliseconds), so the instant is `getTime() + micros / 1000`.
 */
export class PreciseDate extends Date {
  constructor(
    ms: number,
    readonly micros: number,
  ) {
    super(ms);
  }
}

/** The microseconds within the time's millisecond (0 for a plain Date). */
export function subMillisecondMicros(date: Date): number {
  return date instanceof PreciseDate ? date.micros : 0;
}

/** Microseconds since the epoch. */
export function epochMicros(date: Date): number {
  return date.getTime() * 1000 + subMillisecondMicros(date);
}

/** The time `micros` microseconds after the epoch: a plain Date when it is a whole millisecond. */
export function dateOfEpochMicros(micros: number): Date {
  const ms = Math.floor(micros / 1000);
  // beyond 2^53 (after the year 2255) a float cannot hold every microsecond: milliseconds only
  if (!Number.isSafeInteger(micros)) return new Date(ms);
  const rest = micros - ms * 1000;
  return rest === 0 ? new Date(ms) : new PreciseDate(ms, rest);
}
