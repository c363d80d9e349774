import type { ConclusionRecord, MessageRecord, SessionSummaryRecord } from '../../storage/store.js';
import type { DomainContext } from '../context.js';
import { cardOf, confinement } from '../memory/recall.js';
import { DEFAULT_MAX_CONCLUSIONS, renderRepresentation, selectConclusions, type RepresentationOptions } from '../memory/representation.js';

export interface SessionContext {
  messages: MessageRecord[];
  /** The summary that fits its share of the budget (the long one when it fits and says more). */
  summary: SessionSummaryRecord | null;
  /** With a peer target: what the perspective peer (the target itself by default) holds about it. */
  peerRepresentation: string | null;
  /** The conclusions `peerRepresentation` renders, newest first (v2 presents them as an object). */
  peerConclusions: ConclusionRecord[] | null;
  peerCard: string[] | null;
}

export interface PeerTargetOptions {
  peerTarget?: string;
  peerPerspective?: string;
  limitToSession: boolean;
  /**
   * Sessions the representation is confined to: only conclusions stated in them count, and the
   * peer card is left out (it says nothing of where it came from).
   */
  sessionAllowlist?: string[];
  searchQuery?: string;
  searchTopK?: number;
  maxConclusions?: number;
  /** Tolerates a search query that cannot be embedded (representation.ts); undefined: a failure is the request's. */
  onEmbeddingFailure?: RepresentationOptions['onEmbeddingFailure'];
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
  options: { tokens: number; includeSummary: boolean } & PeerTargetOptions,
): Promise<SessionContext> {
  const summary = options.includeSummary ? await pickSummary(ctx, workspaceId, sessionId, options.tokens * SUMMARY_SHARE) : null;
  const messages = await recentMessagesWithin(ctx, workspaceId, sessionId, options.tokens - (summary?.tokenCount ?? 0), summary);
  if (options.peerTarget === undefined) return { messages, summary, peerRepresentation: null, peerConclusions: null, peerCard: null };
  const observer = options.peerPerspective ?? options.peerTarget;
  const sessions = confinement({ allowlist: options.sessionAllowlist, session: options.limitToSession ? sessionId : undefined });
  const peerConclusions = await selectConclusions(ctx, workspaceId, observer, {
    target: options.peerTarget,
    sessionIds: sessions,
    searchQuery: options.searchQuery,
    searchTopK: options.searchTopK,
    maxConclusions: options.maxConclusions ?? DEFAULT_MAX_CONCLUSIONS,
    onEmbeddingFailure: options.onEmbeddingFailure,
  });
  const peerCard = await cardOf(ctx, workspaceId, observer, options.peerTarget, sessions);
  return { messages, summary, peerRepresentation: renderRepresentation(peerConclusions), peerConclusions, peerCard };
}

/** The session's summaries by kind (none until the summarizer has written one). */
export async function getSessionSummaries(ctx: DomainContext, workspaceId: string, sessionId: string): Promise<{ short: SessionSummaryRecord | null; long: SessionSummaryRecord | null }> {
  const stored = await ctx.store.reasoning.summaries(workspaceId, sessionId);
  return { short: stored.find((s) => s.type === 'short') ?? null, long: stored.find((s) => s.type === 'long') ?? null };
}

/** The long summary when it fits `allowance` and is longer than the short one, else the short one when it fits. */
async function pickSummary(ctx: DomainContext, workspaceId: string, sessionId: string, allowance: number): Promise<SessionSummaryRecord | null> {
  const { short, long } = await getSessionSummaries(ctx, workspaceId, sessionId);
  if (long !== null && long.tokenCount <= allowance && long.tokenCount > (short?.tokenCount ?? 0)) return long;
  if (short !== null && short.tokenCount <= allowance) return short;
  return null;
}

/**
 * The most recent messages of the session that fit in `budget`, oldest first; with a summary,
 * none older than the message it covers up to. An unknown session has no messages.
 */
async function recentMessagesWithin(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  budget: number,
  summary: SessionSummaryRecord | null,
): Promise<MessageRecord[]> {
  const picked: MessageRecord[] = [];
  if (budget <= 0) return picked;
  let used = 0;
  let before: number | undefined;
  for (;;) {
    const batch = await ctx.store.messages.recent(workspaceId, sessionId, 200, before);
    for (const message of batch) {
      if (used + message.tokenCount > budget) return picked.reverse();
      used += message.tokenCount;
      const { seq: _seq, ...record } = message;
      picked.push(record);
      if (summary !== null && record.id === summary.messageId) return picked.reverse();
    }
    if (batch.length < 200) return picked.reverse();
    before = batch[batch.length - 1].seq;
  }
}
