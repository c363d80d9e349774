import { cloneSession, createSession, deleteSession, getSession, listSessions, updateSession } from '../../../domain/v1/sessions.js';
import { checkV1SessionRead } from '../../shared/auth.js';
import { pagedReversible } from '../../shared/fields.js';
import { presentPage } from '../../shared/present.js';
import type { HttpDeps, RouteDefiner } from '../../shared/route.js';
import { bool, optional, str } from '../../shared/validate.js';
import { presentSession } from '../present.js';
import { SessionCreate, SessionList, SessionUpdate } from '../schemas.js';

const SESSIONS = '/v1/apps/:app_id/users/:user_id/sessions';
const SESSION = `${SESSIONS}/:session_id`;

/** contract-v1 §2.3 (chat is not served). A session is one the user's peer is a member of. */
export function mountSessionRoutes(route: RouteDefiner, { ctx }: HttpDeps): void {
  const tags = ['sessions'];

  route({
    method: 'GET',
    url: SESSIONS,
    scope: { kind: 'self' },
    summary: 'Get a session by id (or the one the token is scoped to)',
    tags,
    query: { session_id: optional(str()) },
    async handler({ params, query, claims }) {
      const sessionId = checkV1SessionRead(claims, params.app_id, params.user_id, query.session_id || undefined);
      return { status: 200, body: presentSession(await getSession(ctx, params.app_id, params.user_id, sessionId)) };
    },
  });

  route({
    method: 'POST',
    url: SESSIONS,
    scope: { kind: 'peer' },
    summary: 'Create a session for a user',
    tags,
    body: { schema: SessionCreate, required: true },
    async handler({ params, body }) {
      return { status: 200, body: presentSession(await createSession(ctx, params.app_id, params.user_id, body.metadata)) };
    },
  });

  route({
    method: 'POST',
    url: `${SESSIONS}/list`,
    scope: { kind: 'peer' },
    summary: "List a user's sessions",
    tags,
    query: pagedReversible,
    body: { schema: SessionList, required: false },
    async handler({ params, query, body }) {
      const page = await listSessions(ctx, params.app_id, params.user_id, body?.is_active ?? false, {
        filter: body?.filter ?? null,
        ...query,
      });
      return { status: 200, body: presentPage(page, query.page, query.size, presentSession) };
    },
  });

  route({
    method: 'PUT',
    url: SESSION,
    scope: { kind: 'session' },
    summary: "Replace a session's metadata",
    tags,
    body: { schema: SessionUpdate, required: true },
    async handler({ params, body }) {
      const updated = await updateSession(ctx, params.app_id, params.user_id, params.session_id, body.metadata);
      return { status: 200, body: presentSession(updated) };
    },
  });

  route({
    method: 'DELETE',
    url: SESSION,
    scope: { kind: 'session' },
    summary: 'Deactivate a session',
    tags,
    async handler({ params }) {
      await deleteSession(ctx, params.app_id, params.user_id, params.session_id);
      return { status: 200, body: { message: 'Session deleted successfully' } };
    },
  });

  route({
    method: 'GET',
    url: `${SESSION}/clone`,
    scope: { kind: 'session' },
    summary: 'Clone a session',
    tags,
    query: { message_id: optional(str()), deep_copy: optional(bool(), () => false) },
    async handler({ params, query }) {
      const clone = await cloneSession(ctx, params.app_id, params.user_id, params.session_id, {
        messageId: query.message_id,
        deepCopy: query.deep_copy,
      });
      return { status: 200, body: presentSession(clone) };
    },
  });
}
