/**
 * Search quality: recall@10 of questions asked in plain language over generated
 * conversations whose answering turns are known (qa-conversations.ts). Prints, per ranking,
 * the share of questions whose answering turn is among the first 10 results:
 *
 * - `any term, BM25`: message search as served without an embedding model, i.e. full text
 *   alone (src/domain/messages/search.ts);
 * - `every word`: the search before it, which required every word of the query (the newest
 *   1,000 messages holding all of them, ranked by term frequency);
 * - with an embedding model (EVAL_EMBEDDING_BASE_URL): `vector alone` (the vector half of
 *   the search, vector-search.ts) and `hybrid` (message search as served with an embedding
 *   model: both rankings fused by reciprocal rank fusion). The conversations' messages are
 *   embedded first, as the background job embeds them (embedStoredMessages), and each question
 *   is embedded by the search itself, all through Engram's openai transport (src/llm), which
 *   speaks to OpenAI and to OpenAI-compatible servers such as Ollama.
 *
 * Without EVAL_EMBEDDING_BASE_URL the hybrid line says why it is not measured: the only model
 * at hand offline is the fake server's hashed vectors, which carry no meaning, so recall with
 * them would measure noise.
 *
 * Environment: EVAL_EMBEDDING_BASE_URL (e.g. http://127.0.0.1:11434/v1 for Ollama),
 * EVAL_EMBEDDING_MODEL (e.g. nomic-embed-text; default text-embedding-3-small),
 * EVAL_EMBEDDING_API_KEY (OpenAI; Ollama needs none), EVAL_EMBEDDING_DIMENSIONS (optional).
 *
 * Conclusion search: recall@10 of questions about generated facts (qa-facts.ts: paraphrased,
 * numeric and named-entity questions), each fact stored as a conclusion of its person's
 * collection, asked through `conclusions/query`'s ranking (queryConclusions, without an
 * embedding model), next to plain BM25 over the same facts (lower-cased words, no stems, stop
 * words kept, the collection's statistics).
 *
 * Run alone with `npx tsx bench/search-eval.ts`; `npm run bench` runs it too. It loads the
 * conversations through the store into a fresh in-memory SQLite database, or into
 * PostgreSQL with BENCH_DATABASE_URL.
 */
import { pathToFileURL } from 'node:url';
import { openDatabase } from '../src/runtime/database.js';
import { parseReasoningConfig } from '../src/config/reasoning.js';
import { createDomainContext, type DomainContext, type ReasoningRuntime } from '../src/domain/context.js';
import { rankCandidates } from '../src/domain/search/rank.js';
import { searchMessages, searchTerms } from '../src/domain/messages/search.js';
import { rankMessagesByVector } from '../src/domain/messages/vector-search.js';
import { embedStoredMessages } from '../src/domain/search/embeddings.js';
import { buildModels } from '../src/llm/models.js';
import type { Embedder } from '../src/llm/provider.js';
import { queryConclusions } from '../src/domain/memory/conclusions.js';
import type { ConclusionRecord, MessageRecord, Store } from '../src/storage/store.js';
import { factSets, type FactSet } from './qa-facts.js';
import { qaConversations, type QaConversation } from './qa-conversations.js';
import { MESSAGES_PER_EMBED_JOB } from '../src/domain/job-kinds.js';
import { CURRENT_RULES } from '../src/domain/filters/filters.js';

/** Ranks the messages of a session for a question: message ids, best first. */
export type Ranker = (ctx: DomainContext, workspaceId: string, sessionId: string, question: string) => Promise<string[]>;

const fullText: Ranker = async (ctx, workspaceId, sessionId, question) =>
  (await searchMessages(ctx, { workspaceId, sessionId }, { query: question, filters: null, limit: 10, rules: CURRENT_RULES })).map((m) => m.id);

const everyWord: Ranker = async (ctx, workspaceId, sessionId, question) => {
  const terms = searchTerms(question);
  const candidates = await ctx.store.messages.searchCandidates({ workspaceId, sessionId, terms, filter: null, candidates: 1000 });
  return rankCandidates(terms, candidates, 10).map((c) => c.id);
};

