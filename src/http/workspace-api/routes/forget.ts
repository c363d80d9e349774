import { forget, listForgets } from '../../../domain/memory/forget.js';
import { actorOf } from '../../shared/auth/workspace-rules.js';
import { paged } from '../../shared/fields.js';
import { ForgetBody, forgetRequestOf } from '../../shared/memory-schemas.js';
import { presentConclusion, presentForgetRecord, presentMessage, presentPage, isoTime } from '../../shared/present.js';
import type { WorkspaceApi } from '../define-route.js';

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
      const result = await forget(ctx, params.workspace_id, forgetRequestOf(body), body.token ?? undefined, actorOf(claims));
      if (result.kind === 'forgotten') {
        return { status: 200, body: { status: 'forgotten', record: presentForgetRecord(result.record) } };
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
      return { status: 200, body: presentPage(page, query.page, query.size, presentForgetRecord) };
    },
  });
}
