import type { MessageRecord } from '../../storage/store.js';
import type { DomainContext } from '../context.js';

export interface SessionContext {
  messages: MessageRecord[];
  /** Filled once summaries exist; the budget share they may take is kept for them. */
  summary: null;
}

/** Share of the token budget a summary may use (contract §7.3). */
const SUMMARY_SHARE = 0.4;

/**
 * The most recent messages of the session that fit in `tokens`, oldest first. While no
 * summary exists the whole budget goes to messages. An unknown session has no messages.
 */
export async function getSessionContext(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  options: { tokens: number; includeSummary: boolean },
): Promise<SessionContext> {
  const summaryTokens = 0; // no summaries yet: nothing taken from the budget
  const budget = options.includeSummary ? options.tokens - Math.min(summaryTokens, options.tokens * SUMMARY_SHARE) : options.tokens;
  const picked: MessageRecord[] = [];
  if (options.tokens <= 0) return { messages: picked, summary: null };
  let used = 0;
  let before: number | undefined;
  for (;;) {
    const batch = await ctx.store.recentMessages(workspaceId, sessionId, 200, before);
    for (const message of batch) {
      if (used + message.tokenCount > budget) return { messages: picked.reverse(), summary: null };
      used += message.tokenCount;
      const { seq: _seq, ...record } = message;
      picked.push(record);
    }
    if (batch.length < 200) return { messages: picked.reverse(), summary: null };
    before = batch[batch.length - 1].seq;
  }
}
