import { LRUCache } from 'lru-cache';
import { ModelError, type Embedder } from '../../llm/provider.js';
import type { ConclusionRecord, MessageChunkVector, MessageRecord, NewJob } from '../../storage/store.js';
import type { DomainContext } from '../context.js';
import { unavailable } from '../errors.js';
import { EMBED_CONCLUSIONS, EMBED_MESSAGES, MESSAGES_PER_EMBED_JOB, newJob, type EmbedConclusionsPayload, type EmbedMessagesPayload } from '../job-kinds.js';
import { tokenCount } from '../text/token-count.js';
import { DEFAULT_EMBEDDING_TOKENS_PER_REQUEST } from '../reasoning-settings.js';
import { forWorkspace, processEmbedder } from '../model-usage.js';

/*
 * Embeddings (reasoning.md R7): conclusions are embedded when they are created (the caller
 * embeds before its transaction opens, so no transaction waits for a model); messages are
 * embedded in the background by a job queued in the transaction that stores them, long ones in
 * overlapping chunks.
 */


/** Most texts in one embedding request (OpenAI takes 2048; smaller keeps a request's size modest). */
export const TEXTS_PER_EMBED_REQUEST = 64;

/** Most tokens in one embedding request: EMBEDDING_MAX_TOKENS_PER_REQUEST's default (300,000, the reference's). */
const TOKENS_PER_EMBED_REQUEST = DEFAULT_EMBEDDING_TOKENS_PER_REQUEST;

/** The share of a chunk that the next one repeats. */
export const CHUNK_OVERLAP = 0.2;

/** The embedder when embeddings are on; undefined when no embedding model is configured. */
export function embedderOf(ctx: DomainContext): Embedder | undefined {
  return ctx.reasoning?.models.embedder;
}

/**
 * Splits `text` into chunks of at most `maxTokens` o200k tokens, each repeating the last 20 %
 * of the one before. A text that fits is one chunk. Chunks are cut on characters (code points),
 * sized from the text's own measured token density and then checked with the tokenizer (and
 * shrunk until they fit), so no chunk is over the limit and encoding never runs on the whole
 * text more than once.
 */
export function chunkText(text: string, maxTokens: number): string[] {
  const total = tokenCount(text, maxTokens);
  if (total <= maxTokens) return [text];
  const chars = Array.from(text);
  const measured = tokenCount(text);
  // characters per token of this text, with a margin: a window of this many fits most of the time
  let window = Math.max(1, Math.floor((chars.length / measured) * maxTokens * 0.9));
  const chunks: string[] = [];
  let start = 0;
  for (;;) {
    let size = Math.min(window, chars.length - start);
    let chunk = chars.slice(start, start + size).join('');
    while (size > 1 && tokenCount(chunk, maxTokens) > maxTokens) {
      size = Math.max(1, Math.floor(size * 0.9));
      chunk = chars.slice(start, start + size).join('');
    }
    window = Math.max(size, 1);
    chunks.push(chunk);
    if (start + size >= chars.length) return chunks;
    start += Math.max(1, size - Math.floor(size * CHUNK_OVERLAP));
  }
}

/**
 * Embeds `texts` in requests of at most TEXTS_PER_EMBED_REQUEST texts and `maxTokensPerRequest`
 * tokens (EMBEDDING_MAX_TOKENS_PER_REQUEST; a longer text goes alone), one vector per text in order.
 */
export async function embedInBatches(embedder: Embedder, texts: string[], signal?: AbortSignal, maxTokensPerRequest = TOKENS_PER_EMBED_REQUEST): Promise<number[][]> {
  const vectors: number[][] = [];
  let batch: string[] = [];
  let tokens = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const answer = await embedder.embed(batch, signal);
    if (answer.length !== batch.length) throw new ModelError(`the embedding model answered ${answer.length} vectors for ${batch.length} texts`, false);
    vectors.push(...answer);
    batch = [];
    tokens = 0;
  };
  for (const text of texts) {
    const size = tokenCount(text);
    if (batch.length >= TEXTS_PER_EMBED_REQUEST || (batch.length > 0 && tokens + size > maxTokensPerRequest)) await flush();
    batch.push(text);
    tokens += size;
  }
  await flush();
  return vectors;
}

/**
 * Fixes the store's vector size from vectors about to be stored, before the transaction that
 * stores them opens: the first vectors a store takes type its vector columns, which on PostgreSQL
 * is done in a transaction of its own (VectorIndex.fixDimensions); inside the storing one it held
 * the vector tables locked to its commit. Nothing to do for an empty list or a size already fixed.
 */
