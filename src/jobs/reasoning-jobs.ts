import { within, type DomainContext } from '../domain/context.js';
import { DREAM, DREAM_AUTO, EMBED_CONCLUSIONS, EMBED_MESSAGES, REPRESENT, SUMMARIZE } from '../domain/job-kinds.js';
import { processRepresentationUnit } from '../domain/reasoning/deriver.js';
import { runDream } from '../domain/reasoning/dreams.js';
import { embedStoredConclusions, embedStoredMessageBatch, embedStoredMessages } from '../domain/search/embeddings.js';
import { forWorkspace } from '../domain/model-usage.js';
import { processSummary } from '../domain/reasoning/summaries.js';
import type { JobOutcome, KindHandler, KindHandlers } from './catalog.js';

/** Longest a model-backed job may run (it is also its lease); a model call can take minutes. */
const REASONING_TIMEOUT_MS = 10 * 60_000;
/** Their lease, renewed while they run: a crashed worker's model job is taken over after a minute. */
const REASONING_LEASE_MS = 60_000;
/** Longest an embedding job may run: a request or two to the embedding model. */
const EMBED_TIMEOUT_MS = 2 * 60_000;
/** Message embedding jobs run together at most (JobHandler.batch): their texts share model requests. */
export const EMBED_BATCH_JOBS = 16;
/**
 * While one of their runs goes on after a claim that came back short, the next claim waits up to
 * this long, so that the jobs queued meanwhile run together (one model request, one vector write,
 * one completion for all of them); a job queued while none runs is claimed at once.
 */
export const EMBED_GATHER_MS = 250;

/** A domain outcome as the job's: what `done` tells (counts) stays with the domain. */
async function jobOutcome(outcome: Promise<JobOutcome>): Promise<JobOutcome> {
  return asJobOutcome(await outcome);
}

function asJobOutcome(ended: JobOutcome): JobOutcome {
  return ended.kind === 'done' ? { kind: 'done' } : ended;
}

type ReasoningKind = typeof REPRESENT | typeof SUMMARIZE | typeof EMBED_MESSAGES | typeof EMBED_CONCLUSIONS | typeof DREAM | typeof DREAM_AUTO;

/**
 * The deriver's, the summarizer's, the embedders' and the dreams' jobs; none when no model is
 * configured (their jobs wait for a process that has one).
 */
export function reasoningHandlers(ctx: DomainContext, options: { concurrency: number }): Pick<KindHandlers, ReasoningKind> {
  if (ctx.reasoning === undefined) return { [REPRESENT]: undefined, [SUMMARIZE]: undefined, [EMBED_MESSAGES]: undefined, [EMBED_CONCLUSIONS]: undefined, [DREAM]: undefined, [DREAM_AUTO]: undefined };
  // the job's context, its model calls counted for its workspace
  const jobCtx = (store: Parameters<typeof within>[1], job: { workspaceId: string | null }) => forWorkspace(within(ctx, store), job.workspaceId);
  const modelWork = { timeoutMs: REASONING_TIMEOUT_MS, leaseMs: REASONING_LEASE_MS, concurrency: options.concurrency };
  const dream: KindHandler<typeof DREAM> & KindHandler<typeof DREAM_AUTO> = {
    run: async (payload, job, store, signal) => jobOutcome(runDream(jobCtx(store, job), payload, { jobId: job.id, signal })),
    ...modelWork,
  };
  return {
    [DREAM]: dream,
    [DREAM_AUTO]: dream,
    [REPRESENT]: {
      run: async (payload, job, store, signal) => jobOutcome(processRepresentationUnit(jobCtx(store, job), payload, { isLastAttempt: job.attempts >= job.maxAttempts, signal })),
      ...modelWork,
    },
    [SUMMARIZE]: {
      run: async (payload, job, store, signal) => jobOutcome(processSummary(jobCtx(store, job), payload, { signal, isLastAttempt: job.attempts >= job.maxAttempts })),
      ...modelWork,
    },
    [EMBED_MESSAGES]: {
      run: async (payload, job, store, signal) => jobOutcome(embedStoredMessages(jobCtx(store, job), payload, signal)),
      // the worker's batches hold the jobs of one workspace, whose model usage they count
      batch: {
        max: EMBED_BATCH_JOBS,
        gatherMs: EMBED_GATHER_MS,
        run: async (items, store, signal) => {
          const outcomes = await embedStoredMessageBatch(jobCtx(store, items[0].job), items.map((item) => item.payload), signal);
          return outcomes.map(asJobOutcome);
        },
      },
      ...modelWork,
      timeoutMs: EMBED_TIMEOUT_MS,
    },
    [EMBED_CONCLUSIONS]: {
      run: async (payload, job, store, signal) => jobOutcome(embedStoredConclusions(jobCtx(store, job), payload, signal)),
      ...modelWork,
      timeoutMs: EMBED_TIMEOUT_MS,
    },
  };
}