/** The ctx of a ranking with the embedding model: message search is then hybrid, as served. */
function withModel(ctx: DomainContext, runtime: ReasoningRuntime): DomainContext {
  return { ...ctx, reasoning: runtime };
}

/** Message search as served with an embedding model: full text and vectors fused (search.ts). */
export function hybridRanker(runtime: ReasoningRuntime): Ranker {
  return async (ctx, workspaceId, sessionId, question) =>
    (await searchMessages(withModel(ctx, runtime), { workspaceId, sessionId }, { query: question, filters: null, limit: 10, rules: CURRENT_RULES })).map((m) => m.id);
}

/** The vector half of the hybrid search alone. */
export function vectorRanker(runtime: ReasoningRuntime): Ranker {
  return async (ctx, workspaceId, sessionId, question) =>
    (await rankMessagesByVector(withModel(ctx, runtime), { workspaceId, sessionId }, { query: question, filters: null, limit: 10, rules: CURRENT_RULES })) ?? [];
}

/** An embedder that counts its calls and failures (a failing model makes the search fall back to full text silently). */
export interface CountingEmbedder extends Embedder {
  calls: number;
  failures: number;
  lastError?: string;
}

function counting(embedder: Embedder): CountingEmbedder {
  const counted: CountingEmbedder = {
    name: embedder.name,
    calls: 0,
    failures: 0,
    dimensions: () => embedder.dimensions(),
    async embed(texts, signal) {
      counted.calls++;
      try {
        return await embedder.embed(texts, signal);
      } catch (error) {
        counted.failures++;
        counted.lastError = error instanceof Error ? error.message : String(error);
        throw error;
      }
    },
  };
  return counted;
}

/**
 * The evaluation's embedding model from EVAL_EMBEDDING_* (read as Engram reads LLM_OPENAI_BASE_URL,
 * LLM_OPENAI_API_KEY, EMBEDDING_MODEL and EMBEDDING_VECTOR_DIMENSIONS), or undefined when
 * EVAL_EMBEDDING_BASE_URL is not set.
 */
export function evalEmbedding(env: NodeJS.ProcessEnv = process.env): { runtime: ReasoningRuntime; embedder: CountingEmbedder } | undefined {
  const baseUrl = env.EVAL_EMBEDDING_BASE_URL;
  if (baseUrl === undefined || baseUrl === '') return undefined;
  const settings: Record<string, string | undefined> = {
    LLM_OPENAI_BASE_URL: baseUrl,
    LLM_OPENAI_API_KEY: env.EVAL_EMBEDDING_API_KEY || undefined,
    EMBEDDING_MODEL: env.EVAL_EMBEDDING_MODEL || undefined,
    EMBEDDING_VECTOR_DIMENSIONS: env.EVAL_EMBEDDING_DIMENSIONS || undefined,
  };
  const problems: string[] = [];
  const { reasoning, models } = parseReasoningConfig((key) => settings[key], problems);
  if (problems.length > 0) throw new Error(`EVAL_EMBEDDING_*: ${problems.join('; ')}`);
  const built = buildModels(models).embedder;
  if (built === undefined) throw new Error('EVAL_EMBEDDING_BASE_URL is set but no embedding model could be built from it');
  const embedder = counting(built);
  return { runtime: { settings: reasoning, models: { chat: () => undefined, embedder } }, embedder };
}

/** Embeds every stored turn as the background job does (chunks, batches), in jobs of MESSAGES_PER_EMBED_JOB. */
async function embedConversations(ctx: DomainContext, workspaceId: string, ids: string[][]): Promise<number> {
  let chunks = 0;
  for (const [index, turnIds] of ids.entries()) {
    for (let start = 0; start < turnIds.length; start += MESSAGES_PER_EMBED_JOB) {
      const payload = { workspaceId, sessionId: `conversation-${index}`, messageIds: turnIds.slice(start, start + MESSAGES_PER_EMBED_JOB) };
      const outcome = await embedStoredMessages(ctx, payload);
      if (outcome.kind === 'failed') throw new Error(`embedding the conversation failed: ${outcome.error}`);
      if (outcome.kind === 'done') chunks += outcome.chunks;
    }
  }
  return chunks;
}

