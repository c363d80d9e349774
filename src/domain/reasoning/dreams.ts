import { ModelError, type ChatModel, type JsonSchema, type ModelModule } from '../../llm/provider.js';
import type { ConclusionRecord, ConclusionScope } from '../../storage/store.js';
import { inTransaction, type DomainContext } from '../context.js';
import { rankConclusionsByText } from '../memory/conclusion-search.js';
import { effectiveConfiguration } from '../scheduling/configuration.js';
import { saveConclusions, type ConclusionDraft } from '../memory/deduplicate.js';
import { dreamQueueKey } from '../scheduling/dream-schedule.js';
import { emitQueueEmpty } from './queue-empty.js';
import { embedderOf, embedInBatches, fixVectorSize } from '../search/embeddings.js';
import { applyCardUpdate, CARD_ENTRY_MAX_CHARS, CARD_MAX_ENTRIES } from './peer-card.js';
import { runToolLoop, type Tool } from './tool-loop.js';
import { type DreamPayload } from '../job-kinds.js';

/*
 * Dreams (reasoning.md R6): specialists that reread a collection's conclusions with tools.
 * omni: a deduction specialist (up to 12 tool turns: recent conclusions, memory and message
 * search, create deductive conclusions from source conclusions with premises, supersede
 * contradicted conclusions by the newer ones (never deleting them), delete wrong ones, rewrite the
 * peer card), then an induction specialist (up to 10: the same discovery
 * tools, create inductive conclusions from at least two sources). card_refresh: one specialist (up
 * to 6) that only rewrites the card. Every write is its own short transaction, made when the
 * tool runs; no transaction is held while the model thinks.
 *
 * A derived conclusion keeps its source conclusions' ids (`source_ids`), is stored in the session
 * of its newest source with that source's time (the reference's rule), and records every session
 * its sources came from (`source_session_ids`, their own source sessions included), so a session
 * allowlist shows it only when all of them are allowed.
 */

export const DEDUCTION_TURNS = 12;
export const INDUCTION_TURNS = 10;
export const CARD_REFRESH_TURNS = 6;
/** Most conclusions one discovery call returns. */
const DISCOVERY_LIMIT = 30;

export type DreamOutcome = { kind: 'done'; created: number; deleted: number; superseded: number; cardUpdated: boolean } | { kind: 'failed'; error: string; retryable: boolean };

const words = (text: string) => text.match(/[\p{L}\p{N}]+/gu)?.slice(0, 32) ?? [];

function describe(c: ConclusionRecord): string {
  const sources = c.sourceIds === null || c.sourceIds.length === 0 ? '' : ` sources=${c.sourceIds.join(',')}`;
  return `- id=${c.id} [${c.level}] (${c.createdAt.toISOString()}, session ${c.sessionId ?? 'none'}${sources}) ${c.content}`;
}

interface DreamWork {
  created: number;
  deleted: number;
  superseded: number;
  cardUpdated: boolean;
}

/** A tool that takes one non-empty `query` string. */
function queryTool(name: string, description: string, answer: (query: string) => Promise<string>): Tool {
  return {
    name,
    description,
    parameters: { type: 'object', properties: { query: { type: 'string', minLength: 1 } }, required: ['query'], additionalProperties: false },
    execute: (args) => answer(String(args.query)),
  };
}

/**
 * The arguments of a tool that stores 1 to 20 conclusions under `list`: each a content drawn from
 * at least `minSources` stored conclusions (`source_ids`), with the `more` properties of its level.
 */
function derivationParameters(list: string, minSources: number, more: JsonSchema): JsonSchema {
  const item = {
    type: 'object',
    properties: {
      content: { type: 'string', minLength: 1, maxLength: 2000 },
      source_ids: { type: 'array', minItems: minSources, items: { type: 'string' } },
      ...more,
    },
    required: ['content', 'source_ids'],
  };
  return { type: 'object', properties: { [list]: { type: 'array', minItems: 1, maxItems: 20, items: item } }, required: [list] };
}

