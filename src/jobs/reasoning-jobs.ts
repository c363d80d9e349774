import { within, type DomainContext } from '../domain/context.js';
import { processRepresentationUnit, REPRESENT, SUMMARIZE, type RepresentPayload, type SummarizePayload } from '../domain/reasoning/deriver.js';
import {
  EMBED_CONCLUSIONS,
  EMBED_MESSAGES,
  embedStoredConclusions,
  embedStoredMessages,
  MESSAGES_PER_EMBED_JOB,
  type EmbedConclusionsPayload,
  type EmbedMessagesPayload,
} from '../domain/reasoning/embeddings.js';
import { DREAM, DREAM_AUTO, type DreamPayload } from '../domain/reasoning/dream-schedule.js';
import { runDream } from '../domain/reasoning/dreams.js';
import { processSummary } from '../domain/reasoning/summaries.js';
import type { JsonObject } from '../storage/store.js';
import { isText, jobHandler, type JobCatalog } from './catalog.js';

/** Longest a model-backed job may run (it is also its lease); a model call can take minutes. */
const REASONING_TIMEOUT_MS = 10 * 60_000;
/** Their lease, renewed while they run: a crashed worker's model job is taken over after a minute. */
const REASONING_LEASE_MS = 60_000;

/** The payload of a representation job, checked when it is claimed (a stored row is input too). */
export function readRepresentPayload(payload: JsonObject): RepresentPayload | undefined {
  const { workspaceId, sessionId, observedId } = payload;
  return isText(workspaceId) && isText(sessionId) && isText(observedId) ? { workspaceId, sessionId, observedId } : undefined;
}

export function readSummarizePayload(payload: JsonObject): SummarizePayload | undefined {
  const { workspaceId, sessionId, messageId, messageSeq, kinds } = payload;
  if (!isText(workspaceId) || !isText(sessionId) || !isText(messageId)) return undefined;
  if (typeof messageSeq !== 'number' || !Number.isInteger(messageSeq) || messageSeq < 1) return undefined;
  if (!Array.isArray(kinds) || kinds.length === 0 || !kinds.every((kind) => kind === 'short' || kind === 'long')) return undefined;
  return { workspaceId, sessionId, messageId, messageSeq, kinds: kinds as ('short' | 'long')[] };
}

export function readEmbedMessagesPayload(payload: JsonObject): EmbedMessagesPayload | undefined {
  const { workspaceId, sessionId, messageIds } = payload;
  if (!isText(workspaceId) || !isText(sessionId)) return undefined;
  if (!Array.isArray(messageIds) || messageIds.length === 0 || messageIds.length > MESSAGES_PER_EMBED_JOB || !messageIds.every(isText)) return undefined;
  return { workspaceId, sessionId, messageIds: messageIds as string[] };
}

export function readEmbedConclusionsPayload(payload: JsonObject): EmbedConclusionsPayload | undefined {
  const { workspaceId, conclusionIds } = payload;
  if (!isText(workspaceId)) return undefined;
  if (!Array.isArray(conclusionIds) || conclusionIds.length === 0 || conclusionIds.length > MESSAGES_PER_EMBED_JOB || !conclusionIds.every(isText)) return undefined;
  return { workspaceId, conclusionIds: conclusionIds as string[] };
}

export function readDreamPayload(payload: JsonObject): DreamPayload | undefined {
  const { workspaceId, observerId, observedId, dreamType, sessionId, rebuild } = payload;
  if (!isText(workspaceId) || !isText(observerId) || !isText(observedId)) return undefined;
  if (dreamType !== 'omni' && dreamType !== 'card_refresh') return undefined;
  if (sessionId !== null && !isText(sessionId)) return undefined;
  if (typeof rebuild !== 'boolean') return undefined;
  return { workspaceId, observerId, observedId, dreamType, sessionId, rebuild };
}

/** Longest an embedding job may run: a request or two to the embedding model. */
const EMBED_TIMEOUT_MS = 2 * 60_000;

/** The deriver's, the summarizer's, the embedders' and the dreams' jobs; absent when no model is configured. */
export function reasoningHandlers(ctx: DomainContext, options: { concurrency: number }): JobCatalog {
  const dream = jobHandler({
    readPayload: readDreamPayload,
    async run(payload, job, store, signal) {
      const outcome = await runDream(within(ctx, store), payload, { jobId: job.id, signal });
      return outcome.kind === 'done' ? { kind: 'done' } : outcome;
    },
    timeoutMs: REASONING_TIMEOUT_MS,
    leaseMs: REASONING_LEASE_MS,
    concurrency: options.concurrency,
  });
  return {
    [DREAM]: dream,
    [DREAM_AUTO]: dream,
    [REPRESENT]: jobHandler({
      readPayload: readRepresentPayload,
      async run(payload, job, store, signal) {
        const outcome = await processRepresentationUnit(within(ctx, store), payload, { isLastAttempt: job.attempts >= job.maxAttempts, signal });
        return outcome.kind === 'done' ? { kind: 'done' } : outcome;
      },
      timeoutMs: REASONING_TIMEOUT_MS,
      leaseMs: REASONING_LEASE_MS,
      concurrency: options.concurrency,
    }),
    [SUMMARIZE]: jobHandler({
      readPayload: readSummarizePayload,
      async run(payload, job, store, signal) {
        const outcome = await processSummary(within(ctx, store), payload, { signal, isLastAttempt: job.attempts >= job.maxAttempts });
        return outcome.kind === 'done' ? { kind: 'done' } : outcome;
      },
      timeoutMs: REASONING_TIMEOUT_MS,
      leaseMs: REASONING_LEASE_MS,
      concurrency: options.concurrency,
    }),
    [EMBED_MESSAGES]: jobHandler({
      readPayload: readEmbedMessagesPayload,
      async run(payload, job, store, signal) {
        const outcome = await embedStoredMessages(within(ctx, store), payload, signal);
        return outcome.kind === 'done' ? { kind: 'done' } : outcome;
      },
      timeoutMs: EMBED_TIMEOUT_MS,
      leaseMs: REASONING_LEASE_MS,
      concurrency: options.concurrency,
    }),
    [EMBED_CONCLUSIONS]: jobHandler({
      readPayload: readEmbedConclusionsPayload,
      async run(payload, job, store, signal) {
        const outcome = await embedStoredConclusions(within(ctx, store), payload, signal);
        return outcome.kind === 'done' ? { kind: 'done' } : outcome;
      },
      timeoutMs: EMBED_TIMEOUT_MS,
      leaseMs: REASONING_LEASE_MS,
      concurrency: options.concurrency,
    }),
  };
}