export const RANKERS: Record<string, Ranker> = { 'any term, BM25': fullText, 'every word': everyWord };

/** Stores each conversation as a session of its own; the ids of its turns, in order. */
export async function loadConversations(store: Store, workspaceId: string, conversations: QaConversation[]): Promise<string[][]> {
  const now = new Date();
  const ids: string[][] = [];
  await store.transaction(async (tx) => {
    await tx.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
    for (const [index, conversation] of conversations.entries()) {
      const sessionId = `conversation-${index}`;
      await tx.sessions.createIfAbsent(workspaceId, { id: sessionId, metadata: {}, configuration: {} }, now);
      await tx.peers.ensure(workspaceId, [...new Set(conversation.turns.map((turn) => turn.speaker))], now);
      const rows: MessageRecord[] = conversation.turns.map((turn, at) => ({
        id: `${workspaceId}-${index}-${at}`,
        workspaceId,
        sessionId,
        peerId: turn.speaker,
        content: turn.content,
        metadata: {},
        tokenCount: 0,
        createdAt: new Date(now.getTime() + at),
      }));
      for (let at = 0; at < rows.length; at += 500) await tx.messages.insert(rows.slice(at, at + 500));
      ids.push(rows.map((row) => row.id));
    }
  });
  return ids;
}

export interface RecallResult {
  ranker: string;
  questions: number;
  /** Share of questions whose answering turn is in the first 10, per conversation and over all. */
  perConversation: number[];
  recall: number;
  /** Median and slowest time per question, in ms. */
  p50Ms: number;
  maxMs: number;
}

/** recall@10 of each ranker over the conversations, which `loadConversations` stored. */
export async function measureRecall(ctx: DomainContext, workspaceId: string, conversations: QaConversation[], ids: string[][], rankers: Record<string, Ranker>): Promise<RecallResult[]> {
  const results: RecallResult[] = [];
  for (const [name, ranker] of Object.entries(rankers)) {
    const perConversation: number[] = [];
    const times: number[] = [];
    let found = 0;
    let asked = 0;
    for (const [index, conversation] of conversations.entries()) {
      let hits = 0;
      for (const { question, answer } of conversation.questions) {
        const started = performance.now();
        const ranked = await ranker(ctx, workspaceId, `conversation-${index}`, question);
        times.push(performance.now() - started);
        if (ranked.slice(0, 10).includes(ids[index][answer])) hits++;
      }
      perConversation.push(hits / conversation.questions.length);
      found += hits;
      asked += conversation.questions.length;
    }
    times.sort((a, b) => a - b);
    results.push({ ranker: name, questions: asked, perConversation, recall: found / asked, p50Ms: times[Math.floor(times.length / 2)], maxMs: times[times.length - 1] });
  }
  return results;
}

/** Words as plain BM25 takes them: lower case, letters and digits, nothing dropped or stemmed. */
const plainWords = (text: string): string[] => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/** Plain BM25 (k1 1.2, b 0.75) over one collection's facts: their indexes, best first. */
export function plainBm25(facts: readonly string[], question: string, limit: number): number[] {
  const docs = facts.map(plainWords);
  const average = docs.reduce((sum, d) => sum + d.length, 0) / docs.length;
  const terms = [...new Set(plainWords(question))];
  const idf = terms.map((term) => {
    const n = docs.filter((d) => d.includes(term)).length;
    return Math.log(1 + (docs.length - n + 0.5) / (n + 0.5));
  });
  const scores = docs.map((d) => {
    let score = 0;
    terms.forEach((term, i) => {
      const tf = d.filter((w) => w === term).length;
      if (tf > 0) score += (idf[i] * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * d.length) / average));
    });
    return score;
  });
  return scores
    .map((score, i) => ({ score, i }))
    .filter((r) => r.score > 0)
    .sort((a, b) => b.score - a.score || b.i - a.i)
    .slice(0, limit)
    .map((r) => r.i);
}

