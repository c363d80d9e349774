import type { ConclusionLevel, ConclusionRecord } from '../../storage/store.js';
import type { DomainContext } from '../context.js';
import { rankedTerms } from './conclusions.js';
import { getPeerCard } from './peer-cards.js';

/*
 * A peer's representation without a language model: the stored conclusions themselves, chosen
 * and ordered by fixed rules and rendered as markdown. Nothing is inferred or summarised, so the
 * same stored data always gives the same text.
 */

/** Conclusions in a representation when the request does not say (the reference's default). */
export const DEFAULT_MAX_CONCLUSIONS = 25;

export interface RepresentationOptions {
  /** The peer described; the observer itself when absent. */
  target?: string;
  /** Only conclusions stored in these sessions; all when absent. */
  sessionIds?: string[];
  /** Narrows to the conclusions sharing words with this text, best matches chosen first. */
  searchQuery?: string;
  /** With a search, how many matches to keep (at most `maxConclusions`). */
  searchTopK?: number;
  maxConclusions: number;
}

const LEVEL_ORDER: ConclusionLevel[] = ['explicit', 'deductive', 'inductive', 'contradiction'];
const LEVEL_HEADINGS: Record<ConclusionLevel, string> = {
  explicit: 'Explicit conclusions',
  deductive: 'Deductive conclusions',
  inductive: 'Inductive conclusions',
  contradiction: 'Contradictions',
};

/**
 * The conclusions a representation shows: without a search the newest `maxConclusions`; with a
 * search query that has words, the best full-text matches (`searchTopK`, capped at
 * `maxConclusions`). Newest first.
 */
export async function selectConclusions(
  ctx: DomainContext,
  workspaceId: string,
  observerId: string,
  options: RepresentationOptions,
): Promise<ConclusionRecord[]> {
  const scope = { workspaceId, observerId, observedId: options.target ?? observerId, sessionIds: options.sessionIds };
  const terms = options.searchQuery === undefined ? [] : rankedTerms(options.searchQuery);
  if (terms.length === 0) return ctx.store.memory.recentConclusions(scope, options.maxConclusions);
  return ctx.store.memory.searchConclusions({
    ...scope,
    terms,
    filters: null,
    generation: 'v3',
    limit: Math.min(options.searchTopK ?? options.maxConclusions, options.maxConclusions),
    newestFirst: true,
  });
}

function timestamp(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

/**
 * Markdown with one `## ` heading per level that has conclusions (explicit, deductive,
 * inductive, contradictions), each conclusion a `- [time] content` item in the given order;
 * continuation lines are indented. The empty string when there are none.
 */
export function renderRepresentation(conclusions: ConclusionRecord[]): string {
  const sections: string[] = [];
  for (const level of LEVEL_ORDER) {
    const items = conclusions.filter((c) => c.level === level);
    if (items.length === 0) continue;
    const lines = items.map((c) => `- [${timestamp(c.createdAt)}] ${c.content.replace(/\r?\n/g, '\n  ')}`);
    sections.push(`## ${LEVEL_HEADINGS[level]}\n\n${lines.join('\n')}`);
  }
  return sections.join('\n\n');
}

/** The observer's representation of the target (itself by default); no peer existence check. */
export async function getPeerRepresentation(
  ctx: DomainContext,
  workspaceId: string,
  observerId: string,
  options: RepresentationOptions,
): Promise<string> {
  return renderRepresentation(await selectConclusions(ctx, workspaceId, observerId, options));
}

export interface PeerContext {
  peerId: string;
  targetId: string;
  /** The conclusions shown, newest first. */
  conclusions: ConclusionRecord[];
  representation: string;
  peerCard: string[] | null;
}

/**
 * Representation and card of the target from the observer's side, in one call (contract §7.2).
 * The observer must exist (its card is read as in `getPeerCard`).
 */
export async function getPeerContext(
  ctx: DomainContext,
  workspaceId: string,
  observerId: string,
  options: Omit<RepresentationOptions, 'sessionIds'>,
): Promise<PeerContext> {
  const targetId = options.target ?? observerId;
  const peerCard = await getPeerCard(ctx, workspaceId, observerId, targetId);
  const conclusions = await selectConclusions(ctx, workspaceId, observerId, options);
  return { peerId: observerId, targetId, conclusions, representation: renderRepresentation(conclusions), peerCard };
}