export async function fixVectorSize(ctx: DomainContext, vectors: readonly (readonly number[])[] | undefined): Promise<void> {
  if (vectors !== undefined && vectors.length > 0) await ctx.store.vectors.fixDimensions(vectors[0].length);
}

/**
 * The vectors of new conclusions' contents for a request (manual `POST .../conclusions`), made
 * before its transaction; undefined when no embedding model is configured. A model failure is
 * the domain's `unavailable` (503) saying nothing was stored.
 */
export async function embedForRequest(ctx: DomainContext, workspaceId: string, texts: string[], what: string): Promise<number[][] | undefined> {
  const embedder = embedderOf(forWorkspace(ctx, workspaceId));
  if (embedder === undefined || texts.length === 0) return undefined;
  try {
    return await embedInBatches(embedder, texts, undefined, ctx.reasoning?.settings.embeddingMaxTokensPerRequest);
  } catch (error) {
    if (!(error instanceof ModelError)) throw error;
    throw unavailable(`The embedding model (${embedder.name}) failed, so ${what}: ${error.message}. Try again later.`);
  }
}

/** Most bytes of query vectors a process keeps: about 680 queries at 1,536 dimensions, 16,000 at 64. */
export const QUERY_VECTOR_CACHE_BYTES = 8 * 1024 * 1024;

/**
 * The vectors of recent queries, by the process's embedder (a new set of models starts empty),
 * then by workspace and query text: a query asked again in a workspace is not embedded again.
 * Keyed by workspace too, so that how fast one workspace's search answers never tells whether
 * another workspace asked the same.
 */
const queryVectors = new WeakMap<Embedder, LRUCache<string, readonly number[]>>();

/** Query vectors taken so far in this process: kept (no model call) or embedded (/metrics). */
export const queryVectorCounts = { kept: 0, embedded: 0 };

/**
 * A query's vector for a search (messages, conclusions, a chat's memory, a representation):
 * the one made for the same query of the workspace before, when the process still holds it,
 * else the embedding model's answer (a ModelError when it fails; nothing is kept then).
 * undefined when no embedding model is configured. The vector is frozen: it may be shared.
 */
export async function embedQuery(ctx: DomainContext, workspaceId: string, query: string): Promise<readonly number[] | undefined> {
  const tagged = embedderOf(ctx);
  if (tagged === undefined) return undefined;
  // the process's embedder, as `ctx` may have its calls counted for a workspace already
  const embedder = processEmbedder(tagged);
  let cache = queryVectors.get(embedder);
  if (cache === undefined) {
    cache = new LRUCache({ maxSize: QUERY_VECTOR_CACHE_BYTES, sizeCalculation: (vector, key) => vector.length * 8 + key.length * 2 });
    queryVectors.set(embedder, cache);
  }
  const key = `${workspaceId}\u0000${query}`;
  const kept = cache.get(key);
  if (kept !== undefined) {
    queryVectorCounts.kept++;
    return kept;
  }
  const [vector] = await embedInBatches(embedderOf(forWorkspace(ctx, workspaceId))!, [query], undefined, ctx.reasoning?.settings.embeddingMaxTokensPerRequest);
  Object.freeze(vector);
  cache.set(key, vector);
  queryVectorCounts.embedded++;
  return vector;
}

/** embedQuery for a request: a model failure is the domain's `unavailable` (503) saying `what`. */
export async function embedQueryForRequest(ctx: DomainContext, workspaceId: string, query: string, what: string): Promise<readonly number[] | undefined> {
  try {
    return await embedQuery(ctx, workspaceId, query);
  } catch (error) {
    if (!(error instanceof ModelError)) throw error;
    throw unavailable(`The embedding model (${embedderOf(ctx)!.name}) failed, so ${what}: ${error.message}. Try again later.`);
  }
}

/**
 * Queues the embedding of messages just stored (inside the caller's transaction): one job per
 * MESSAGES_PER_EMBED_JOB messages of the session, when an embedding model is configured and
 * EMBED_MESSAGES is on.
 */
export async function queueMessageEmbeddings(ctx: DomainContext, messages: readonly MessageRecord[], now: Date): Promise<void> {
  await ctx.store.jobs.enqueue(messageEmbeddingJobs(ctx, messages), now);
}

