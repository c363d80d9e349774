import type { DomainContext } from '../context.js';

/*
 * Recall confined to sessions: one rule for every read that confines a peer's memory to a set of
 * sessions, whichever way the set was named (the `filters.session_id` allowlist of chat and
 * representation, session context's `sessions` and `limit_to_session`, a list-form `scope`, which
 * names the union of its scopes' sessions). Confined, a read sees only conclusions stated in those
 * sessions (a derived one when every session its sources came from is among them: the store's
 * ConclusionScope.sessionIds), only those sessions' messages, and no peer card, since a card does
 * not record where what it says came from.
 */

/** The sessions a read is confined to; undefined when it is not. An empty list confines to nothing. */
export type Confinement = readonly string[] | undefined;

/** The one set a read is confined to: an allowlist (a list-form scope's sessions come as one), or one session. */
export function confinement(named: { allowlist?: readonly string[]; session?: string }): string[] | undefined {
  if (named.allowlist !== undefined) return [...named.allowlist];
  if (named.session !== undefined) return [named.session];
  return undefined;
}

/** Whether a read under `sessions` is confined. */
export const isConfined = (sessions: Confinement): sessions is readonly string[] => sessions !== undefined;

/** The observer's card of the target, unless the read is confined (then null). */
export async function cardOf(ctx: DomainContext, workspaceId: string, observerId: string, targetId: string, sessions: Confinement): Promise<string[] | null> {
  if (isConfined(sessions)) return null;
  return (await ctx.store.memory.findPeerCard(workspaceId, observerId, targetId)) ?? null;
}
