import type { FastifyInstance } from 'fastify';
import { keyQuery, mintScopedKey } from '../shared/keys.js';
import { routeDefiner, type HttpDeps } from '../shared/route.js';
import { mapV3Error } from './errors.js';
import { mountConclusionRoutes } from './routes/conclusions.js';
import { mountMessageRoutes, mountMessageUploadRoute } from './routes/messages.js';
import { mountChatRoutes } from './routes/chat.js';
import { mountModelFeatureRoutes } from './routes/model-features.js';
import { mountPeerMemoryRoutes } from './routes/peer-memory.js';
import { mountPeerRoutes } from './routes/peers.js';
import { mountQueueRoutes } from './routes/queue.js';
import { mountSearchContextRoutes } from './routes/search-context.js';
import { mountSessionRoutes } from './routes/sessions.js';
import { mountWebhookRoutes } from './routes/webhooks.js';
import { mountWorkspaceRoutes } from './routes/workspaces.js';

/** The v3 generation: workspaces, peers, sessions, webhooks and keys. */
export function mountV3(app: FastifyInstance, deps: HttpDeps): void {
  const route = routeDefiner(app, deps, 'v3', mapV3Error);
  mountWorkspaceRoutes(route, deps);
  mountPeerRoutes(route, deps);
  mountSessionRoutes(route, deps);
  mountWebhookRoutes(route, deps);
  mountMessageRoutes(route, deps);
  mountChatRoutes(route, deps);
  mountModelFeatureRoutes(route, deps);
  mountMessageUploadRoute(app, deps);
  mountQueueRoutes(route, deps);
  mountSearchContextRoutes(route, deps);
  mountConclusionRoutes(route, deps);
  mountPeerMemoryRoutes(route, deps);
  route({
    method: 'POST',
    url: '/v3/keys',
    scope: { kind: 'admin' },
    summary: 'Mint a scoped key',
    tags: ['keys'],
    query: keyQuery,
    async handler({ query }) {
      const needsWorkspace = query.peer_id !== undefined || query.session_id !== undefined;
      return { status: 200, body: mintScopedKey(deps, query, needsWorkspace) };
    },
  });
}
