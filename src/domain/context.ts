import { nanoid } from 'nanoid';
import type { Models } from '../llm/provider.js';
import type { Store } from '../storage/store.js';
import type { ChatReport } from './chat-report.js';
import type { ReasoningSettings } from './reasoning-settings.js';
import { eventLoopTurns, immediateTurns, type Turns } from './turns.js';

export interface DomainLimits {
  /** Most observers (observe_others=true) per session. */
  sessionObservers: number;
  /** Most webhook endpoints per workspace. */
  webhookEndpoints: number;
  /** Attempts a background job gets before it is dead-lettered. */
  jobMaxAttempts: number;
  /** false: deliveries to one endpoint are not kept in order (WEBHOOK_ORDERED); default true. */
  webhooksInOrder?: boolean;
}

/** The reasoning layer's settings and the models of this process (a module without one is off). */
export interface ReasoningRuntime {
  settings: ReasoningSettings;
  models: Models;
  /** Told what each chat used (tool calls, tokens): the log line and the metrics. */
  onChat?: (report: ChatReport) => void;
  /** Told of model output that was not taken (a replacement naming a fact that was not shown): the log. */
  onIgnoredOutput?: (report: { module: string; workspaceId: string; ignored: string[] }) => void;
}

/** What every domain verb works with: the store, the clock, ids, limits and the models. */
export interface DomainContext {
  store: Store;
  now(): Date;
  newId(): string;
  limits: DomainLimits;
  /** undefined: no model is configured, reasoning is off (messages can be derived later). */
  reasoning?: ReasoningRuntime;
  /**
   * Turns at the event loop for work that holds it (turns.ts): on SQLite, whose statements run
   * on the event loop, this thread's queue; on PostgreSQL, whose work waits on the network
   * between steps, none.
   */
  turns: Turns;
}

export function createDomainContext(
  store: Store,
  limits: DomainLimits,
  now: () => Date = () => new Date(),
  reasoning?: ReasoningRuntime,
): DomainContext {
  return { store, now, newId: () => nanoid(21), limits, reasoning, turns: store.dialect === 'sqlite' ? eventLoopTurns : immediateTurns };
}

/**
 * The same context bound to a transaction's store. Work in the transaction takes no turn: the
 * work holding the turn may be waiting for the transaction to end (a SQLite read waits for an
 * open transaction).
 */
export function within(ctx: DomainContext, store: Store): DomainContext {
  return { ...ctx, store, turns: immediateTurns };
}

/**
 * Runs `fn` in one transaction with the context bound to it. Verbs name the parameter `ctx`
 * again (`inTransaction(ctx, async (ctx) => ...)`), so nothing inside can reach the store
 * outside the transaction: every helper they call gets the transaction through its context.
 */
export function inTransaction<T>(ctx: DomainContext, fn: (ctx: DomainContext) => Promise<T>): Promise<T> {
  return ctx.store.transaction((store) => fn(within(ctx, store)));
}

/**
 * The store's change token (Store.changeToken): the same while nothing has committed to the
 * database since; undefined when the store cannot tell.
 */
export function changeToken(ctx: DomainContext): string | undefined {
  return ctx.store.changeToken();
}
