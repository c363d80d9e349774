import type { FastifyInstance } from 'fastify';
import type { JsonObject } from '../../storage/store.js';
import { peerName, resourceId } from '../shared/fields.js';
import { defineRoute, type HttpDeps, type QueryFields, type QueryOutput, type Reply, type RouteInput, type RouteSpec } from '../shared/route.js';
import { defineUploadRoute, type UploadRouteSpec } from '../shared/upload-route.js';
import type { ValidationItem } from '../shared/validate.js';
import { domainErrorReplies } from './errors.js';
import type { WorkspaceGeneration } from './generations.js';

/** Path parameters that name something a route may create. */
export type PathId = 'workspace_id' | 'peer_id' | 'session_id';

/** A route of the workspace generations, declared once; `url` comes after the prefix (`/v3`). */
export interface WorkspaceRouteSpec<F extends QueryFields, B> extends Omit<RouteSpec<F, B>, 'generation'> {
  /** The generations that have the route; every one when absent. */
  generations?: readonly WorkspaceGeneration['name'][];
  /**
   * Checks the scope cannot express (`self` routes: the body id against the key), run after
   * validation and before the path ids.
   */
  authorize?(input: RouteInput<QueryOutput<F>, B>): void | Promise<void>;
  /**
   * Path ids checked, in this order, as a create body checks its id (a 422 the reference answers
   * with a 500), on routes that may create what the path names.
   */
  pathIds?: readonly PathId[];
}

export type WorkspaceUploadSpec = Omit<UploadRouteSpec, 'generation'> & { pathIds?: readonly PathId[] };

/** What a resource's route file gets: the definer bound to one generation, and that generation. */
export interface WorkspaceApi {
  route: <F extends QueryFields = Record<string, never>, B = undefined>(spec: WorkspaceRouteSpec<F, B>) => void;
  upload: (spec: WorkspaceUploadSpec) => void;
  g: WorkspaceGeneration;
  deps: HttpDeps;
}

/** The first bad path id as the 422 body a create body's id would give, or undefined. */
function pathIdCheck(g: WorkspaceGeneration, names: readonly PathId[]): (params: Record<string, string>) => JsonObject | undefined {
  const id = resourceId(g.name);
  // a peer's path names a scope where the route decides about it (domain/scopes/scope-guards.ts)
  const peer = peerName(g.name);
  return (params) => {
    for (const name of names) {
      const errors: ValidationItem[] = [];
      (name === 'peer_id' ? peer : id).parse(params[name], ['path', name], errors);
      if (errors.length > 0) return { detail: errors };
    }
    return undefined;
  };
}

/**
 * Wraps a handler with the declared checks, in the order the routes have always run them:
 * `authorize`, then the path ids, then the handler. Routes without them keep their handler.
 */
function guarded<I extends { params: Record<string, string> }>(
  g: WorkspaceGeneration,
  handler: (input: I) => Promise<Reply>,
  authorize: ((input: I) => void | Promise<void>) | undefined,
  pathIds: readonly PathId[] | undefined,
): (input: I) => Promise<Reply> {
  const check = pathIds === undefined ? undefined : pathIdCheck(g, pathIds);
  if (authorize === undefined && check === undefined) return handler;
  return async (input) => {
    if (authorize !== undefined) await authorize(input);
    const invalid = check?.(input.params);
    if (invalid !== undefined) return { status: 422, body: invalid };
    return handler(input);
  };
}

export function workspaceApi(app: FastifyInstance, deps: HttpDeps, g: WorkspaceGeneration): WorkspaceApi {
  const mapDomain = domainErrorReplies(g);
  const prefix = `/${g.name}`;
  return {
    g,
    deps,
    route(spec) {
      const { generations, authorize, pathIds, ...rest } = spec;
      if (generations !== undefined && !generations.includes(g.name)) return;
      defineRoute(app, deps, mapDomain, {
        ...rest,
        url: prefix + spec.url,
        generation: g.name,
        handler: guarded(g, spec.handler, authorize, pathIds),
      });
    },
    upload(spec) {
      const { pathIds, ...rest } = spec;
      defineUploadRoute(app, deps, mapDomain, { ...rest, url: prefix + spec.url, generation: g.name, handler: guarded(g, spec.handler, undefined, pathIds) });
    },
  };
}
