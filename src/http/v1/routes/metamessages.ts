import {
  createMetamessage,
  getMetamessage,
  listMetamessages,
  updateMetamessage,
} from '../../../domain/v1/metamessages.js';
import { pagedReversible } from '../../shared/fields.js';
import { presentPage } from '../../shared/present.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { presentMetamessage } from '../present.js';
import { MetamessageCreate, MetamessageList, MetamessageUpdate } from '../schemas.js';

const METAMESSAGES = '/v1/apps/:app_id/users/:user_id/metamessages';

/**
 * contract-v1 §1. Every route is S(app, user): an admin token, or one whose `ap` is this app or
 * whose `us` is this user; session tokens are refused (§4.4).
 */
export function mountMetamessageRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['metamessages'];

  route({
    method: 'POST',
    url: METAMESSAGES,
    scope: { kind: 'peer' },
    summary: 'Create a metamessage',
    tags,
    body: { schema: MetamessageCreate, required: true },
    async handler({ params, body }) {
      const created = await createMetamessage(ctx, params.app_id, params.user_id, {
        label: body.metamessage_type,
        content: body.content,
        sessionId: body.session_id,
        messageId: body.message_id,
        metadata: body.metadata,
      });
      return { status: 200, body: presentMetamessage(created) };
    },
  });

  route({
    method: 'POST',
    url: `${METAMESSAGES}/list`,
    scope: { kind: 'peer' },
    summary: "List a user's metamessages",
    tags,
    query: pagedReversible,
    body: { schema: MetamessageList, required: false },
    async handler({ params, query, body }) {
      const match = { label: body?.metamessage_type, sessionId: body?.session_id, messageId: body?.message_id };
      const page = await listMetamessages(ctx, params.app_id, params.user_id, match, { filter: body?.filter ?? null, ...query });
      return { status: 200, body: presentPage(page, query.page, query.size, presentMetamessage) };
    },
  });

  route({
    method: 'GET',
    url: `${METAMESSAGES}/:metamessage_id`,
    scope: { kind: 'peer' },
    summary: 'Get a metamessage',
    tags,
    async handler({ params }) {
      return { status: 200, body: presentMetamessage(await getMetamessage(ctx, params.app_id, params.user_id, params.metamessage_id)) };
    },
  });

  // seed 4.1
  route({
    method: 'PUT',
    url: `${METAMESSAGES}/:metamessage_id`,
    scope: { kind: 'peer' },
    summary: "Update a metamessage's metadata, type or relationships",
    tags,
    body: { schema: MetamessageUpdate, required: true },
    async handler({ params, body }) {
      const updated = await updateMetamessage(ctx, params.app_id, params.user_id, params.metamessage_id, {
        sessionId: body.session_id,
        messageId: body.message_id,
        label: body.metamessage_type,
        metadata: body.metadata,
      });
      return { status: 200, body: presentMetamessage(updated) };
    },
  });
}
