import type { JsonObject, Page, V1AppRecord } from '../../storage/store.js';
import { v1ListQuery, type V1ListRequest } from '../filters/filters.js';
import type { DomainContext } from '../context.js';
import { conflict, invalidInput, notFound } from '../errors.js';
import { cannotName } from './scope.js';

/** v1 apps (contract-v1 §2.1): the workspaces, named by their id, addressed by their v1 id. */

const appNotFound = (appId: string) => notFound(`App with ID ${appId} not found`);

export async function getApp(ctx: DomainContext, appId: string): Promise<V1AppRecord> {
  const app = cannotName(appId) ? undefined : await ctx.store.v1.findApp(appId);
  if (app === undefined) throw appNotFound(appId);
  return app;
}

/** The app (workspace) with this name, or undefined. */
export function findAppByName(ctx: DomainContext, name: string): Promise<V1AppRecord | undefined> {
  return cannotName(name) ? Promise.resolve(undefined) : ctx.store.v1.findAppByName(name);
}

export async function getAppByName(ctx: DomainContext, name: string): Promise<V1AppRecord> {
  const app = await findAppByName(ctx, name);
  if (app === undefined) throw notFound(`App with name '${name}' not found`);
  return app;
}

export async function createApp(ctx: DomainContext, input: { name: string; metadata: JsonObject }): Promise<V1AppRecord> {
  const app = await ctx.store.v1.insertApp(ctx.newId(), input.name, input.metadata, ctx.now());
  if (app === undefined) throw conflict(`App with name '${input.name}' already exists`);
  return app;
}

/** The app with this name; created with empty metadata when there is none. */
export async function getOrCreateApp(ctx: DomainContext, name: string): Promise<V1AppRecord> {
  const existing = await ctx.store.v1.findAppByName(name);
  if (existing !== undefined) return existing;
  const created = await ctx.store.v1.insertApp(ctx.newId(), name, {}, ctx.now());
  // lost a race with another creator: theirs is the app
  return created ?? getAppByName(ctx, name);
}

export function listApps(ctx: DomainContext, query: V1ListRequest): Promise<Page<V1AppRecord>> {
  return ctx.store.v1.listApps(v1ListQuery(ctx.store, query));
}

/**
 * Non-null fields replace the stored ones (`metadata` wholesale). The name cannot change: it is
 * the workspace id, the identity v2/v3 clients, their tokens (`w`) and every row of the
 * workspace use. A `name` equal to the current one is accepted as "unchanged"; another name is
 * a 409 when it is taken (as in the reference), else a 422.
 */
export async function updateApp(
  ctx: DomainContext,
  appId: string,
  changes: { name?: string; metadata?: JsonObject },
): Promise<V1AppRecord> {
  const app = await getApp(ctx, appId);
  if (changes.name !== undefined && changes.name !== app.name) {
    if ((await findAppByName(ctx, changes.name)) !== undefined) throw conflict('App update failed - unique constraint violation');
    throw invalidInput(`An app cannot be renamed: its name '${app.name}' is the id of its workspace in v2 and v3`);
  }
  if (changes.metadata === undefined) return app;
  await ctx.store.v1.updateAppMetadata(app.name, changes.metadata);
  return { ...app, metadata: changes.metadata };
}
