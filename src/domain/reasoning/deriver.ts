import { ModelError } from '../../llm/provider.js';
import type { ConclusionRecord, ConclusionScope, OpenRepresentationItem, Supersession } from '../../storage/store.js';
import { rankConclusionsByText } from '../memory/conclusion-search.js';
import { inTransaction, type DomainContext } from '../context.js';
import { type RepresentPayload } from '../job-kinds.js';
import { saveConclusions, type SavedConclusion } from '../memory/deduplicate.js';
import { considerAutomaticDreams } from '../scheduling/dream-schedule.js';
import { embedderOf, embedInBatches, fixVectorSize } from '../search/embeddings.js';
import { emitQueueEmpty } from './queue-empty.js';
import { parseDerivedFacts, representationPrompt, REPRESENTATION_SCHEMA, type DerivedFact, type PromptMessage } from './representation-prompt.js';
import type { ReasoningSettings } from '../reasoning-settings.js';
import { completeStructured, ModelOutputError } from './structured-completion.js';
import { scheduleUnit, unitDue } from '../scheduling/queue-reasoning.js';

export { richness } from '../memory/deduplicate.js';

/*
 * The deriver (reasoning.md R2): creating messages queues representation items in the same
 * transaction, one per message and observed peer, and schedules their unit's job by the token
 * and age gates; the job reads a batch, asks the model for explicit facts, and stores them as
 * conclusions of every observer in one short transaction (no transaction is held while the model
 * answers). Summaries are queued the same way (summaries.ts).
 */


/** After a unit's batch is closed: its next job, or `queue.empty` when nothing is left (same transaction). */
async function afterBatch(ctx: DomainContext, settings: ReasoningSettings, unit: RepresentPayload, now: Date): Promise<void> {
  if ((await scheduleUnit(ctx, settings, unit, now)) > 0) return;
  await emitQueueEmpty(ctx, { queueType: 'representation', workspaceId: unit.workspaceId, sessionId: unit.sessionId, observedId: unit.observedId }, now);
}

/** How a representation job ended, for the job layer. */
export type RepresentOutcome =
  /** `superseded`: known facts the batch's facts replaced; `ignored`: replacements the model declared that were not taken, and why. */
  | { kind: 'done'; conclusions: number; reinforced: number; items: number; superseded: number; ignored: string[] }
  | { kind: 'skipped'; reason: string }
  | { kind: 'failed'; error: string; retryable: boolean };

/** The batch to process: the first open item always, then more in order up to the target tokens. */
export function pickBatch(items: readonly OpenRepresentationItem[], targetTokens: number): OpenRepresentationItem[] {
  const batch: OpenRepresentationItem[] = [];
  let tokens = 0;
  for (const item of items) {
    if (batch.length > 0 && tokens + item.tokens > targetTokens) break;
    batch.push(item);
    tokens += item.tokens;
  }
  return batch;
}

/**
 * Runs one batch of a unit: the job's work. `isLastAttempt`: when this attempt fails the job is
 * dead-lettered, so the batch's first item is closed with the error and the rest rescheduled,
 * and the unit goes on (the failure stays visible in the job record, the log and the metrics).
 */