export interface ConclusionRecallResult {
  ranker: string;
  questions: number;
  recall: number;
  byKind: Record<string, number>;
  p50Ms: number;
}

/** Stores each fact set as the collection of an observer ("assistant") about its person; each set's conclusion ids, in order. */
export async function loadFacts(store: Store, workspaceId: string, sets: FactSet[]): Promise<string[][]> {
  const start = Date.now();
  const ids: string[][] = [];
  await store.transaction(async (tx) => {
    await tx.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, new Date(start));
    await tx.peers.ensure(workspaceId, ['assistant', ...sets.map((set) => set.subject)], new Date(start));
    for (const [index, set] of sets.entries()) {
      const rows: ConclusionRecord[] = set.facts.map((content, at) => ({
        id: `f${index}-${at}-${workspaceId}`.slice(0, 21),
        workspaceId,
        observerId: 'assistant',
        observedId: set.subject,
        sessionId: null,
        content,
        level: 'explicit',
        sourceIds: null,
        timesDerived: 1,
        createdAt: new Date(start + at),
      }));
      for (let at = 0; at < rows.length; at += 100) await tx.memory.insertConclusions(rows.slice(at, at + 100));
      ids.push(rows.map((row) => row.id));
    }
  });
  return ids;
}

/** recall@10 of conclusion search and of plain BM25 over the fact sets, over all questions and per kind. */
export async function measureConclusionRecall(ctx: DomainContext, workspaceId: string, sets: FactSet[], ids: string[][]): Promise<ConclusionRecallResult[]> {
  const rankers: Record<string, (set: FactSet, index: number, question: string) => Promise<string[]>> = {
    'plain BM25 (words as written, stop words kept)': async (set, index, question) => plainBm25(set.facts, question, 10).map((at) => ids[index][at]),
    'conclusion search (conclusions/query without an embedding model)': async (set, _index, question) =>
      (await queryConclusions(ctx, workspaceId, { query: question, topK: 10, distance: null, filters: { observer: 'assistant', observed: set.subject }, rules: CURRENT_RULES })).map((c) => c.id),
  };
  const results: ConclusionRecallResult[] = [];
  for (const [name, ranker] of Object.entries(rankers)) {
    const asked: Record<string, number> = {};
    const found: Record<string, number> = {};
    const times: number[] = [];
    for (const [index, set] of sets.entries()) {
      for (const { question, answer, kind } of set.questions) {
        const started = performance.now();
        const ranked = await ranker(set, index, question);
        times.push(performance.now() - started);
        asked[kind] = (asked[kind] ?? 0) + 1;
        if (ranked.slice(0, 10).includes(ids[index][answer])) found[kind] = (found[kind] ?? 0) + 1;
      }
    }
    const total = Object.values(asked).reduce((a, b) => a + b, 0);
    const hits = Object.values(found).reduce((a, b) => a + b, 0);
    times.sort((a, b) => a - b);
    results.push({
      ranker: name,
      questions: total,
      recall: hits / total,
      byKind: Object.fromEntries(Object.keys(asked).map((kind) => [kind, (found[kind] ?? 0) / asked[kind]])),
      p50Ms: times[Math.floor(times.length / 2)],
    });
  }
  return results;
}

/** Prints the conclusion search evaluation's table. */
export function printConclusionRecall(results: ConclusionRecallResult[], sets: FactSet[]): void {
  const kinds = Object.keys(results[0]?.byKind ?? {});
  const counts = kinds.map((kind) => `${sets.reduce((n, set) => n + set.questions.filter((q) => q.kind === kind).length, 0)} ${kind}`).join(', ');
  console.log(`\nConclusion search: recall@10 of questions about generated facts (${sets.length} collections of ${sets[0]?.facts.length} facts; ${counts})\n`);
  console.log(`| ranking | recall@10 | ${kinds.join(' | ')} | p50 ms per question |`);
  console.log(`|---|---|${kinds.map(() => '---|').join('')}---|`);
  for (const r of results) console.log(`| ${r.ranker} | ${r.recall.toFixed(3)} | ${kinds.map((kind) => r.byKind[kind].toFixed(3)).join(' | ')} | ${r.p50Ms.toFixed(2)} |`);
  if (results.length === 2) console.log(`\nconclusion search - plain BM25: ${((results[1].recall - results[0].recall) * 100).toFixed(1)} points`);
}