/** The jobs queueMessageEmbeddings queues (none while messages are not embedded). */
export function messageEmbeddingJobs(ctx: DomainContext, messages: readonly MessageRecord[]): NewJob[] {
  const reasoning = ctx.reasoning;
  if (reasoning === undefined || reasoning.models.embedder === undefined || !reasoning.settings.embedMessages || messages.length === 0) return [];
  const { workspaceId, sessionId } = messages[0];
  const jobs: NewJob[] = [];
  for (let start = 0; start < messages.length; start += MESSAGES_PER_EMBED_JOB) {
    const payload: EmbedMessagesPayload = { workspaceId, sessionId, messageIds: messages.slice(start, start + MESSAGES_PER_EMBED_JOB).map((m) => m.id) };
    jobs.push(newJob({ id: ctx.newId(), kind: EMBED_MESSAGES, workspaceId, queueKey: `embed:${workspaceId}:${sessionId}`, payload, maxAttempts: ctx.limits.jobMaxAttempts }));
  }
  return jobs;
}

export type EmbedOutcome = { kind: 'done'; chunks: number } | { kind: 'skipped'; reason: string } | { kind: 'failed'; error: string; retryable: boolean };

/** The vectors of an embedding job's texts; a failure of the model is the job's `failed` outcome. */
async function embedForJob(ctx: DomainContext, embedder: Embedder, texts: string[], signal: AbortSignal | undefined): Promise<number[][] | EmbedOutcome> {
  try {
    return await embedInBatches(embedder, texts, signal, ctx.reasoning?.settings.embeddingMaxTokensPerRequest);
  } catch (error) {
    if (!(error instanceof ModelError)) throw error;
    return { kind: 'failed', error: error.message, retryable: error.retryable };
  }
}

/**
 * The embedding job: reads the messages (deleted ones are skipped), embeds their chunks with no
 * transaction open, then stores the vectors in one short transaction. Rerunning it replaces the
 * same (message, chunk) vectors, so a retry stores nothing twice.
 */
export async function embedStoredMessages(ctx: DomainContext, payload: EmbedMessagesPayload, signal?: AbortSignal): Promise<EmbedOutcome> {
  const [outcome] = await embedStoredMessageBatch(ctx, [payload], signal);
  return outcome;
}

/**
 * Several embedding jobs of one workspace at once (the worker's batches of them): their messages
 * read in one query, their chunks embedded in as few model requests as the request limits allow,
 * their vectors stored in one transaction. Each job's outcome: done, skipped when none of its
 * messages has text left to embed, or the model's failure (every job that had text shares it).
 */
export async function embedStoredMessageBatch(ctx: DomainContext, payloads: readonly EmbedMessagesPayload[], signal?: AbortSignal): Promise<EmbedOutcome[]> {
  const embedder = embedderOf(ctx);
  if (embedder === undefined) return payloads.map(() => ({ kind: 'failed', error: 'no embedding model is configured', retryable: false }));
  const maxTokens = ctx.reasoning!.settings.embeddingMaxInputTokens;
  const workspaceId = payloads[0].workspaceId;
  if (payloads.some((payload) => payload.workspaceId !== workspaceId)) throw new Error('an embedding batch holds the jobs of one workspace');
  const byId = new Map((await ctx.store.messages.byIds(workspaceId, payloads.flatMap((payload) => payload.messageIds))).map((m) => [m.id, m]));
  const pieces: { message: MessageRecord; chunk: number; text: string }[] = [];
  // each job's pieces: [first, end) of `pieces`
  const spans = payloads.map((payload) => {
    const first = pieces.length;
    for (const message of payload.messageIds.flatMap((id) => byId.get(id) ?? [])) {
      if (message.content.trim() === '') continue;
      chunkText(message.content, maxTokens).forEach((text, chunk) => pieces.push({ message, chunk, text }));
    }
    return { first, end: pieces.length };
  });
  const skipped: EmbedOutcome = { kind: 'skipped', reason: 'no message with text to embed' };
  if (pieces.length === 0) return payloads.map(() => skipped);
  const vectors = await embedForJob(ctx, embedder, pieces.map((p) => p.text), signal);
  if (!Array.isArray(vectors)) return spans.map((span) => (span.end > span.first ? vectors : skipped));
  const rows: MessageChunkVector[] = pieces.map((piece, index) => ({
    messageId: piece.message.id,
    chunk: piece.chunk,
    workspaceId: piece.message.workspaceId,
    sessionId: piece.message.sessionId,
    peerId: piece.message.peerId,
    vector: vectors[index],
  }));
  await fixVectorSize(ctx, vectors);
  // a put of one statement is atomic by itself: a transaction around it would only add its
  // BEGIN and COMMIT, two of the run's round trips (on PostgreSQL most runs' chunks fit one)
  if (rows.length <= ctx.store.vectors.chunksInOneStatement) await ctx.store.vectors.putMessageChunks(rows);
  else await ctx.store.transaction((tx) => tx.vectors.putMessageChunks(rows));
  return spans.map((span) => (span.end > span.first ? { kind: 'done', chunks: span.end - span.first } : skipped));
}

