import type { FastifyInstance } from 'fastify';
import { DomainError, invalidInput } from '../../domain/errors.js';
import { routeDefiner, type HttpDeps } from '../shared/route.js';
import { datetime, optional, str } from '../shared/validate.js';
import { mapV1Error } from './errors.js';
import { mountAppRoutes } from './routes/apps.js';
import { mountMessageRoutes } from './routes/messages.js';
import { mountMetamessageRoutes } from './routes/metamessages.js';
import { mountSessionRoutes } from './routes/sessions.js';
import { mountUserRoutes } from './routes/users.js';

/**
 * The v1 generation (contract-v1): apps, users, sessions, messages, metamessages and keys, served
 * from the same store as v2/v3 (an app is a workspace, a user is a peer). Collections, documents
 * and chat are not served.
 */
export function mountV1(app: FastifyInstance, deps: HttpDeps): void {
  const route = routeDefiner(app, deps, 'v1', mapV1Error);
  mountAppRoutes(route, deps);
  mountUserRoutes(route, deps);
  mountSessionRoutes(route, deps);
  mountMessageRoutes(route, deps);
  mountMetamessageRoutes(route, deps);

  // contract-v1 §2.7. Unlike the reference, a key with `expires_at` carries a numeric `exp` and
  // works until then (the reference writes an ISO `exp` that no token check accepts).
  route({
    method: 'POST',
    url: '/v1/keys',
    scope: { kind: 'admin' },
    summary: 'Mint a scoped key',
    tags: ['keys'],
    query: {
      app_id: optional(str()),
      user_id: optional(str()),
      session_id: optional(str()),
      collection_id: optional(str()),
      expires_at: optional(datetime()),
    },
    async handler({ query }) {
      if (deps.mintKey === null) throw new DomainError('disabled', 'Feature is disabled');
      const v1 = {
        appId: query.app_id || undefined,
        userId: query.user_id || undefined,
        sessionId: query.session_id || undefined,
        collectionId: query.collection_id || undefined,
      };
      if (Object.values(v1).every((id) => id === undefined)) {
        throw invalidInput('At least one of app_id, user_id, session_id, or collection_id must be provided');
      }
      return { status: 200, body: { key: deps.mintKey({ v1, expiresAt: query.expires_at }) } };
    },
  });
}
