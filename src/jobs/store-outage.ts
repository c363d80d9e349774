import type { StoreUnavailableError } from '../storage/store.js';

/** What an outage logs to (the worker's logger). */
export interface OutageLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Longest pause between attempts to reach a store that is unavailable. */
const MAX_UNAVAILABLE_PAUSE_MS = 5000;

/**
 * A worker's view of its store going away and coming back: one log line each way (not one per
 * poll), the time it went, and how long to wait before the next attempt (doubling from the poll
 * interval up to a few seconds, instead of polling a database that is down).
 */
export class StoreOutage {
  /** When the store stopped answering; undefined while it answers. */
  since: Date | undefined;
  private failures = 0;

  constructor(
    private readonly logger: OutageLogger,
    private readonly now: () => Date,
  ) {}

  failed(error: StoreUnavailableError): void {
    this.failures += 1;
    if (this.since !== undefined) return;
    this.since = this.now();
    this.logger.warn({ reason: error.reason, error: error.message }, 'store unavailable: workers paused');
  }

  ended(): void {
    this.failures = 0;
    if (this.since === undefined) return;
    const pausedMs = this.now().getTime() - this.since.getTime();
    this.since = undefined;
    this.logger.info({ pausedMs }, 'store available again: workers resumed');
  }

  backoff(pollMs: number): number {
    return Math.max(pollMs, Math.min(MAX_UNAVAILABLE_PAUSE_MS, pollMs * 2 ** this.failures));
  }
}
