import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from '../shared/route.js';
import { V3 } from '../workspace-api/generations.js';
import { mountWorkspaceApi } from '../workspace-api/mount.js';

/** The v3 generation: the routes of workspace-api/ with v3's column of its generation table. */
export function mountV3(app: FastifyInstance, deps: HttpDeps): void {
  mountWorkspaceApi(app, deps, V3);
}
