import { ModelError } from '../../llm/provider.js';
import type { MessageRecord, SessionSummaryRecord, SummaryType } from '../../storage/store.js';
import { inTransaction, type DomainContext } from '../context.js';
import { tokenCount } from '../text/token-count.js';
import { effectiveConfiguration } from '../scheduling/configuration.js';
import { summaryQueueKey } from '../scheduling/queue-reasoning.js';
import { emitQueueEmpty } from './queue-empty.js';
import { type SummarizePayload } from '../job-kinds.js';

/*
 * Session summaries (reasoning.md R3): short every `messages_per_short_summary` messages, long
 * every `messages_per_long_summary`, each a chronological narrative of the last interval's
 * messages that folds in the previous summary of its kind.
 */

export interface SummaryPromptInput {
  type: SummaryType;
  messages: readonly MessageRecord[];
  previous: string | undefined;
}

/** Words the summary may use: short `min(input tokens, 1000) x 0.75`, long 3000. */
export function summaryWordLimit(input: SummaryPromptInput): number {
  if (input.type === 'long') return 3_000;
  const tokens = input.messages.reduce((sum, message) => sum + message.tokenCount, 0);
  return Math.max(1, Math.floor(Math.min(tokens, 1_000) * 0.75));
}

export function summaryPrompt(input: SummaryPromptInput): string {
  const words = summaryWordLimit(input);
  const parts = [
    `Write a ${input.type === 'long' ? 'thorough' : 'concise'} summary of the conversation below as a chronological narrative, in at most ${words} words.`,
    'Fold in the previous summary so the result covers the whole conversation so far, keeping names, facts, decisions, dates and open questions.',
  ];
  if (input.type === 'long') parts.push("Also note each participant's emotional state, traits and the recurring themes.");
  parts.push('Answer with the summary text only.', '', 'Previous summary:', input.previous ?? 'There is no previous summary: this is the start of the conversation.', '', 'Messages:');
  for (const message of input.messages) parts.push(`${message.peerId}: ${message.content}`);
  return parts.join('\n');
}

export type SummaryOutcome = { kind: 'done'; written: SummaryType[] } | { kind: 'skipped'; reason: string } | { kind: 'failed'; error: string; retryable: boolean };

/**
 * Writes the payload's summaries. A kind whose stored summary already covers the message is
 * skipped; an empty answer is a failure (retried), not a silent "nothing stored".
 */
export async function processSummary(ctx: DomainContext, payload: SummarizePayload, options: { signal?: AbortSignal; isLastAttempt?: boolean }): Promise<SummaryOutcome> {
  const outcome = await summarize(ctx, payload, options);
  // this job's end drains the session's summary unit when no other summary job is open: tell the
  // workspace's webhooks (contract §7.6); a failure that will be retried has not ended it
  const ended = outcome.kind !== 'failed' || !outcome.retryable || options.isLastAttempt === true;
  if (ended && outcome.kind !== 'done') {
    await inTransaction(ctx, (ctx) => emitIfDrained(ctx, payload));
  }
  return outcome;
}

/** `queue.empty` for the session's summary unit when the running job (this one) is its only open job. */
async function emitIfDrained(ctx: DomainContext, payload: SummarizePayload): Promise<void> {
  if ((await ctx.store.jobs.openInQueue(summaryQueueKey(payload))) > 1) return;
  await emitQueueEmpty(ctx, { queueType: 'summary', workspaceId: payload.workspaceId, sessionId: payload.sessionId, observedId: null }, ctx.now());
}

async function summarize(ctx: DomainContext, payload: SummarizePayload, options: { signal?: AbortSignal }): Promise<SummaryOutcome> {
  const reasoning = ctx.reasoning;
  const model = reasoning?.models.chat('summary');
  if (reasoning === undefined || model === undefined) return { kind: 'failed', error: 'no summary model is configured', retryable: false };
  const session = await ctx.store.sessions.find(payload.workspaceId, payload.sessionId);
  if (session === undefined || !session.isActive) return { kind: 'skipped', reason: 'session gone' };
  const workspace = await ctx.store.workspaces.find(payload.workspaceId);
  const config = effectiveConfiguration(reasoning.settings, { workspace: workspace?.configuration ?? {}, session: session.configuration });
  const stored = new Map((await ctx.store.reasoning.summaries(payload.workspaceId, payload.sessionId)).map((summary) => [summary.type, summary]));
  const written: SummaryType[] = [];
  for (const [index, type] of payload.kinds.entries()) {
    const isLast = index === payload.kinds.length - 1;
    const previous = stored.get(type);
    if (previous !== undefined && previous.messageSeq >= payload.messageSeq) continue;
    const interval = type === 'short' ? config.messagesPerShortSummary : config.messagesPerLongSummary;
    const messages = await ctx.store.reasoning.messagesUpTo(payload.workspaceId, payload.sessionId, payload.messageId, interval);
    if (messages.length === 0) continue;
    let text: string;
    try {
      const answer = await model.complete({
        module: 'summary',
        messages: [{ role: 'user', content: summaryPrompt({ type, messages, previous: previous?.content }) }],
        maxOutputTokens: type === 'short' ? reasoning.settings.summary.maxTokensShort : reasoning.settings.summary.maxTokensLong,
        signal: options.signal,
      });
      text = answer.text.trim();
    } catch (error) {
      if (error instanceof ModelError) return { kind: 'failed', error: error.message, retryable: error.retryable };
      throw error;
    }
    if (text === '') return { kind: 'failed', error: `${model.name} returned an empty ${type} summary`, retryable: true };
    const summary: SessionSummaryRecord = { type, content: text, messageId: payload.messageId, messageSeq: payload.messageSeq, tokenCount: tokenCount(text), createdAt: ctx.now() };
    const saved = await inTransaction(ctx, async (ctx) => {
      // the session may have been deleted and purged while the model wrote; kept, not locked (the
      // summary is a row of its own: the session's message writes go on meanwhile)
      if ((await ctx.store.sessions.findAndKeep(payload.workspaceId, payload.sessionId)) === undefined) return false;
      await ctx.store.reasoning.saveSummary(payload.workspaceId, payload.sessionId, summary);
      if (isLast) await emitIfDrained(ctx, payload);
      return true;
    });
    if (!saved) return { kind: 'skipped', reason: 'session gone' };
    written.push(type);
  }
  if (written.length === 0) return { kind: 'skipped', reason: 'already summarised' };
  // the last kind was already covered: the drain is told apart from the final write
  if (written.at(-1) !== payload.kinds.at(-1)) await inTransaction(ctx, (ctx) => emitIfDrained(ctx, payload));
  return { kind: 'done', written };
}
