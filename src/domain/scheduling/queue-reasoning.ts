import type { JsonObject, MembershipRecord, MessageRecord, NewJob, NewRepresentationItem, SessionRecord, UnitTotals } from '../../storage/store.js';
import { inTransaction, type DomainContext, type ReasoningRuntime } from '../context.js';
import { newJob, REPRESENT, SUMMARIZE, type RepresentPayload, type SummarizePayload } from '../job-kinds.js';
import type { ReasoningSettings } from '../reasoning-settings.js';
import { messageEmbeddingJobs } from '../search/embeddings.js';
import { effectiveConfiguration } from './configuration.js';
import { postponeAutomaticDreams } from './dream-schedule.js';
import { observersOf } from './observers.js';

/*
 * The reasoning work that stored messages cause (reasoning.md R2): creating messages queues
 * representation items in the same transaction, one per message and observed peer, and schedules
 * their unit's job by the token and age gates; summaries are queued at their intervals; each
 * message's embedding is queued. The jobs themselves run in reasoning/ (deriver.ts, summaries.ts).
 */

/** A message as the deriver needs it: the stored record and the configuration sent with it. */
export interface DerivableMessage {
  record: MessageRecord;
  /** Its pk, when the caller just stored it (MessageStore.insert). */
  pk?: number;
  configuration?: JsonObject;
}

/** What the caller of queueReasoning read already in its transaction (each part left out is read), and where its new jobs go. */
export interface QueueOptions {
  workspaceConfiguration?: JsonObject;
  /** The session's memberships (left ones included), as `SessionStore.memberships` gives them now. */
  members?: readonly MembershipRecord[];
  /** The queue keys of the workspace's automatic dreams waiting to run, read in this transaction: only those are postponed (postponeAutomaticDreams). */
  waitingDreams?: ReadonlySet<string>;
  /**
   * The caller's own jobs (a write's deliveries), queued in the statement that queues the
   * reasoning's (its units' jobs as `scheduled`: a unit's pending job is moved instead), reasoning
   * on or off. The waiting dreams are postponed after it: a unit's job, then dreams, the lock
   * order of decision 0019.
   */
  jobs?: readonly NewJob[];
}

/** A session's summary unit: its jobs run one at a time, in order. */
export const summaryQueueKey = (p: { workspaceId: string; sessionId: string }) => `summary:${p.workspaceId}:${p.sessionId}`;

export const unitKey = (p: { workspaceId: string; sessionId: string; observedId: string }) => `representation:${p.workspaceId}:${p.sessionId}:${p.observedId}`;

/** When a unit's job should run: at once past the token gate or with flushing on, else when the oldest item ages out. */
export function unitDue(settings: ReasoningSettings, totals: { tokens: number; oldest: Date | undefined }, now: Date): Date {
  const gates = settings.deriver;
  if (gates.flushEnabled || gates.workUnitTargetTokens <= 0 || totals.tokens >= gates.workUnitTargetTokens || totals.oldest === undefined) return now;
  const aged = new Date(totals.oldest.getTime() + gates.batchMaxAgeSeconds * 1000);
  return aged < now ? now : aged;
}

/** Schedules the unit's job for its open items (`totals`, read when not given); returns how many are open (0: the unit has drained). */
export async function scheduleUnit(ctx: DomainContext, settings: ReasoningSettings, unit: RepresentPayload, now: Date, known?: UnitTotals): Promise<number> {
  const { store } = ctx;
  const totals = known ?? (await store.reasoning.openUnitTotals(unit.workspaceId, unit.sessionId, unit.observedId));
  if (totals.items === 0) return 0;
  await store.jobs.schedule(unitJob(ctx, unit), unitDue(settings, totals, now), now);
  return totals.items;
}

/** A new job of the unit (queued only when none is pending: schedule, or enqueue's `scheduled`). */
function unitJob(ctx: DomainContext, unit: RepresentPayload): NewJob {
  return newJob({ id: ctx.newId(), kind: REPRESENT, workspaceId: unit.workspaceId, queueKey: unitKey(unit), payload: unit, maxAttempts: ctx.limits.jobMaxAttempts });
}

/** The peers' own configurations of `members` (read with the memberships: no look-up a member), by peer. */
function memberPeerConfigurations(members: readonly MembershipRecord[]): Map<string, JsonObject> {
  return new Map(members.map((member) => [member.peerId, member.peerConfiguration ?? {}]));
}

/**
 * Queues the reasoning work of messages just stored in `session` (inside the caller's
 * transaction): representation items for the observers the configuration chooses, and summary
 * jobs at the intervals, and their embedding (embeddings.ts). `countBefore` is the session's message count before these messages;
 * `options`, what the caller read already and where the new jobs go (QueueOptions).
 * Does nothing while reasoning is off (`engram derive` queues such messages later).
 */
