import type { JsonObject } from '../../storage/store.js';
import type { ReadRules } from '../filters/filters.js';

/** Where a message search looks: a workspace, or one session or peer of it. */
export interface SearchScope {
  workspaceId: string;
  sessionId?: string;
  peerId?: string;
}

/** What a message search asks, for both rankings (full text and vectors). */
export interface MessageSearchOptions {
  query: string;
  filters: JsonObject | null | undefined;
  limit: number;
  rules: ReadRules;
}

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

/**
 * The sessions a search's filters allow, when they say so at the top level (`session_id` equal to
 * one id, or `in` a list of ids), which every other condition is combined with, as a chat's tools
 * name the sessions its observer may see. Undefined for any other form. The vector search then
 * looks only there (filtering the workspace's nearest chunks afterwards found nothing in a
 * workspace whose nearest chunks were in other sessions); the full-text search hands them to the
 * index with the words (MessageSearch.withinSessions).
 */
export function sessionsOf(filters: JsonObject | null): string[] | undefined {
  const condition = filters?.session_id;
  // '*' matches every session
  if (typeof condition === 'string') return condition === '*' ? undefined : [condition];
  if (condition === null || typeof condition !== 'object' || Array.isArray(condition)) return undefined;
  const list = (condition as JsonObject).in;
  if (Object.keys(condition).length !== 1 || !Array.isArray(list)) return undefined;
  if (!list.every((id): id is string => typeof id === 'string' && id !== '*')) return undefined;
  return list;
}
