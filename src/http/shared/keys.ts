import { DomainError, invalidInput } from '../../domain/errors.js';
import { optional, str, datetime } from './validate.js';
import type { HttpDeps, KeyClaims } from './route.js';

/** Query of `POST /vN/keys` (contract §7.7). */
export const keyQuery = {
  workspace_id: optional(str()),
  peer_id: optional(str()),
  session_id: optional(str()),
  expires_at: optional(datetime()),
};

/**
 * Mints a scoped key. v3 also requires a workspace for peer and session keys. Unlike the
 * reference, a key with `expires_at` carries a numeric `exp` and works until then.
 */
export function mintScopedKey(
  deps: HttpDeps,
  query: { workspace_id?: string; peer_id?: string; session_id?: string; expires_at?: Date },
  requireWorkspace: boolean,
): { key: string } {
  if (deps.mintKey === null) throw new DomainError('disabled', 'Feature is disabled');
  if (query.workspace_id === undefined && query.peer_id === undefined && query.session_id === undefined) {
    throw invalidInput('At least one of workspace_id, peer_id, or session_id must be provided');
  }
  if (requireWorkspace && query.workspace_id === undefined) {
    throw invalidInput('workspace_id is required when scoping a key to a peer or session');
  }
  const claims: KeyClaims = {
    workspaceId: query.workspace_id,
    peerId: query.peer_id,
    sessionId: query.session_id,
    expiresAt: query.expires_at,
  };
  return { key: deps.mintKey(claims) };
}
