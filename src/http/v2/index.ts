import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from '../shared/route.js';
import { V2 } from '../workspace-api/generations.js';
import { mountWorkspaceApi } from '../workspace-api/mount.js';

/** The v2 generation: the routes of workspace-api/ with v2's column of its generation table (contract §9). */
export function mountV2(app: FastifyInstance, deps: HttpDeps): void {
  mountWorkspaceApi(app, deps, V2);
}