export async function processRepresentationUnit(ctx: DomainContext, unit: RepresentPayload, options: { isLastAttempt: boolean; signal?: AbortSignal }): Promise<RepresentOutcome> {
  const reasoning = ctx.reasoning;
  const model = reasoning?.models.chat('deriver');
  if (reasoning === undefined || model === undefined) return { kind: 'failed', error: 'no deriver model is configured', retryable: false };
  const settings = reasoning.settings;
  const store = ctx.store;
  const open = await store.reasoning.openItems(unit.workspaceId, unit.sessionId, unit.observedId, 500);
  if (open.length === 0) return { kind: 'skipped', reason: 'no open items' };
  const now = ctx.now();
  const totals = { tokens: open.reduce((sum, item) => sum + item.tokens, 0), oldest: open.reduce<Date>((min, item) => (item.queuedAt < min ? item.queuedAt : min), open[0].queuedAt) };
  if (unitDue(settings, totals, now) > now) {
    // woken before its time (an earlier schedule): wait for the gates
    await inTransaction(ctx, (ctx) => scheduleUnit(ctx, settings, unit, now));
    return { kind: 'skipped', reason: 'unit below the token gate and younger than the age gate' };
  }

  const batch = pickBatch(open, settings.deriver.batchTargetInputTokens);
  const lines: PromptMessage[] = batch.map((item) => ({ peerId: item.peerId, content: item.content, createdAt: item.messageCreatedAt }));
  const before = await store.reasoning.messageBefore(unit.workspaceId, unit.sessionId, batch[0].messagePk);
  if (before !== undefined && before.peerId !== unit.observedId) lines.unshift({ peerId: before.peerId, content: before.content, createdAt: before.createdAt });
  const customInstructions = batch.find((item) => item.customInstructions !== null)?.customInstructions ?? undefined;
  const observers = [...new Set(batch.flatMap((item) => item.observers))];
  // the facts already known that the batch may change: the observed peer's own collection when it
  // observes itself, else the first observer's (the others hold the same facts, matched by text)
  const shownScope: ConclusionScope = {
    workspaceId: unit.workspaceId,
    observerId: observers.includes(unit.observedId) ? unit.observedId : observers[0],
    observedId: unit.observedId,
  };
  const known = await knownFacts(ctx, shownScope, lines.map((l) => l.content).join('\n'));

  let derived: DerivedFact[];
  let facts: string[];
  let vectors: number[][] | undefined;
  try {
    const answer = await completeStructured(
      model,
      {
        module: 'deriver',
        messages: [{ role: 'user', content: representationPrompt({ observedId: unit.observedId, messages: lines, customInstructions, known: known.map((c) => ({ content: c.content, validFrom: c.validFrom ?? c.createdAt })) }) }],
        json: { name: 'explicit_facts', schema: REPRESENTATION_SCHEMA },
        signal: options.signal,
      },
      parseDerivedFacts,
    );
    derived = answer.value;
    facts = derived.map((fact) => fact.content);
    // the facts' embeddings in one go, before the write transaction opens
    const embedder = embedderOf(ctx);
    vectors = embedder === undefined || facts.length === 0 ? undefined : await embedInBatches(embedder, facts, options.signal, ctx.reasoning?.settings.embeddingMaxTokensPerRequest);
  } catch (error) {
    // model failures only; anything else (the store going away) is the worker's to handle
    if (!(error instanceof ModelOutputError || error instanceof ModelError)) throw error;
    const retryable = error instanceof ModelOutputError || error.retryable;
    if (retryable && !options.isLastAttempt) return { kind: 'failed', error: error.message, retryable: true };
    await inTransaction(ctx, async (ctx) => {
      const tx = ctx.store;
      await tx.reasoning.markItems([batch[0]], ctx.now(), error.message.slice(0, 2000));
      await afterBatch(ctx, settings, unit, ctx.now());
    });
    return { kind: 'failed', error: error.message, retryable: false };
  }

  const sourceItems = batch.filter((item) => item.peerId === unit.observedId);
  const sourceIds = sourceItems.map((item) => item.messageId);
  // a fact holds from the time of the newest message it was drawn from
  const validFrom = (sourceItems.length > 0 ? sourceItems : batch).reduce<Date>((max, item) => (item.messageCreatedAt > max ? item.messageCreatedAt : max), new Date(0));
  const { replacements, ignored } = checkReplacements(derived, known);
  await fixVectorSize(ctx, vectors);
  let written: (Awaited<ReturnType<typeof storeExplicitConclusions>> & { superseded: Awaited<ReturnType<typeof supersedeKnown>> }) | undefined;
  try {
    written = await inTransaction(ctx, async (ctx) => {
      const tx = ctx.store;
      // the session may have been deleted and purged (its items with it) while the model answered,
      // or deleted with its workspace and created again by new writes: the batch's items are then
      // gone (and its observers may be), so nothing of it is written. Kept, not locked: nothing
      // here writes the session's row, and its message writes go on meanwhile.
      if ((await tx.sessions.findAndKeep(unit.workspaceId, unit.sessionId)) === undefined) return undefined;
      const marked = await tx.reasoning.markItems(batch, ctx.now(), null);
      if (marked === 0) return undefined;
      // some of the batch's messages were deleted meanwhile (forgotten, or their sender deleted):
      // the facts cannot be told apart by message, so none is written and the batch runs again
      // without them (the rollback reopens the rest)
      if (marked < batch.length) throw new BatchShrankError();
      const result = await storeExplicitConclusions(ctx, { ...unit, observers, sourceIds, facts, vectors, now: ctx.now(), validFrom });
      const superseded = await supersedeKnown(ctx, { ...unit, observers, shownObserverId: shownScope.observerId, facts, saved: result.saved, replacements, known, ignored });
      // Last, the rows a message write to the session also writes, in its order (the unit's job,
      // then the collections' dreams): held only until the commit that follows, never crosswise.
      await afterBatch(ctx, settings, unit, ctx.now());
      // new conclusions: a dream may now be due, or a waiting one postponed (dream-schedule.ts)
      if (facts.length > 0) {
        await considerAutomaticDreams(ctx, observers.map((observerId) => ({ workspaceId: unit.workspaceId, sessionId: unit.sessionId, observerId, observedId: unit.observedId })), ctx.now());
      }
      return { ...result, superseded };
    });
  } catch (error) {
    if (error instanceof BatchShrankError) return { kind: 'failed', error: error.message, retryable: true };
    throw error;
  }
  if (written === undefined) return { kind: 'skipped', reason: 'the session was deleted while its batch was with the model' };
  if (ignored.length > 0) ctx.reasoning?.onIgnoredOutput?.({ module: 'deriver', workspaceId: unit.workspaceId, ignored });
  return { kind: 'done', conclusions: written.created, reinforced: written.reinforced, items: batch.length, superseded: written.superseded, ignored };
}