function dreamTools(ctx: DomainContext, payload: DreamPayload, work: DreamWork, options: { deduce?: boolean; induce?: boolean; card?: boolean; discover?: boolean }): Tool[] {
  const scope: ConclusionScope = { workspaceId: payload.workspaceId, observerId: payload.observerId, observedId: payload.observedId };
  const { store } = ctx;
  const tools: Tool[] = [];

  const derive = async (level: 'deductive' | 'inductive', items: { content: string; source_ids: string[]; metadata: Record<string, unknown> }[], signal?: AbortSignal): Promise<string> => {
    const report: string[] = [];
    const accepted: { item: (typeof items)[number]; sources: ConclusionRecord[] }[] = [];
    for (const item of items) {
      const ids = [...new Set(item.source_ids)];
      const sources = await store.memory.conclusionsByIds(scope, ids, null);
      const missing = ids.filter((id) => !sources.some((s) => s.id === id));
      if (missing.length > 0) report.push(`refused "${item.content.slice(0, 60)}": unknown source ids ${missing.join(', ')}`);
      else if (level === 'inductive' && sources.length < 2) report.push(`refused "${item.content.slice(0, 60)}": an induction needs at least 2 sources`);
      else accepted.push({ item, sources });
    }
    if (accepted.length === 0) return report.join('\n') || 'nothing to create';
    const embedder = embedderOf(ctx);
    const vectors = embedder === undefined ? undefined : await embedInBatches(embedder, accepted.map((a) => a.item.content), signal, ctx.reasoning?.settings.embeddingMaxTokensPerRequest);
    await fixVectorSize(ctx, vectors);
    const now = ctx.now();
    const drafts: ConclusionDraft[] = accepted.map(({ item, sources }, index) => {
      const newest = sources.reduce((a, b) => (b.createdAt > a.createdAt ? b : a));
      const sessions = new Set<string>();
      for (const source of sources) {
        if (source.sessionId !== null) sessions.add(source.sessionId);
        for (const id of source.sourceSessionIds ?? []) sessions.add(id);
      }
      return {
        record: {
          id: ctx.newId(),
          workspaceId: payload.workspaceId,
          observerId: payload.observerId,
          observedId: payload.observedId,
          sessionId: newest.sessionId,
          content: item.content.trim(),
          level,
          sourceIds: sources.map((s) => s.id),
          sourceSessionIds: [...sessions].sort(),
          metadata: item.metadata,
          timesDerived: 1,
          createdAt: newest.createdAt,
          // it holds from when the newest of the facts it rests on became true
          validFrom: sources.reduce<Date>((max, source) => ((source.validFrom ?? source.createdAt) > max ? (source.validFrom ?? source.createdAt) : max), new Date(0)),
        },
        vector: vectors?.[index],
      };
    });
    const { saved, gone } = await store.transaction(async (tx) => {
      // the sources again, in the write's transaction: a session purged or a peer deleted while
      // the model answered took its conclusions with it, and a deduction from them has no ground
      const sourceIds = [...new Set(drafts.flatMap((draft) => draft.record.sourceIds ?? []))];
      const live = new Set((await tx.memory.conclusionsByIds(scope, sourceIds, null)).map((c) => c.id));
      const grounded = drafts.filter((draft) => (draft.record.sourceIds ?? []).every((id) => live.has(id)));
      const semantic = ctx.reasoning?.settings.deriver.deduplicate ?? false;
      return { saved: await saveConclusions(tx, grounded, { semantic, now }), gone: drafts.filter((draft) => !grounded.includes(draft)) };
    });
    for (const { record } of gone) report.push(`refused "${record.content.slice(0, 60)}": its source conclusions were deleted meanwhile`);
    for (const s of saved) {
      if (s.outcome === 'created' || s.outcome === 'replaced') work.created++;
      report.push(`${s.outcome}: id=${s.record.id} ${s.record.content}`);
    }
    return report.join('\n');
  };

  if (options.discover !== false) {
    tools.push({
      name: 'get_recent_observations',
      description: `The newest conclusions about the peer (up to ${DISCOVERY_LIMIT}), with their ids, levels, times and sources.`,
      parameters: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: DISCOVERY_LIMIT } }, additionalProperties: false },
      async execute(args) {
        const found = await store.memory.recentConclusions(scope, typeof args.limit === 'number' ? args.limit : DISCOVERY_LIMIT);
        return found.length === 0 ? 'no conclusions' : found.map(describe).join('\n');
      },
    });
    tools.push(
      queryTool('search_memory', 'Conclusions about the peer that best match the words of the query, best match first.', async (query) => {
        const found = await rankConclusionsByText(store, { ...scope, query, filter: null, limit: DISCOVERY_LIMIT });
        return found.length === 0 ? 'no match' : found.map(describe).join('\n');
      }),
    );
    tools.push(
      queryTool('search_messages', 'Messages the peer sent that the observer could see, holding every word of the query, newest first.', async (query) => {
        const terms = words(query);
        if (terms.length === 0) return 'no words to search for';
        const found = await store.messages.searchCandidates({
          workspaceId: payload.workspaceId,
          peerId: payload.observedId,
          terms,
          filter: null,
          peerPerspective: payload.observerId,
          candidates: 20,
        });
        return found.length === 0 ? 'no match' : found.map((m) => `- message ${m.id}: ${m.content.slice(0, 1000)}`).join('\n');
      }),
    );
  }
  if (options.deduce) {
    tools.push({
      name: 'create_deductions',
      description: 'Store deductive conclusions: what follows with certainty from stored conclusions (source_ids: their ids; premises: the facts it follows from).',
      parameters: derivationParameters('deductions', 1, { premises: { type: 'array', items: { type: 'string' } } }),
      execute: (args, signal) =>
        derive(
          'deductive',
          (args.deductions as { content: string; source_ids: string[]; premises?: string[] }[]).map((d) => ({ content: d.content, source_ids: d.source_ids, metadata: { premises: d.premises ?? [] } })),
          signal,
        ),
    });
    tools.push({
      name: 'supersede_conclusions',
      description:
        'Retire conclusions that a newer conclusion contradicts (a fact that changed: "lives in Lisbon" then "moved to Porto"): each of `ids` is marked superseded by `superseded_by`, the current conclusion that replaces it, and kept in its history.',
      parameters: {
        type: 'object',
        properties: {
          ids: { type: 'array', minItems: 1, maxItems: 50, items: { type: 'string' } },
          superseded_by: { type: 'string' },
          reason: { type: 'string' },
        },
        required: ['ids', 'superseded_by'],
      },
      async execute(args) {
        const newId = String(args.superseded_by);
        const [replacement] = await store.memory.conclusionsByIds(scope, [newId], null);
        if (replacement === undefined) return `${newId}: no such current conclusion about this peer; nothing was superseded`;
        const report: string[] = [];
        const wanted: { oldId: string; newId: string }[] = [];
        for (const id of new Set((args.ids as unknown[]).map(String))) {
          const [old] = await store.memory.conclusionsByIds(scope, [id], null);
          if (old === undefined) report.push(`${id}: no such current conclusion about this peer`);
          else if (id === newId) report.push(`${id}: a conclusion cannot supersede itself`);
          else if ((old.validFrom ?? old.createdAt) > (replacement.validFrom ?? replacement.createdAt)) report.push(`${id}: it is newer than ${newId}; an older fact cannot replace a newer one`);
          else wanted.push({ oldId: id, newId });
        }
        const done = await store.memory.supersedeConclusions(payload.workspaceId, wanted, ctx.now());
        work.superseded += done.length;
        const made = new Set(done.map((s) => s.oldId));
        for (const { oldId } of wanted) report.push(made.has(oldId) ? `${oldId}: superseded by ${newId}` : `${oldId}: no longer current`);
        const ignored = report.filter((line) => !line.includes(': superseded by '));
        if (ignored.length > 0) ctx.reasoning?.onIgnoredOutput?.({ module: 'dream_deduction', workspaceId: payload.workspaceId, ignored });
        return report.join('\n');
      },
    });
    tools.push({
      name: 'delete_conclusions',
      description: 'Delete conclusions that are wrong or duplicates (by id). A fact that changed is not deleted: supersede it (supersede_conclusions).',
      parameters: {
        type: 'object',
        properties: { ids: { type: 'array', minItems: 1, maxItems: 50, items: { type: 'string' } }, reason: { type: 'string' } },
        required: ['ids'],
      },
      async execute(args) {
        const report: string[] = [];
        for (const id of new Set(args.ids as string[])) {
          const [found] = await store.memory.conclusionsByIds(scope, [id], null);
          if (found === undefined) {
            report.push(`${id}: no such conclusion about this peer`);
            continue;
          }
          if (await store.memory.softDeleteConclusion(payload.workspaceId, id, ctx.now())) {
            work.deleted++;
            report.push(`${id}: deleted`);
          }
        }
        return report.join('\n');
      },
    });
  }
  if (options.induce) {
    tools.push({
      name: 'create_inductions',
      description: 'Store inductive conclusions: patterns seen across at least two stored conclusions (source_ids), with the kind of pattern and a confidence.',
      parameters: derivationParameters('inductions', 2, { pattern_type: { type: 'string' }, confidence: { type: 'string', enum: ['low', 'medium', 'high'] } }),
      execute: (args, signal) =>
        derive(
          'inductive',
          (args.inductions as { content: string; source_ids: string[]; pattern_type?: string; confidence?: string }[]).map((d) => ({
            content: d.content,
            source_ids: d.source_ids,
            metadata: { pattern_type: d.pattern_type ?? null, confidence: d.confidence ?? null },
          })),
          signal,
        ),
    });
  }
  if (options.card) {
    tools.push({
      name: 'update_peer_card',
      description: `Replace the whole peer card: at most ${CARD_MAX_ENTRIES} entries of at most ${CARD_ENTRY_MAX_CHARS} characters, each starting with "IDENTITY: ", "ATTRIBUTE: ", "RELATIONSHIP: " or "INSTRUCTION: ".`,
      parameters: { type: 'object', properties: { entries: { type: 'array', items: { type: 'string' } } }, required: ['entries'] },
      async execute(args) {
        const update = applyCardUpdate(args.entries as unknown[]);
        const refused = update.rejected.map((r) => `refused "${r.entry.slice(0, 80)}": ${r.reason}`);
        if (update.card === undefined) return ['no valid entry: the card is kept as it was', ...refused].join('\n');
        const card = update.card;
        const saved = await inTransaction(ctx, async (ctx) => {
          const tx = ctx.store;
          // both peers kept to the commit: one being deleted gets no card (its purge waits for this)
          const live = await tx.peers.keepLivePeers(payload.workspaceId, [payload.observerId, payload.observedId]);
          if (!live.has(payload.observerId) || (!live.has(payload.observedId) && (await tx.erasure.isDeleting(payload.workspaceId, payload.observedId)))) return false;
          await tx.memory.savePeerCard(payload.workspaceId, payload.observerId, payload.observedId, card, ctx.now());
          return true;
        });
        if (!saved) return 'the observer no longer exists; the card was not stored';
        work.cardUpdated = true;
        return [`card stored with ${card.length} entries`, ...refused].join('\n');
      },
    });
  }
  return tools;
}

