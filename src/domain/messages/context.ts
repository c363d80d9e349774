import type { ConclusionRecord, MessageRecord } from '../../storage/store.js';
import type { DomainContext } from '../context.js';
import { DEFAULT_MAX_CONCLUSIONS, renderRepresentation, selectConclusions } from '../memory/representation.js';

export interface SessionContext {
  messages: MessageRecord[];
  /** Filled once summaries exist; the budget share they may take is kept for them. */
  summary: null;
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
  const messages = await recentMessagesWithin(ctx, workspaceId, sessionId, options);
  if (options.peerTarget === undefined) return { messages, summary: null, peerRepresentation: null, peerConclusions: null, peerCard: null };
  const observer = options.peerPerspective ?? options.peerTarget;
  const peerConclusions = await selectConclusions(ctx, workspaceId, observer, {
    target: options.peerTarget,
    sessionIds: options.limitToSession ? [sessionId] : options.sessionAllowlist,
    searchQuery: options.searchQuery,
    searchTopK: options.searchTopK,
    maxConclusions: options.maxConclusions ?? DEFAULT_MAX_CONCLUSIONS,
  });
  const peerCard =
    options.sessionAllowlist !== undefined ? null : ((await ctx.store.memory.findPeerCard(workspaceId, observer, options.peerTarget)) ?? null);
  return { messages, summary: null, peerRepresentation: renderRepresentation(peerConclusions), peerConclusions, peerCard };
}

async function recentMessagesWithin(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  options: { tokens: number; includeSummary: boolean },
): Promise<MessageRecord[]> {
  const summaryTokens = 0; // no summaries yet: nothing taken from the budget
  const budget = options.includeSummary ? options.tokens - Math.min(summaryTokens, options.tokens * SUMMARY_SHARE) : options.tokens;
  const picked: MessageRecord[] = [];
  if (options.tokens <= 0) return picked;
  let used = 0;
  let before: number | undefined;
  for (;;) {
    const batch = await ctx.store.recentMessages(workspaceId, sessionId, 200, before);
    for (const message of batch) {
      if (used + message.tokenCount > budget) return picked.reverse();
      used += message.tokenCount;
      const { seq: _seq, ...record } = message;
      picked.push(record);
    }
    if (batch.length < 200) return picked.reverse();
    before = batch[batch.length - 1].seq;
  }
}
