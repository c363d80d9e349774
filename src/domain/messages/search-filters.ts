import type { JsonObject } from '../../storage/store.js';

/**
 * A search's filters as both rankings (full text and vectors) apply them: `peer_perspective` is
 * taken out (it is not a column but keeps what that peer could have seen), and scope keys in the
 * filters give way to the scope itself (contract §5.1).
 */
export function narrowSearchFilters(
  scope: { sessionId?: string; peerId?: string },
  filters: JsonObject | null | undefined,
): { filters: JsonObject | null; peerPerspective: string | undefined } {
  if (filters === null || filters === undefined) return { filters: null, peerPerspective: undefined };
  const { peer_perspective: perspective, workspace_id: _w, ...rest } = filters;
  if (scope.sessionId !== undefined) delete rest.session_id;
  if (scope.peerId !== undefined) delete rest.peer_id;
  return { filters: rest, peerPerspective: typeof perspective === 'string' ? perspective : undefined };
}
