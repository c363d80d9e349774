import { FORGET_DEFAULT_LIMIT, FORGET_MAX_LIMIT, forget, listForgets } from '../../../domain/memory/forget.js';
import type { Claims } from '../../shared/auth.js';
import { paged } from '../../shared/fields.js';
import { presentConclusion, presentMessage, presentPage } from '../../shared/present.js';
import { isoTime } from '../../shared/present.js';
import { bool, dict, int, model, nullable, optional, required, str } from '../../shared/validate.js';
import type { ForgetRecord } from '../../../storage/store.js';
import type { WorkspaceApi } from '../define-route.js';

/** A forget: whose memory (`observed`, and `observer` or every observer), what (a query and/or filters), and the preview's token. */
const ForgetBody = model(
  {
    observed: required(str({ minLength: 1 })),
    observer: optional(nullable(str({ minLength: 1 }))),
    query: optional(nullable(str({ minLength: 1, maxLength: 10_000 }))),
    filters: optional(nullable(dict())),
    include_messages: optional(bool(), () => false),
    limit: optional(int({ ge: 1, le: FORGET_MAX_LIMIT }), () => FORGET_DEFAULT_LIMIT),
    token: optional(nullable(str({ minLength: 1, maxLength: 200 }))),
  },
  { title: 'ForgetRequest' },
);

/** Who asked, as the record keeps it: the key's scope, never the key. */
function actorOf(claims: Claims): string {
  if (claims.isAdmin) return 'admin';
  if (claims.peerId !== undefined) return `peer:${claims.workspaceId ?? ''}/${claims.peerId}`;
  return claims.workspaceId !== undefined ? `workspace:${claims.workspaceId}` : 'unknown';
}

function presentRecord(record: ForgetRecord) {
  return {
    id: record.id,
    workspace_id: record.workspaceId,
    observed: record.observedId,
    observer: record.observerId,
    actor: record.actor,
    conclusions_removed: record.conclusionsRemoved,
    messages_removed: record.messagesRemoved,
    created_at: isoTime(record.createdAt),
  };
}

/** Forgetting chosen conclusions about a peer (docs/forgetting.md): additions to the reference's interface. */
export function mountForgetRoutes({ route, g, deps: { ctx } }: WorkspaceApi): void {
  if (g.name !== 'v3') return;
  const tags = ['forget'];

  route({
    generations: ['v3'],
    method: 'POST',
    url: '/workspaces/:workspace_id/forget',
    scope: { kind: 'workspace' },
    summary: 'Forget conclusions about a peer: without `token` a preview (and a token), with it the removal of exactly what was previewed',
    tags,
    body: { schema: ForgetBody, required: true },
    async handler({ params, body, claims }) {
      const result = await forget(
        ctx,
        params.workspace_id,
        {
          observedId: body.observed,
          observerId: body.observer ?? undefined,
          query: body.query ?? undefined,
          filters: body.filters ?? undefined,
          includeMessages: body.include_messages,
          limit: body.limit,
        },
        body.token ?? undefined,
        actorOf(claims),
      );
      if (result.kind === 'forgotten') {
        return { status: 200, body: { status: 'forgotten', record: presentRecord(result.record) } };
      }
      return {
        status: 200,
        body: {
          status: 'preview',
          token: result.token,
          expires_at: isoTime(result.expiresAt),
          conclusions: result.conclusions.map(presentConclusion),
          ...(result.messages === undefined ? {} : { messages: result.messages.map(presentMessage) }),
        },
      };
    },
  });

  route({
    generations: ['v3'],
    method: 'GET',
    url: '/workspaces/:workspace_id/forget/records',
    scope: { kind: 'admin' },
    summary: 'The forgets carried out in a workspace, newest first (who, when, how many; never the content)',
    tags,
    query: paged,
    async handler({ params, query }) {
      const page = await listForgets(ctx, params.workspace_id, query.page, query.size);
      return { status: 200, body: presentPage(page, query.page, query.size, presentRecord) };
    },
  });
}