/** Most known facts shown to the deriver with a batch. */
export const MAX_KNOWN_FACTS = 20;

/**
 * The current explicit facts of the collection that a batch may change: those sharing the most
 * words with the batch's text first, then the newest, at most MAX_KNOWN_FACTS. Two bounded reads;
 * none when the collection is empty.
 */
async function knownFacts(ctx: DomainContext, scope: ConclusionScope, text: string): Promise<ConclusionRecord[]> {
  const recent = await ctx.store.memory.recentConclusions(scope, MAX_KNOWN_FACTS);
  if (recent.length === 0) return [];
  const matched = await rankConclusionsByText(ctx.store, { ...scope, query: text, filter: null, limit: MAX_KNOWN_FACTS / 2 });
  const shown = new Map<string, ConclusionRecord>();
  for (const c of [...matched, ...recent]) if (c.level === 'explicit' && shown.size < MAX_KNOWN_FACTS) shown.set(c.id, c);
  return [...shown.values()];
}

/**
 * The replacements the model declared that can be taken: fact index -> indexes of the known facts
 * it replaces. Model output is untrusted: a number that is not one of the facts shown (or a
 * shown fact's id), or a known fact another new fact already replaces, is ignored with its reason.
 */
export function checkReplacements(derived: readonly DerivedFact[], known: readonly ConclusionRecord[]): { replacements: Map<number, number[]>; ignored: string[] } {
  const replacements = new Map<number, number[]>();
  const ignored: string[] = [];
  const taken = new Set<number>();
  for (const [factIndex, fact] of derived.entries()) {
    for (const ref of fact.replaces) {
      const index = typeof ref === 'number' && Number.isInteger(ref) && ref >= 1 && ref <= known.length ? ref - 1 : typeof ref === 'string' ? known.findIndex((c) => c.id === ref) : -1;
      const shown = JSON.stringify(ref)?.slice(0, 40) ?? String(ref);
      if (index < 0) ignored.push(`fact ${factIndex + 1} replaces ${shown}: not a fact that was shown`);
      else if (taken.has(index)) ignored.push(`fact ${factIndex + 1} replaces ${shown}: another fact of the answer replaces it already`);
      else {
        taken.add(index);
        replacements.set(factIndex, [...(replacements.get(factIndex) ?? []), index]);
      }
    }
  }
  return { replacements, ignored };
}

