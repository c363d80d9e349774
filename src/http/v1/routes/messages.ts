import { createMessages, getMessage, listMessages, updateMessage } from '../../../domain/v1/messages.js';
import { pagedReversible } from '../../shared/fields.js';
import { presentPage } from '../../shared/present.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { presentMessage } from '../present.js';
import { ListBody, MessageBatchCreate, MessageCreate, MessageUpdate } from '../schemas.js';

const MESSAGES = '/v1/apps/:app_id/users/:user_id/sessions/:session_id/messages';

const toInput = (m: { content: string; is_user: boolean; metadata: Record<string, unknown> }) => ({
  content: m.content,
  isUser: m.is_user,
  metadata: m.metadata,
});

/** contract-v1 §2.4; every route is S(app, user, session). */
export function mountMessageRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['messages'];

  route({
    method: 'POST',
    url: MESSAGES,
    scope: { kind: 'session' },
    summary: 'Add a message to a session',
    tags,
    body: { schema: MessageCreate, required: true },
    async handler({ params, body }) {
      const [message] = await createMessages(ctx, params.app_id, params.user_id, params.session_id, [toInput(body)]);
      return { status: 200, body: presentMessage(message) };
    },
  });

  route({
    method: 'POST',
    url: `${MESSAGES}/batch`,
    scope: { kind: 'session' },
    summary: 'Add up to 100 messages to a session',
    tags,
    body: { schema: MessageBatchCreate, required: true },
    async handler({ params, body }) {
      const messages = await createMessages(ctx, params.app_id, params.user_id, params.session_id, body.messages.map(toInput));
      return { status: 200, body: messages.map(presentMessage) };
    },
  });

  route({
    method: 'POST',
    url: `${MESSAGES}/list`,
    scope: { kind: 'session' },
    summary: 'List the messages of a session',
    tags,
    query: pagedReversible,
    body: { schema: ListBody, required: false },
    async handler({ params, query, body }) {
      const page = await listMessages(ctx, params.app_id, params.user_id, params.session_id, {
        filter: body?.filter ?? null,
        ...query,
      });
      return { status: 200, body: presentPage(page, query.page, query.size, presentMessage) };
    },
  });

  route({
    method: 'GET',
    url: `${MESSAGES}/:message_id`,
    scope: { kind: 'session' },
    summary: 'Get a message',
    tags,
    async handler({ params }) {
      const message = await getMessage(ctx, params.app_id, params.user_id, params.session_id, params.message_id);
      return { status: 200, body: presentMessage(message) };
    },
  });

  route({
    method: 'PUT',
    url: `${MESSAGES}/:message_id`,
    scope: { kind: 'session' },
    summary: "Replace a message's metadata",
    tags,
    body: { schema: MessageUpdate, required: true },
    async handler({ params, body }) {
      const message = await updateMessage(ctx, params.app_id, params.user_id, params.session_id, params.message_id, body.metadata);
      return { status: 200, body: presentMessage(message) };
    },
  });
}
