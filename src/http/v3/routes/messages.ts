import type { FastifyInstance } from 'fastify';
import { createMessagesFromFile } from '../../../domain/messages/file-upload.js';
import { createMessages, getMessage, listMessages, updateMessage } from '../../../domain/messages/messages.js';
import { pagedReversible } from '../../shared/fields.js';
import { presentMessage, presentPage } from '../../shared/present.js';
import { checkPathId } from '../../shared/resource-schemas.js';
import { listQuery, type HttpDeps, type RouteDefiner } from '../../shared/route.js';
import { defineUploadRoute } from '../../shared/upload-route.js';
import { mapV3Error } from '../errors.js';
import { ListFilters, MessageBatchCreate, MessageUpdate } from '../schemas.js';

const MESSAGES = '/v3/workspaces/:workspace_id/sessions/:session_id/messages';

export function mountMessageRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['messages'];

  // the reference also answers the same handler with a trailing slash (contract §8)
  for (const url of [MESSAGES, `${MESSAGES}/`]) {
    route({
      method: 'POST',
      url,
      scope: { kind: 'session' },
      summary: 'Create messages (1 to 100, all or nothing)',
      tags,
      hidden: url.endsWith('/'),
      body: { schema: MessageBatchCreate, required: true },
      async handler({ params, body }) {
        const invalid = checkPathId('v3', params.workspace_id, 'workspace_id') ?? checkPathId('v3', params.session_id, 'session_id');
        if (invalid !== undefined) return { status: 422, body: invalid };
        const inputs = body.messages.map((m) => ({ peerId: m.peer_id, content: m.content, metadata: m.metadata, createdAt: m.created_at, configuration: m.configuration }));
        const messages = await createMessages(ctx, params.workspace_id, params.session_id, inputs);
        return { status: 201, body: messages.map(presentMessage) };
      },
    });
  }

  route({
    method: 'POST',
    url: `${MESSAGES}/list`,
    scope: { kind: 'session', memberRead: true },
    summary: 'List the messages of a session',
    tags,
    query: pagedReversible,
    body: { schema: ListFilters, required: false },
    async handler({ params, query, body }) {
      const page = await listMessages(ctx, params.workspace_id, params.session_id, listQuery(query, body, 'v3'));
      return { status: 200, body: presentPage(page, query.page, query.size, presentMessage) };
    },
  });

  route({
    method: 'GET',
    url: `${MESSAGES}/:message_id`,
    scope: { kind: 'session', memberRead: true },
    summary: 'Get a message',
    tags,
    async handler({ params }) {
      return { status: 200, body: presentMessage(await getMessage(ctx, params.workspace_id, params.session_id, params.message_id)) };
    },
  });

  route({
    method: 'PUT',
    url: `${MESSAGES}/:message_id`,
    scope: { kind: 'session' },
    summary: 'Update the metadata of a message',
    tags,
    body: { schema: MessageUpdate, required: true },
    async handler({ params, body }) {
      const message = await updateMessage(ctx, params.workspace_id, params.session_id, params.message_id, body.metadata);
      return { status: 200, body: presentMessage(message) };
    },
  });
}

/** `POST .../messages/upload`: a text, JSON or PDF file becomes messages (201; contract §7.4). */
export function mountMessageUploadRoute(app: FastifyInstance, deps: HttpDeps): void {
  defineUploadRoute(app, deps, mapV3Error, {
    url: `${MESSAGES}/upload`,
    generation: 'v3',
    scope: { kind: 'session' },
    summary: 'Create messages from an uploaded file (split into pieces of at most 25,000 characters)',
    tags: ['messages'],
    async handler({ params, upload }) {
      const invalid = checkPathId('v3', params.workspace_id, 'workspace_id') ?? checkPathId('v3', params.session_id, 'session_id');
      if (invalid !== undefined) return { status: 422, body: invalid };
      const messages = await createMessagesFromFile(deps.ctx, params.workspace_id, params.session_id, upload);
      return { status: 201, body: messages.map(presentMessage) };
    },
  });
}
