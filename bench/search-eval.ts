/**
 * Search quality: recall@10 of questions asked in plain language over generated
 * conversations whose answering turns are known (qa-conversations.ts). Prints, per ranking,
 * the share of questions whose answering turn is among the first 10 results:
 *
 * - `any term, BM25`: message search as served (src/domain/messages/search.ts);
 * - `every word`: the search before it, which required every word of the query (the newest
 *   1,000 messages holding all of them, ranked by term frequency);
 * - `hybrid`: full-text and vector rankings fused, once message vectors exist (a ranker in
 *   `RANKERS` that returns message ids best first is all it takes: see `hybridRanker`).
 *
 * Run alone with `npx tsx bench/search-eval.ts`; `npm run bench` runs it too. It loads the
 * conversations through the store into a fresh in-memory SQLite database, or into
 * PostgreSQL with BENCH_DATABASE_URL.
 */
import { pathToFileURL } from 'node:url';
import { openDatabase } from '../src/app.js';
import { createDomainContext, type DomainContext } from '../src/domain/context.js';
import { reciprocalRankFusion } from '../src/domain/messages/fuse.js';
import { rankCandidates } from '../src/domain/messages/rank.js';
import { searchMessages, searchTerms } from '../src/domain/messages/search.js';
import type { MessageRecord, Store } from '../src/storage/store.js';
import { qaConversations, type QaConversation } from './qa-conversations.js';

/** Ranks the messages of a session for a question: message ids, best first. */
export type Ranker = (ctx: DomainContext, workspaceId: string, sessionId: string, question: string) => Promise<string[]>;

const fullText: Ranker = async (ctx, workspaceId, sessionId, question) =>
  (await searchMessages(ctx, { workspaceId, sessionId }, { query: question, filters: null, limit: 10, generation: 'v3' })).map((m) => m.id);

const everyWord: Ranker = async (ctx, workspaceId, sessionId, question) => {
  const terms = searchTerms(question);
  const candidates = await ctx.store.searchCandidates({ workspaceId, sessionId, terms, filters: null, candidates: 1000, generation: 'v3' });
  return rankCandidates(terms, candidates, 10).map((c) => c.id);
};

/**
 * Hybrid search: the full-text ranking fused with a vector ranking (reciprocal rank fusion,
 * k = 60). `vectorRanker` answers undefined while messages have no vectors.
 */
export function hybridRanker(vectorRanker: (ctx: DomainContext, workspaceId: string, sessionId: string, question: string) => Promise<string[] | undefined>): Ranker {
  return async (ctx, workspaceId, sessionId, question) => {
    const text = await fullText(ctx, workspaceId, sessionId, question);
    const vectors = await vectorRanker(ctx, workspaceId, sessionId, question);
    return vectors === undefined ? text : reciprocalRankFusion([text, vectors]).slice(0, 10);
  };
}

export const RANKERS: Record<string, Ranker> = { 'any term, BM25': fullText, 'every word': everyWord };

/** Stores each conversation as a session of its own; the ids of its turns, in order. */
export async function loadConversations(store: Store, workspaceId: string, conversations: QaConversation[]): Promise<string[][]> {
  const now = new Date();
  const ids: string[][] = [];
  await store.transaction(async (tx) => {
    await tx.createWorkspaceIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
    for (const [index, conversation] of conversations.entries()) {
      const sessionId = `conversation-${index}`;
      await tx.createSessionIfAbsent(workspaceId, { id: sessionId, metadata: {}, configuration: {} }, now);
      await tx.ensurePeers(workspaceId, [...new Set(conversation.turns.map((turn) => turn.speaker))], now);
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
      for (let at = 0; at < rows.length; at += 500) await tx.insertMessages(rows.slice(at, at + 500));
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

/** The evaluation on a fresh database: prints a table, returns the results. */
export async function runSearchEval(url = process.env.BENCH_DATABASE_URL ?? ':memory:'): Promise<RecallResult[]> {
  const database = await openDatabase(url);
  const workspaceId = `search-eval-${Date.now().toString(36)}`;
  try {
    const conversations = qaConversations();
    const ids = await loadConversations(database.store, workspaceId, conversations);
    const ctx = createDomainContext(database.store, { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 1 });
    const results = await measureRecall(ctx, workspaceId, conversations, ids, RANKERS);
    const sizes = conversations.map((c) => `${c.turns.length} turns / ${c.questions.length} q`).join(', ');
    console.log(`\nSearch quality: recall@10 of plain-language questions (${sizes})\n`);
    console.log(`| ranking | recall@10 | per conversation | p50 / max ms per question |`);
    console.log(`|---|---|---|---|`);
    for (const r of results) {
      console.log(`| ${r.ranker} | ${r.recall.toFixed(3)} | ${r.perConversation.map((v) => v.toFixed(2)).join(' / ')} | ${r.p50Ms.toFixed(2)} / ${r.maxMs.toFixed(2)} |`);
    }
    console.log(`| hybrid | n/a | messages have no vectors yet (hybridRanker in bench/search-eval.ts) | |`);
    return results;
  } finally {
    if (url.startsWith('postgres')) await database.store.deleteWorkspace(workspaceId).catch(() => undefined);
    await database.driver.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runSearchEval().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