function briefing(payload: DreamPayload, card: string[] | undefined, role: string): string {
  const about = payload.observerId === payload.observedId ? `the peer "${payload.observedId}"` : `the peer "${payload.observedId}" as "${payload.observerId}" knows them`;
  const cardText = card === undefined || card.length === 0 ? '(no card yet)' : card.map((entry) => `- ${entry}`).join('\n');
  return [
    `You consolidate the memory about ${about}. ${role}`,
    payload.rebuild ? 'Rebuild: reread everything known, not only what is new.' : 'Start from the newest conclusions.',
    `Current peer card:\n${cardText}`,
    'Use the tools; when finished, answer with one short sentence saying what you changed.',
  ].join('\n\n');
}

async function specialist(ctx: DomainContext, model: ChatModel, module: ModelModule, prompt: string, tools: Tool[], turns: number, signal?: AbortSignal): Promise<void> {
  const limits = ctx.reasoning?.settings.dream;
  const maxIterations = Math.min(turns, limits?.maxToolIterations ?? turns);
  const maxToolOutputChars = ctx.reasoning?.settings.chat?.maxToolOutputChars;
  await runToolLoop({ model, module, messages: [{ role: 'user', content: prompt }], tools, maxIterations, maxInputTokens: limits?.historyTokenLimit, maxToolOutputChars, signal });
}

