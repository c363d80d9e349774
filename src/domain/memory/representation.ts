import type { ConclusionLevel, ConclusionRecord } from '../../storage/store.js';
import type { DomainContext } from '../context.js';
import { vectorHalf } from './conclusions.js';
import { conclusionTerms, rankConclusions } from './conclusion-search.js';
import { getPeerCard } from './peer-cards.js';
import { DomainError } from '../errors.js';
import { embedderOf, embedQueryForRequest } from '../search/embeddings.js';
import { isoSeconds } from '../iso-seconds.js';
import { CURRENT_RULES } from '../filters/filters.js';

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
  /** With a semantic search, the largest cosine distance of a match. */
  searchMaxDistance?: number;
  maxConclusions: number;
  /**
   * When set, a query the embedding model fails to embed is not an error: the selection is made
   * without its semantic part (the most reinforced and the newest), and this is told why (v3,
   * as the reference after v3.0.12 answers: scopes.md S7.6). Unset: a 503.
   */
  onEmbeddingFailure?: (error: DomainError) => void;
}

const LEVEL_ORDER: ConclusionLevel[] = ['explicit', 'deductive', 'inductive', 'contradiction'];
const LEVEL_HEADINGS: Record<ConclusionLevel, string> = {
  explicit: 'Explicit conclusions',
  deductive: 'Deductive conclusions',
  inductive: 'Inductive conclusions',
  contradiction: 'Contradictions',
};

/**
 * The conclusions a representation shows, newest first. Without a search query: the newest
 * `maxConclusions`. With one and an embedding model (and stored vectors), the working
 * representation of reasoning.md R7 with N = `maxConclusions`: the `searchTopK` (default N/3, at
 * least 1) conclusions that best answer the query (full text and vectors fused,
 * conclusion-search.ts; full text alone when the query could not be embedded), then the N/3 most reinforced ones
 * (`times_derived`, then newest), then the newest, up to N. With a search query and no
 * embeddings: the best full-text matches alone (`searchTopK`, capped at `maxConclusions`).
 */
export async function selectConclusions(
  ctx: DomainContext,
  workspaceId: string,
  observerId: string,
  options: RepresentationOptions,
): Promise<ConclusionRecord[]> {
  const scope = { workspaceId, observerId, observedId: options.target ?? observerId, sessionIds: options.sessionIds };
  const n = options.maxConclusions;
  if (options.searchQuery !== undefined && options.searchQuery.trim() !== '' && n > 0) {
    const semanticK = Math.min(options.searchTopK ?? Math.max(1, Math.floor(n / 3)), n);
    const query = await embeddedQuery(ctx, workspaceId, options.searchQuery, options.onEmbeddingFailure);
    const byVector =
      query === 'failed'
        ? undefined
        : await vectorHalf(ctx, scope, options.searchQuery, { maxDistance: options.searchMaxDistance, filters: null, rules: CURRENT_RULES, vector: query });
    if (byVector !== undefined || query === 'failed') {
      // the best `semanticK` of the hybrid ranking (full text alone when the query could not be
      // embedded), the most reinforced, then the newest
      const chosen = await rankConclusions(ctx, scope, { query: options.searchQuery, filters: null, rules: CURRENT_RULES, limit: semanticK }, byVector);
      const taken = () => chosen.map((c) => c.id);
      const derivedK = Math.min(Math.floor(n / 3), n - chosen.length);
      if (derivedK > 0) chosen.push(...(await ctx.store.memory.mostDerivedConclusions(scope, derivedK, taken())));
      const rest = n - chosen.length;
      if (rest > 0) {
        const ids = new Set(taken());
        // read enough of the newest to fill the rest after leaving out those already chosen
        chosen.push(...(await ctx.store.memory.recentConclusions(scope, rest + ids.size)).filter((c) => !ids.has(c.id)).slice(0, rest));
      }
      return chosen.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    }
  }
  if (options.searchQuery === undefined || conclusionTerms(options.searchQuery).length === 0) return ctx.store.memory.recentConclusions(scope, n);
  // the best matches of the full-text ranking, newest first
  return rankConclusions(ctx, scope, { query: options.searchQuery, filters: null, rules: CURRENT_RULES, limit: Math.min(options.searchTopK ?? n, n), newestFirst: true });
}

/**
 * The search query's vector when a failure to embed it is tolerated (`onEmbeddingFailure`) and
 * there is something to search: 'failed' when the model failed (told to `onEmbeddingFailure`).
 * undefined otherwise: nearestConclusions embeds it, or finds there is nothing to search.
 */
async function embeddedQuery(ctx: DomainContext, workspaceId: string, query: string, onEmbeddingFailure: ((error: DomainError) => void) | undefined): Promise<readonly number[] | 'failed' | undefined> {
  if (onEmbeddingFailure === undefined || embedderOf(ctx) === undefined || (await ctx.store.vectors.dimensions()) === undefined) return undefined;
  try {
    return await embedQueryForRequest(ctx, workspaceId, query, 'the search could not run');
  } catch (error) {
    if (!(error instanceof DomainError) || error.code !== 'unavailable') throw error;
    onEmbeddingFailure(error);
    return 'failed';
  }
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
    const lines = items.map((c) => `- [${isoSeconds(c.createdAt)}] ${c.content.replace(/\r?\n/g, '\n  ')}`);
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