/**
 * Embeds stored conclusions (a job queued by `engram reembed`): reads them (deleted ones are
 * skipped), embeds their contents with no transaction open, stores the vectors in one short one.
 */
export async function embedStoredConclusions(ctx: DomainContext, payload: EmbedConclusionsPayload, signal?: AbortSignal): Promise<EmbedOutcome> {
  const embedder = embedderOf(ctx);
  if (embedder === undefined) return { kind: 'failed', error: 'no embedding model is configured', retryable: false };
  const found: ConclusionRecord[] = [];
  for (const id of payload.conclusionIds) {
    const conclusion = await ctx.store.memory.findConclusion(payload.workspaceId, id);
    if (conclusion !== undefined) found.push(conclusion);
  }
  if (found.length === 0) return { kind: 'skipped', reason: 'the conclusions were deleted' };
  const vectors = await embedForJob(ctx, embedder, found.map((c) => c.content), signal);
  if (!Array.isArray(vectors)) return vectors;
  await fixVectorSize(ctx, vectors);
  await ctx.store.transaction((tx) =>
    tx.vectors.putConclusions(
      found.map((c, index) => ({
        conclusionId: c.id,
        workspaceId: c.workspaceId,
        observerId: c.observerId,
        observedId: c.observedId,
        level: c.level,
        sessionId: c.sessionId,
        vector: vectors[index],
      })),
    ),
  );
  return { kind: 'done', chunks: found.length };
}

/** Queues the embedding of the workspace's conclusions `ids` (MESSAGES_PER_EMBED_JOB a job). */
export async function queueConclusionEmbeddings(ctx: DomainContext, workspaceId: string, ids: readonly string[], now: Date): Promise<void> {
  const jobs = [];
  for (let start = 0; start < ids.length; start += MESSAGES_PER_EMBED_JOB) {
    const payload: EmbedConclusionsPayload = { workspaceId, conclusionIds: ids.slice(start, start + MESSAGES_PER_EMBED_JOB) };
    jobs.push(newJob({ id: ctx.newId(), kind: EMBED_CONCLUSIONS, workspaceId, queueKey: `embed:${workspaceId}:conclusions`, payload, maxAttempts: ctx.limits.jobMaxAttempts }));
  }
  if (jobs.length > 0) await ctx.store.jobs.enqueue(jobs, now);
}

/**
 * `engram reembed`, after the vectors were dropped: queues jobs that embed every live conclusion
 * and, with EMBED_MESSAGES on, every message again (MESSAGES_PER_EMBED_JOB per job), run by the workers like any other
 * embedding. Returns how many conclusions and messages were queued.
 */
export async function queueReembedding(ctx: DomainContext): Promise<{ conclusions: number; messages: number }> {
  if (embedderOf(ctx) === undefined) throw new Error('no embedding model is configured');
  const now = ctx.now();
  let conclusions = 0;
  for (let after = 0; ; ) {
    const page = await ctx.store.memory.liveConclusionsAfter(after, 1000);
    if (page.length === 0) break;
    after = page[page.length - 1].pk;
    const byWorkspace = new Map<string, string[]>();
    for (const row of page) byWorkspace.set(row.workspaceId, [...(byWorkspace.get(row.workspaceId) ?? []), row.id]);
    for (const [workspaceId, ids] of byWorkspace) await queueConclusionEmbeddings(ctx, workspaceId, ids, now);
    conclusions += page.length;
  }
  let messages = 0;
  // with EMBED_MESSAGES off messages have no vectors to rebuild
  for (let after = 0; ctx.reasoning!.settings.embedMessages; ) {
    const page = await ctx.store.reasoning.messagesAfter({}, after, 1000);
    if (page.length === 0) break;
    after = page[page.length - 1].pk;
    const bySession = new Map<string, MessageRecord[]>();
    for (const message of page) {
      const key = `${message.workspaceId}\u0000${message.sessionId}`;
      bySession.set(key, [...(bySession.get(key) ?? []), message]);
    }
    for (const group of bySession.values()) await queueMessageEmbeddings(ctx, group, now);
    messages += page.length;
  }
  return { conclusions, messages };
}
