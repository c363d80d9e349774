import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from '../shared/route.js';
import { workspaceApi, type WorkspaceApi } from './define-route.js';
import type { WorkspaceGeneration } from './generations.js';
import { mountChatRoutes } from './routes/chat.js';
import { mountConclusionRoutes } from './routes/conclusions.js';
import { mountDreamRoutes } from './routes/dreams.js';
import { mountKeyRoutes } from './routes/keys.js';
import { mountMessageRoutes, mountMessageUploadRoute } from './routes/messages.js';
import { mountPeerMemoryRoutes } from './routes/peer-memory.js';
import { mountPeerRoutes } from './routes/peers.js';
import { mountForgetRoutes } from './routes/forget.js';
import { mountQueueRoutes } from './routes/queue.js';
import { mountScopeRoutes } from './routes/scopes.js';
import { mountSearchContextRoutes } from './routes/search-context.js';
import { mountSessionRoutes } from './routes/sessions.js';
import { mountStatisticsRoutes } from './routes/statistics.js';
import { mountWebhookRoutes } from './routes/webhooks.js';
import { mountWorkspaceRoutes } from './routes/workspaces.js';

/** Every resource, in the order its routes are registered (and listed in the OpenAPI document). */
const RESOURCES: readonly ((api: WorkspaceApi) => void)[] = [
  mountWorkspaceRoutes,
  mountPeerRoutes,
  mountSessionRoutes,
  mountWebhookRoutes,
  mountMessageRoutes,
  mountChatRoutes,
  mountDreamRoutes,
  mountMessageUploadRoute,
  mountQueueRoutes,
  mountStatisticsRoutes,
  mountSearchContextRoutes,
  mountConclusionRoutes,
  mountPeerMemoryRoutes,
  mountKeyRoutes,
  mountScopeRoutes,
  mountForgetRoutes,
];

/** Mounts one workspace generation (v2 or v3): every route declared in routes/, as its row of generations.ts says. */
export function mountWorkspaceApi(app: FastifyInstance, deps: HttpDeps, generation: WorkspaceGeneration): void {
  const api = workspaceApi(app, deps, generation);
  for (const mount of RESOURCES) mount(api);
}
