import { changeToken } from '../../../domain/context.js';
import { createMessagesFromFile } from '../../../domain/messages/file-upload.js';
import { createMessages, getMessage, listMessages, messagesVersion, updateMessage } from '../../../domain/messages/messages.js';
import { refuseScopes } from '../../../domain/scopes/scope-guards.js';
import { filtersBody, pagedReversible } from '../../shared/fields.js';
import { LIST_CACHE_BYTES, PageCache, isNoFilter } from '../../shared/page-cache.js';
import { presentMessage, presentPage } from '../../shared/present.js';
import { listQuery } from '../../shared/route.js';
import type { WorkspaceApi } from '../define-route.js';

const MESSAGES = '/workspaces/:workspace_id/sessions/:session_id/messages';

export function mountMessageRoutes({ route, g, deps: { ctx } }: WorkspaceApi): void {
  const tags = ['messages'];
  const pages = new PageCache(() => changeToken(ctx), LIST_CACHE_BYTES);

  for (const { suffix, isHidden } of g.messageCreatePaths) {
    route({
      method: 'POST',
      url: MESSAGES + suffix,
      scope: { kind: 'session' },
      summary: 'Create messages (1 to 100, all or nothing)',
      tags,
      hidden: isHidden,
      body: { schema: g.bodies.messageBatch, required: true },
      pathIds: ['workspace_id', 'session_id'],
      async handler({ params, body }) {
        const inputs = body.messages.map((m) => ({ peerId: m.peer_id, content: m.content, metadata: m.metadata, createdAt: m.created_at, configuration: m.configuration }));
        await refuseScopes(ctx, params.workspace_id, inputs.map((m) => m.peerId), 'author', 'create');
        const messages = await createMessages(ctx, params.workspace_id, params.session_id, inputs);
        return { status: g.createdStatus, body: messages.map(presentMessage) };
      },
    });
  }

  route({
    method: 'POST',
    url: `${MESSAGES}/list`,
    scope: { kind: 'session', memberRead: true },
    summary: 'List the messages of a session',
    tags,
    // `reverse` in both generations: v2 has it on messages and observations (contract §9.1)
    query: pagedReversible,
    body: { schema: filtersBody, required: false },
    async handler({ params, query, body }) {
      // unfiltered pages are served from cache while no message of the session changed
      const version = isNoFilter(body?.filters) ? () => messagesVersion(ctx, params.workspace_id, params.session_id) : undefined;
      const key = `${params.workspace_id}\u0000${params.session_id}\u0000${query.page}\u0000${query.size}\u0000${query.reverse === true}`;
      const json = await pages.serve(key, version, async () => {
        const page = await listMessages(ctx, params.workspace_id, params.session_id, listQuery(query, body, g.rules));
        return JSON.stringify(presentPage(page, query.page, query.size, presentMessage));
      });
      return { status: 200, json };
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
    body: { schema: g.bodies.messageUpdate, required: true },
    async handler({ params, body }) {
      const message = await updateMessage(ctx, params.workspace_id, params.session_id, params.message_id, body.metadata);
      return { status: 200, body: presentMessage(message) };
    },
  });
}

/** `POST .../messages/upload`: a text, JSON or PDF file becomes messages (contract §7.4). */
export function mountMessageUploadRoute({ upload, g, deps: { ctx } }: WorkspaceApi): void {
  upload({
    url: `${MESSAGES}/upload`,
    scope: { kind: 'session' },
    summary: 'Create messages from an uploaded file (split into pieces of at most 25,000 characters)',
    tags: ['messages'],
    pathIds: ['workspace_id', 'session_id'],
    async handler({ params, upload: file }) {
      await refuseScopes(ctx, params.workspace_id, [file.peerId], 'author', 'create');
      const messages = await createMessagesFromFile(ctx, params.workspace_id, params.session_id, file);
      return { status: g.createdStatus, body: messages.map(presentMessage) };
    },
  });
}
