import { nanoid } from 'nanoid';
import type { Store } from '../storage/store.js';

export interface DomainLimits {
  /** Most observers (observe_others=true) per session. */
  sessionObservers: number;
  /** Most webhook endpoints per workspace. */
  webhookEndpoints: number;
  /** Attempts a background job gets before it is dead-lettered. */
  jobMaxAttempts: number;
}

/** What every domain verb works with: the store, the clock, ids and limits. */
export interface DomainContext {
  store: Store;
  now(): Date;
  newId(): string;
  limits: DomainLimits;
}

export function createDomainContext(store: Store, limits: DomainLimits, now: () => Date = () => new Date()): DomainContext {
  return { store, now, newId: () => nanoid(21), limits };
}

/** The same context bound to a transaction's store. */
export function within(ctx: DomainContext, store: Store): DomainContext {
  return { ...ctx, store };
}
