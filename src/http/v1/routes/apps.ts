import { createApp, getApp, getAppByName, getOrCreateApp, listApps, updateApp } from '../../../domain/v1/apps.js';
import { checkV1AppRead } from '../../shared/auth.js';
import { pagedReversible } from '../../shared/fields.js';
import { presentPage } from '../../shared/present.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { optional, str, validationBody } from '../../shared/validate.js';
import { presentApp } from '../present.js';
import { AppCreate, AppUpdate, ListBody, checkPathName } from '../schemas.js';

/** contract-v1 §2.1. An app is a workspace: `name` is the workspace id. */
export function mountAppRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['apps'];

  route({
    method: 'GET',
    url: '/v1/apps',
    scope: { kind: 'self' },
    summary: 'Get an app by id (or the one the token is scoped to)',
    tags,
    query: { app_id: optional(str()) },
    async handler({ query, claims }) {
      const appId = checkV1AppRead(claims, query.app_id || undefined);
      return { status: 200, body: presentApp(await getApp(ctx, appId)) };
    },
  });

  route({
    method: 'POST',
    url: '/v1/apps',
    scope: { kind: 'admin' },
    summary: 'Create an app',
    tags,
    body: { schema: AppCreate, required: true },
    async handler({ body }) {
      return { status: 200, body: presentApp(await createApp(ctx, body)) };
    },
  });

  route({
    method: 'POST',
    url: '/v1/apps/list',
    scope: { kind: 'admin' },
    summary: 'List apps',
    tags,
    query: pagedReversible,
    body: { schema: ListBody, required: false },
    async handler({ query, body }) {
      const page = await listApps(ctx, { filter: body?.filter ?? null, ...query });
      return { status: 200, body: presentPage(page, query.page, query.size, presentApp) };
    },
  });

  route({
    method: 'GET',
    url: '/v1/apps/name/:name',
    scope: { kind: 'admin' },
    summary: 'Get an app by name',
    tags,
    async handler({ params }) {
      return { status: 200, body: presentApp(await getAppByName(ctx, params.name)) };
    },
  });

  route({
    method: 'GET',
    url: '/v1/apps/get_or_create/:name',
    scope: { kind: 'admin' },
    summary: 'Get or create an app by name',
    tags,
    async handler({ params }) {
      const invalid = checkPathName(params.name, 'name');
      if (invalid.length > 0) return { status: 422, body: validationBody(invalid, 'v1') };
      return { status: 200, body: presentApp(await getOrCreateApp(ctx, params.name)) };
    },
  });

  route({
    method: 'PUT',
    url: '/v1/apps/:app_id',
    scope: { kind: 'workspace' },
    summary: 'Update an app (a new name renames the workspace)',
    tags,
    body: { schema: AppUpdate, required: true },
    async handler({ params, body }) {
      return { status: 200, body: presentApp(await updateApp(ctx, params.app_id, body)) };
    },
  });
}
