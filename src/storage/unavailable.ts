/**
 * The database cannot serve requests right now (PostgreSQL stopped, refusing or unreachable;
 * the SQLite file unwritable, its disk full, or its lock held past the busy timeout). The drivers
 * throw it in place of the raw error so the layers above can answer 503 and retry later; the
 * operation it interrupted was rolled back. `message` is safe to show to clients, `reason` is a
 * short tag for logs and the readiness report, and `cause` keeps the original error.
 */
export class StoreUnavailableError extends Error {
  constructor(
    message: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * Conflicting writes (deadlocks, serialization failures, a transaction that yielded its lock
 * waits) ended the work on every attempt (PostgreSQL).
 */
export class ConflictsPersistedError extends StoreUnavailableError {}

export function isStoreUnavailable(error: unknown): error is StoreUnavailableError {
  return error instanceof StoreUnavailableError;
}