/** Why the hybrid line has no number when no embedding model is configured. */
export const HYBRID_NOT_MEASURED =
  'not measured: set EVAL_EMBEDDING_BASE_URL (and EVAL_EMBEDDING_MODEL) to an embedding model; ' +
  'the hashed vectors of the fake model server carry no meaning, so they would only measure noise';

/** The evaluation on a fresh database: prints a table, returns the results. */
export async function runSearchEval(url = process.env.BENCH_DATABASE_URL ?? ':memory:'): Promise<RecallResult[]> {
  const model = evalEmbedding();
  const database = await openDatabase(url);
  const workspaceId = `search-eval-${Date.now().toString(36)}`;
  try {
    const conversations = qaConversations();
    const ids = await loadConversations(database.store, workspaceId, conversations);
    const ctx = createDomainContext(database.store, { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 1 });
    const rankers: Record<string, Ranker> = { ...RANKERS };
    let embedded = '';
    if (model !== undefined) {
      const started = performance.now();
      const chunks = await embedConversations(withModel(ctx, model.runtime), workspaceId, ids);
      const turns = ids.reduce((sum, turnIds) => sum + turnIds.length, 0);
      embedded =
        `embedding model ${model.embedder.name} at ${process.env.EVAL_EMBEDDING_BASE_URL} (${model.embedder.dimensions()} dimensions): ` +
        `${turns} turns embedded as ${chunks} chunks in ${((performance.now() - started) / 1000).toFixed(1)} s (${model.embedder.calls} requests); questions embedded by the search`;
      rankers['vector alone'] = vectorRanker(model.runtime);
      rankers['hybrid (message search as served with an embedding model)'] = hybridRanker(model.runtime);
    }
    const callsBefore = model?.embedder.calls ?? 0;
    const results = await measureRecall(ctx, workspaceId, conversations, ids, rankers);
    const sizes = conversations.map((c) => `${c.turns.length} turns / ${c.questions.length} q`).join(', ');
    console.log(`\nSearch quality: recall@10 of plain-language questions (${sizes})\n`);
    if (embedded !== '') console.log(`${embedded}\n`);
    console.log(`| ranking | recall@10 | per conversation | p50 / max ms per question |`);
    console.log(`|---|---|---|---|`);
    for (const r of results) {
      console.log(`| ${r.ranker} | ${r.recall.toFixed(3)} | ${r.perConversation.map((v) => v.toFixed(2)).join(' / ')} | ${r.p50Ms.toFixed(2)} / ${r.maxMs.toFixed(2)} |`);
    }
    if (model === undefined) {
      console.log(`| hybrid | n/a | ${HYBRID_NOT_MEASURED} | |`);
    } else {
      const calls = model.embedder.calls - callsBefore;
      console.log(`\nquestions: ${calls} embedding requests, ${model.embedder.failures} failed` + (model.embedder.lastError ? ` (last: ${model.embedder.lastError})` : ''));
      if (model.embedder.failures > 0) {
        console.log('WARNING: a search whose question could not be embedded answers by full text alone, so the vector and hybrid lines understate them');
      }
    }
    const sets = factSets();
    const factIds = await loadFacts(database.store, workspaceId, sets);
    printConclusionRecall(await measureConclusionRecall(ctx, workspaceId, sets, factIds), sets);
    return results;
  } finally {
    if (url.startsWith('postgres')) await database.store.workspaces.delete(workspaceId).catch(() => undefined);
    await database.driver.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runSearchEval().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