export async function queueReasoning(
  ctx: DomainContext,
  session: SessionRecord,
  messages: readonly DerivableMessage[],
  countBefore: number,
  now: Date,
  options: QueueOptions = {},
): Promise<void> {
  const { store } = ctx;
  const reasoning = ctx.reasoning;
  if (reasoning === undefined || messages.length === 0) {
    await store.jobs.enqueue(options.jobs ?? [], now);
    return;
  }
  const jobs = messageEmbeddingJobs(ctx, messages.map((m) => m.record));
  const collections: { workspaceId: string; observerId: string; observedId: string }[] = [];
  const canDerive = reasoning.models.chat('deriver') !== undefined;
  const canSummarize = reasoning.models.chat('summary') !== undefined;
  if (canDerive || canSummarize) {
    const { workspaceId, id: sessionId } = session;
    const workspaceConfiguration = options.workspaceConfiguration ?? (await store.workspaces.find(workspaceId))?.configuration ?? {};
    const members = (options.members ?? (await store.sessions.memberships(workspaceId, sessionId))).filter((m) => m.leftAt === null);
    const peerConfigurations = memberPeerConfigurations(members);

    const items: NewRepresentationItem[] = [];
    messages.forEach(({ record, pk, configuration }, index) => {
      const config = effectiveConfiguration(reasoning.settings, { workspace: workspaceConfiguration, session: session.configuration, message: configuration });
      if (canDerive && config.reasoningEnabled) {
        const observers = observersOf(record.peerId, members, peerConfigurations);
        if (observers.length > 0) {
          items.push({
            workspaceId,
            sessionId,
            observedId: record.peerId,
            messageId: record.id,
            messagePk: pk,
            tokens: record.tokenCount,
            observers,
            customInstructions: config.customInstructions ?? null,
          });
        }
      }
      const seq = countBefore + index + 1;
      if (canSummarize && config.summaryEnabled) {
        const kinds: ('short' | 'long')[] = [];
        if (seq % config.messagesPerShortSummary === 0) kinds.push('short');
        if (seq % config.messagesPerLongSummary === 0) kinds.push('long');
        if (kinds.length === 0) return;
        const payload: SummarizePayload = { workspaceId, sessionId, messageId: record.id, messageSeq: seq, kinds };
        jobs.push(newJob({ id: ctx.newId(), kind: SUMMARIZE, workspaceId, queueKey: summaryQueueKey({ workspaceId, sessionId }), payload, maxAttempts: ctx.limits.jobMaxAttempts }));
      }
    });
    await queueItems(ctx, reasoning, items, now, jobs);
    for (const item of items) for (const observerId of item.observers) collections.push({ workspaceId, observerId, observedId: item.observedId });
  }
  await store.jobs.enqueue([...jobs, ...(options.jobs ?? [])], now);
  // new messages are activity in their collections: a waiting automatic dream waits longer
  if (collections.length > 0) await postponeAutomaticDreams(ctx, collections, now, options.waitingDreams);
}

/**
 * Adds the items and adds their units' jobs to `jobs` as `scheduled`, for the caller to queue
 * with its own: a unit's pending job is brought forward, the job of a unit with none is queued.
 */
async function queueItems(ctx: DomainContext, reasoning: ReasoningRuntime, items: NewRepresentationItem[], now: Date, jobs: NewJob[]): Promise<number> {
  const { store } = ctx;
  if (items.length === 0) return 0;
  // the items of each session (a write's are all of one), added with their units' totals
  const sessions = new Map<string, NewRepresentationItem[]>();
  for (const item of items) {
    const key = JSON.stringify([item.workspaceId, item.sessionId]);
    const ofSession = sessions.get(key);
    if (ofSession === undefined) sessions.set(key, [item]);
    else ofSession.push(item);
  }
  let added = 0;
  for (const sessionItems of sessions.values()) {
    const { workspaceId, sessionId } = sessionItems[0];
    const queued = await store.reasoning.addItemsWithTotals(sessionItems, now);
    added += queued.added;
    for (const observedId of new Set(sessionItems.map((item) => item.observedId))) {
      const totals = queued.totals.get(observedId);
      if (totals === undefined || totals.items === 0) continue;
      jobs.push({ ...unitJob(ctx, { workspaceId, sessionId, observedId }), runAfter: unitDue(reasoning.settings, totals, now), scheduled: true });
    }
  }
  return added;
}

/**
 * `engram derive`: queues representation work for stored messages that have none (messages
 * written while no model was configured), with each session's current members and configuration.
 * Returns how many items were queued.
 */
export async function deriveStoredMessages(ctx: DomainContext, scope: { workspaceId?: string; sessionId?: string }): Promise<number> {
  const reasoning = ctx.reasoning;
  if (reasoning === undefined || reasoning.models.chat('deriver') === undefined) throw new Error('no deriver model is configured');
  let after = 0;
  let queued = 0;
  for (;;) {
    const page = await ctx.store.reasoning.messagesAfter(scope, after, 500);
    if (page.length === 0) return queued;
    after = page[page.length - 1].pk;
    const bySession = new Map<string, MessageRecord[]>();
    for (const message of page) {
      const key = `${message.workspaceId}\u0000${message.sessionId}`;
      bySession.set(key, [...(bySession.get(key) ?? []), message]);
    }
    for (const messages of bySession.values()) {
      queued += await inTransaction(ctx, async (ctx) => {
        const { store } = ctx;
        const session = await store.sessions.find(messages[0].workspaceId, messages[0].sessionId);
        if (session === undefined || !session.isActive) return 0;
        const workspace = await store.workspaces.find(session.workspaceId);
        const members = (await store.sessions.memberships(session.workspaceId, session.id)).filter((m) => m.leftAt === null);
        const peers = memberPeerConfigurations(members);
        const items: NewRepresentationItem[] = [];
        for (const record of messages) {
          const config = effectiveConfiguration(reasoning.settings, { workspace: workspace?.configuration ?? {}, session: session.configuration });
          if (!config.reasoningEnabled) continue;
          const observers = observersOf(record.peerId, members, peers);
          if (observers.length === 0) continue;
          items.push({
            workspaceId: session.workspaceId,
            sessionId: session.id,
            observedId: record.peerId,
            messageId: record.id,
            tokens: record.tokenCount,
            observers,
            customInstructions: config.customInstructions ?? null,
          });
        }
        const jobs: NewJob[] = [];
        const added = await queueItems(ctx, reasoning, items, ctx.now(), jobs);
        await store.jobs.enqueue(jobs, ctx.now());
        return added;
      });
    }
  }
}