/**
 * Supersedes the known facts the batch's facts replace (inside the write transaction): in the
 * collection they were shown from by id, and in every other observer's collection the current
 * conclusion with the same text and session (the deriver stores a batch's facts for every
 * observer alike). A known fact superseded or deleted meanwhile, or one that the new fact merged
 * into, is left as it is (and said in `ignored`). Returns how many conclusions were superseded.
 */
async function supersedeKnown(
  ctx: DomainContext,
  work: {
    workspaceId: string;
    observedId: string;
    observers: string[];
    shownObserverId: string;
    facts: string[];
    saved: SavedConclusion[];
    replacements: Map<number, number[]>;
    known: readonly ConclusionRecord[];
    ignored: string[];
  },
): Promise<number> {
  if (work.replacements.size === 0) return 0;
  const { store } = ctx;
  const wanted: Supersession[] = [];
  for (const [observerIndex, observerId] of work.observers.entries()) {
    for (const [factIndex, knownIndexes] of work.replacements) {
      const holder = work.saved[observerIndex * work.facts.length + factIndex]?.record;
      if (holder === undefined) continue;
      for (const knownIndex of knownIndexes) {
        const old = work.known[knownIndex];
        let oldId: string | undefined = old.id;
        if (observerId !== work.shownObserverId) {
          const scope = { workspaceId: work.workspaceId, observerId, observedId: work.observedId, level: old.level, sessionId: old.sessionId };
          oldId = (await store.reasoning.liveConclusionsByContent(scope, [old.content])).get(old.content.trim().toLowerCase());
        }
        if (oldId !== undefined && oldId !== holder.id) wanted.push({ oldId, newId: holder.id });
      }
    }
  }
  const done = await store.memory.supersedeConclusions(work.workspaceId, wanted, ctx.now());
  const made = new Set(done.map((s) => s.oldId));
  for (const s of wanted) if (!made.has(s.oldId) && work.known.some((k) => k.id === s.oldId)) work.ignored.push(`${s.oldId}: no longer current when the answer was stored`);
  return done.length;
}

/** Some messages of a batch were deleted while the model answered: its work is dropped and run again. */
class BatchShrankError extends Error {
  constructor() {
    super('messages of the batch were deleted while the model answered; the batch runs again without them');
  }
}

/**
 * Stores facts as explicit conclusions of every observer, deduplicated (deduplicate.ts): exactly
 * always, semantically when DERIVER_DEDUPLICATE is on and the facts have vectors (`vectors[i]`
 * is the embedding of `facts[i]`, stored with each observer's conclusion).
 */
export async function storeExplicitConclusions(
  ctx: DomainContext,
  batch: { workspaceId: string; sessionId: string; observedId: string; observers: string[]; sourceIds: string[]; facts: string[]; vectors?: number[][]; now: Date; validFrom?: Date },
): Promise<{ created: number; reinforced: number; saved: SavedConclusion[] }> {
  const { store } = ctx;
  const drafts = batch.observers.flatMap((observerId) =>
    batch.facts.map((content, index) => ({
      record: {
        id: ctx.newId(),
        workspaceId: batch.workspaceId,
        observerId,
        observedId: batch.observedId,
        sessionId: batch.sessionId,
        content,
        level: 'explicit' as const,
        createdAt: batch.now,
        validFrom: batch.validFrom ?? batch.now,
        sourceIds: batch.sourceIds,
        timesDerived: 1,
      },
      vector: batch.vectors?.[index],
    })),
  );
  const saved = await saveConclusions(store, drafts, { semantic: ctx.reasoning?.settings.deriver.deduplicate ?? false, now: batch.now });
  return {
    created: saved.filter((s) => s.outcome === 'created' || s.outcome === 'replaced').length,
    reinforced: saved.filter((s) => s.outcome === 'reinforced').length,
    saved,
  };
}
