import { keyQuery, mintScopedKey } from '../../shared/keys.js';
import type { WorkspaceApi } from '../define-route.js';

export function mountKeyRoutes({ route, g, deps }: WorkspaceApi): void {
  route({
    method: 'POST',
    url: '/keys',
    scope: { kind: 'admin' },
    summary: 'Mint a scoped key',
    tags: ['keys'],
    query: keyQuery,
    async handler({ query }) {
      const needsWorkspace = g.keyNeedsWorkspace && (query.peer_id !== undefined || query.session_id !== undefined);
      return { status: 200, body: mintScopedKey(deps, query, needsWorkspace) };
    },
  });
}
