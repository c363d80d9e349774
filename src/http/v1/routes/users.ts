import { createUser, getOrCreateUser, getUser, getUserByName, listUsers, updateUser } from '../../../domain/v1/users.js';
import { checkV1UserRead } from '../../shared/auth.js';
import { pagedReversible } from '../../shared/fields.js';
import { presentPage } from '../../shared/present.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { optional, str, validationBody } from '../../shared/validate.js';
import { presentUser } from '../present.js';
import { ListBody, UserCreate, UserUpdate, checkPathName } from '../schemas.js';

const USERS = '/v1/apps/:app_id/users';

/** contract-v1 §2.2. A user is a peer of the app's workspace: `name` is the peer id. */
export function mountUserRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['users'];

  // S(app, user from the query): `?user_id=` is only read by the scope check (contract-v1 §4.4)
  route({
    method: 'POST',
    url: USERS,
    scope: { kind: 'peer' },
    summary: 'Create a user',
    tags,
    body: { schema: UserCreate, required: true },
    async handler({ params, body }) {
      return { status: 200, body: presentUser(await createUser(ctx, params.app_id, body)) };
    },
  });

  route({
    method: 'GET',
    url: USERS,
    scope: { kind: 'self' },
    summary: 'Get a user by id (or the one the token is scoped to)',
    tags,
    query: { user_id: optional(str()) },
    async handler({ params, query, claims }) {
      const userId = checkV1UserRead(claims, params.app_id, query.user_id || undefined);
      return { status: 200, body: presentUser(await getUser(ctx, params.app_id, userId)) };
    },
  });

  route({
    method: 'POST',
    url: `${USERS}/list`,
    scope: { kind: 'peer' },
    summary: 'List the users of an app',
    tags,
    query: pagedReversible,
    body: { schema: ListBody, required: false },
    async handler({ params, query, body }) {
      const page = await listUsers(ctx, params.app_id, { filter: body?.filter ?? null, ...query });
      return { status: 200, body: presentPage(page, query.page, query.size, presentUser) };
    },
  });

  route({
    method: 'GET',
    url: `${USERS}/name/:name`,
    scope: { kind: 'workspace' },
    summary: 'Get a user by name',
    tags,
    async handler({ params }) {
      return { status: 200, body: presentUser(await getUserByName(ctx, params.app_id, params.name)) };
    },
  });

  route({
    method: 'GET',
    url: `${USERS}/get_or_create/:name`,
    scope: { kind: 'workspace' },
    summary: 'Get or create a user by name',
    tags,
    async handler({ params }) {
      const invalid = checkPathName(params.name, 'name');
      if (invalid.length > 0) return { status: 422, body: validationBody(invalid, 'v1') };
      return { status: 200, body: presentUser(await getOrCreateUser(ctx, params.app_id, params.name)) };
    },
  });

  route({
    method: 'PUT',
    url: `${USERS}/:user_id`,
    scope: { kind: 'peer' },
    summary: 'Update a user (a new name renames the peer)',
    tags,
    body: { schema: UserUpdate, required: true },
    async handler({ params, body }) {
      return { status: 200, body: presentUser(await updateUser(ctx, params.app_id, params.user_id, body)) };
    },
  });
}