/** Runs one dream; on success of an omni dream the collection's last dream time and explicit count are stored. */
export async function runDream(ctx: DomainContext, payload: DreamPayload, options: { jobId?: string; signal?: AbortSignal } = {}): Promise<DreamOutcome> {
  const { signal } = options;
  const reasoning = ctx.reasoning;
  const deduction = reasoning?.models.chat('dream_deduction');
  if (reasoning === undefined || deduction === undefined) return { kind: 'failed', error: 'no dream model is configured', retryable: false };
  const induction = reasoning.models.chat('dream_induction') ?? deduction;
  const { store } = ctx;
  // schedule_dream checks nothing exists (as the reference): a dream about nobody has nothing to do
  if ((await store.peers.find(payload.workspaceId, payload.observerId)) === undefined) return { kind: 'done', created: 0, deleted: 0, superseded: 0, cardUpdated: false };
  const workspace = await store.workspaces.find(payload.workspaceId);
  const session = payload.sessionId === null ? undefined : await store.sessions.find(payload.workspaceId, payload.sessionId);
  const config = effectiveConfiguration(reasoning.settings, { workspace: workspace?.configuration ?? {}, session: session?.configuration ?? {} });
  const cardAllowed = config.peerCardCreate;
  const card = payload.rebuild ? undefined : await store.memory.findPeerCard(payload.workspaceId, payload.observerId, payload.observedId);
  const work: DreamWork = { created: 0, deleted: 0, superseded: 0, cardUpdated: false };
  try {
    if (payload.dreamType === 'card_refresh') {
      if (cardAllowed) {
        const prompt = briefing(payload, card, 'Rewrite only the peer card from what is known (update_peer_card); create no conclusions.');
        await specialist(ctx, deduction, 'dream_deduction', prompt, dreamTools(ctx, payload, work, { card: true }), CARD_REFRESH_TURNS, signal);
      }
    } else {
      const deducePrompt = briefing(
        payload,
        card,
        `Find what follows with certainty from the stored conclusions (create_deductions, naming the source conclusion ids and the premises), retire conclusions that newer ones contradict by superseding them with the newer one (supersede_conclusions; delete_conclusions is only for wrong or duplicate ones)${cardAllowed ? ', and keep the peer card current (update_peer_card)' : ''}.`,
      );
      await specialist(ctx, deduction, 'dream_deduction', deducePrompt, dreamTools(ctx, payload, work, { deduce: true, card: cardAllowed }), DEDUCTION_TURNS, signal);
      const inducePrompt = briefing(payload, card, 'Find patterns that hold across at least two stored conclusions (create_inductions, with the source ids, the kind of pattern and a confidence).');
      await specialist(ctx, induction, 'dream_induction', inducePrompt, dreamTools(ctx, payload, work, { induce: true }), INDUCTION_TURNS, signal);
    }
  } catch (error) {
    if (!(error instanceof ModelError)) throw error;
    return { kind: 'failed', error: error.message, retryable: error.retryable };
  }
  await inTransaction(ctx, async (ctx) => {
    const tx = ctx.store;
    // the collection's dream work drained: queue.empty (queue_type dream), in the same transaction
    const others = (await tx.jobs.openJobs(dreamQueueKey(payload))).filter((job) => job.id !== options.jobId);
    if (others.length === 0) {
      await emitQueueEmpty(ctx, { queueType: 'dream', workspaceId: payload.workspaceId, sessionId: payload.sessionId, observedId: payload.observedId, observerId: payload.observerId }, ctx.now());
    }
    // only the omni dream consolidates the collection; card_refresh leaves the automatic schedule alone
    if (payload.dreamType !== 'omni' || (await tx.peers.find(payload.workspaceId, payload.observerId)) === undefined) return;
    const explicit = await tx.memory.countConclusions({ workspaceId: payload.workspaceId, observerId: payload.observerId, observedId: payload.observedId }, 'explicit');
    await tx.memory.saveDreamState(payload.workspaceId, payload.observerId, payload.observedId, { lastDreamAt: ctx.now(), explicitAtLastDream: explicit });
  });
  return { kind: 'done', ...work };
}
