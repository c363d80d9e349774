import type { JsonObject, Page, V1UserRecord } from '../../storage/store.js';
import { v1ListQuery, type V1ListRequest } from '../filters/filters.js';
import { inTransaction, type DomainContext } from '../context.js';
import { conflict, invalidInput, notFound } from '../errors.js';
import { V1_ASSISTANT_PEER_ID, cannotName, emptyPage, findUserOfApp } from './scope.js';

/** v1 users (contract-v1 §2.2): the peers of the app's workspace, except the assistant peer. */

const userNotFound = (userId: string) => notFound(`User with ID '${userId}' not found`);

function refuseReservedName(name: string): void {
  if (name === V1_ASSISTANT_PEER_ID) {
    throw invalidInput(`User name '${name}' is reserved for the assistant that sends messages with is_user=false`);
  }
}

async function getAppForWrite(ctx: DomainContext, appId: string) {
  // The reference reports a missing app here as 409 "User with this name already exists".
  const app = cannotName(appId) ? undefined : await ctx.store.v1.findApp(appId);
  if (app === undefined) throw notFound(`App with ID ${appId} not found`);
  return app;
}

export async function createUser(
  ctx: DomainContext,
  appId: string,
  input: { name: string; metadata: JsonObject },
): Promise<V1UserRecord> {
  refuseReservedName(input.name);
  // in a transaction, so an app deleted between the lookup and the insert is found gone when it runs again
  return inTransaction(ctx, async (ctx) => {
    const app = await getAppForWrite(ctx, appId);
    const user = await ctx.store.v1.insertUser(app.name, ctx.newId(), input.name, input.metadata, ctx.now());
    if (user === undefined) throw conflict('User with this name already exists');
    return user;
  });
}

export async function getUser(ctx: DomainContext, appId: string, userId: string): Promise<V1UserRecord> {
  const user = await findUserOfApp(ctx.store, appId, userId);
  if (user === undefined) throw userNotFound(userId);
  return user;
}

export async function getUserByName(ctx: DomainContext, appId: string, name: string): Promise<V1UserRecord> {
  const app = cannotName(appId, name) || name === V1_ASSISTANT_PEER_ID ? undefined : await ctx.store.v1.findApp(appId);
  const user = app && (await ctx.store.v1.findUserByName(app.name, name));
  if (user === undefined) throw notFound(`User with name '${name}' not found`);
  return user;
}

export async function getOrCreateUser(ctx: DomainContext, appId: string, name: string): Promise<V1UserRecord> {
  refuseReservedName(name);
  // in a transaction, as createUser
  return inTransaction(ctx, async (ctx) => {
    const app = await getAppForWrite(ctx, appId);
    const existing = await ctx.store.v1.findUserByName(app.name, name);
    if (existing !== undefined) return existing;
    const created = await ctx.store.v1.insertUser(app.name, ctx.newId(), name, {}, ctx.now());
    return created ?? getUserByName(ctx, appId, name);
  });
}

/** Unknown app: an empty page (§0.5). */
export async function listUsers(ctx: DomainContext, appId: string, query: V1ListRequest): Promise<Page<V1UserRecord>> {
  const app = cannotName(appId) ? undefined : await ctx.store.v1.findApp(appId);
  if (app === undefined) return emptyPage();
  return ctx.store.v1.listUsers(app.name, [V1_ASSISTANT_PEER_ID], v1ListQuery(ctx.store, query));
}

/**
 * Non-null fields replace the stored ones (`metadata` wholesale). The name cannot change: it is
 * the peer id that v2/v3, tokens (`p`), messages, memberships and memory records use. A `name`
 * equal to the current one is "unchanged"; another name is a 409 when it is taken (as in the
 * reference), else a 422.
 */
export async function updateUser(
  ctx: DomainContext,
  appId: string,
  userId: string,
  changes: { name?: string; metadata?: JsonObject },
): Promise<V1UserRecord> {
  const user = await getUser(ctx, appId, userId);
  if (changes.name !== undefined && changes.name !== user.name) {
    if (!cannotName(changes.name) && (await ctx.store.v1.findUserByName(user.workspaceId, changes.name)) !== undefined) {
      throw conflict('User update failed - unique constraint violation');
    }
    throw invalidInput(`A user cannot be renamed: its name '${user.name}' is the id of its peer in v2 and v3`);
  }
  if (changes.metadata === undefined) return user;
  // in a transaction of its own: the workspace row is locked before the peer's (lockWorkspaceRow in storage)
  const metadata = changes.metadata;
  await inTransaction(ctx, (ctx) => ctx.store.v1.updateUserMetadata(user.workspaceId, user.name, metadata));
  return { ...user, metadata: changes.metadata };
}
