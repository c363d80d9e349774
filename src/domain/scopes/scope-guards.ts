import type { DomainContext } from '../context.js';
import { invalidInput, notFound } from '../errors.js';
import { isReservedName, pythonList } from './scope-names.js';

/*
 * A scope may observe; a scope is never observed (shared/reference/scopes.md S4). Each route
 * that names peers refuses a scope where no representation of one can exist, and a name of the
 * reserved namespace where none exists yet (it may become a scope later), with the reference's
 * texts. Only names with the reserved prefix are looked up, so ordinary requests pay nothing.
 */

/** Why a scope is refused in a position: the sentence that ends the 422. */
export const SCOPE_ACTIONS = {
  chat: 'No representation is formed of a scope, so a scope cannot be a chat observer or target.',
  representation: 'No representation is formed of a scope, so a scope cannot be a representation observer or target.',
  contextTarget: 'No representation is formed of a scope, so a scope cannot be a context target.',
  perspective: 'Use the `scope` parameter instead.',
  peerContext: 'Use the `scope` option on the read routes instead.',
  card: 'No peer card is ever formed about a scope.',
  conclusion: 'No conclusion is ever formed about a scope.',
  dream: 'No representation is formed of a scope, so a scope cannot be the observed peer of a dream.',
  author: 'Scope peers cannot author messages.',
  membership:
    'Scope membership is managed via the scopes routes (/v3/workspaces/{workspace_id}/scopes/{scope_id}/sessions) or the `scopes` field at session creation.',
  memberConfig: 'Scope membership is managed via the scopes routes.',
} as const;

export type ScopeAction = keyof typeof SCOPE_ACTIONS;

/**
 * What a reserved name that names no peer gets: `later` 422 (it may become a scope: a read),
 * `create` 422 (the route would create the peer), `missing` a 404 Peer not found, `pass` nothing
 * (the route goes on and finds nothing).
 */
export type ReservedAbsent = 'later' | 'create' | 'missing' | 'pass';

/**
 * Refuses the real scopes among `peerIds` (422: they are scopes) and, as `absent` says, reserved
 * names that name no peer. Peers holding a reserved name without being scopes pass.
 */
export async function refuseScopes(
  ctx: DomainContext,
  workspaceId: string,
  peerIds: readonly (string | null | undefined)[],
  action: ScopeAction,
  absent: ReservedAbsent,
): Promise<void> {
  const reserved = [...new Set(peerIds.filter((id): id is string => typeof id === 'string' && isReservedName(id)))].sort();
  if (reserved.length === 0) return;
  const scopes: string[] = [];
  const missing: string[] = [];
  for (const id of reserved) {
    const peer = await ctx.store.peers.find(workspaceId, id);
    if (peer === undefined) missing.push(id);
    else if (peer.kind === 'scope') scopes.push(id);
  }
  if (scopes.length > 0) throw invalidInput(`Peer name(s) ${pythonList(scopes)} are scopes. ${SCOPE_ACTIONS[action]}`);
  if (missing.length === 0) return;
  switch (absent) {
    case 'later':
      throw invalidInput(
        `Peer name(s) ${pythonList(missing)} are in the reserved scope namespace and do not exist, so they may become scopes later. ${SCOPE_ACTIONS[action]}`,
      );
    case 'create':
      throw invalidInput(`Peer name(s) ${pythonList(missing)} use the reserved scope prefix 'scope.'. Use the scopes routes to create scopes.`);
    case 'missing':
      throw notFound(`Peer ${missing[0]} not found in workspace ${workspaceId}`);
    case 'pass':
      return;
  }
}

/** `PUT /peers/{p}` on a scope: managed through the scopes routes; a reserved name is never minted. */
export async function refuseScopeUpdate(ctx: DomainContext, workspaceId: string, peerId: string): Promise<void> {
  if (!isReservedName(peerId)) return;
  const peer = await ctx.store.peers.find(workspaceId, peerId);
  if (peer?.kind === 'scope') throw invalidInput(`Peer '${peerId}' is a scope. Use the scopes routes to manage scopes.`);
  if (peer === undefined) await refuseScopes(ctx, workspaceId, [peerId], 'author', 'create');
}
