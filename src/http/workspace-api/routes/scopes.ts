import {
  addSessionsToScope,
  createScope,
  getScope,
  listScopes,
  listScopeSessions,
  removeSessionFromScope,
  scopeStatus,
  type Scope,
} from '../../../domain/scopes/scopes.js';
import type { ScopeBackfillRecord } from '../../../storage/store.js';
import { pagedReversible } from '../../shared/fields.js';
import { isoTime, presentPage, presentSession } from '../../shared/present.js';
import { ScopeCreate, ScopeSessionsAdd } from '../../shared/scope-schemas.js';
import type { WorkspaceApi } from '../define-route.js';

const SCOPES = '/workspaces/:workspace_id/scopes';
const SCOPE = `${SCOPES}/:scope_id`;

function presentScope(scope: Scope) {
  return { id: scope.id, metadata: scope.metadata, created_at: isoTime(scope.createdAt) };
}

/** A time as the status route writes it: microseconds and a `+00:00` offset. */
function offsetTime(date: Date): string {
  const iso = isoTime(date).replace(/Z$/, '');
  const [seconds, fraction = ''] = iso.split('.');
  return `${seconds}.${fraction.padEnd(6, '0')}+00:00`;
}

function presentStatus(entries: ScopeBackfillRecord[]) {
  const backfill: Record<string, unknown> = {};
  for (const entry of entries) {
    backfill[entry.sessionId] = {
      state: entry.state,
      updated_at: offsetTime(entry.updatedAt),
      ...(entry.state === 'completed' && entry.docsCopied !== null ? { docs_copied: entry.docsCopied } : {}),
    };
  }
  return { backfill_status: backfill };
}

/** Scopes (shared/reference/scopes.md S2): v3 only, workspace-level keys only (S3). */
export function mountScopeRoutes({ route, deps: { ctx } }: WorkspaceApi): void {
  const tags = ['scopes'];
  const generations = ['v3'] as const;

  route({
    generations,
    method: 'POST',
    url: SCOPES,
    scope: { kind: 'workspace' },
    summary: 'Get or create a scope (201 when created, 200 when it existed; given metadata replaces)',
    tags,
    body: { schema: ScopeCreate, required: true },
    pathIds: ['workspace_id'],
    async handler({ params, body }) {
      const { record, created } = await createScope(ctx, params.workspace_id, body);
      return { status: created ? 201 : 200, body: presentScope(record) };
    },
  });

  route({
    generations,
    method: 'POST',
    url: `${SCOPES}/list`,
    scope: { kind: 'workspace' },
    summary: 'List the scopes of a workspace, oldest first',
    tags,
    query: pagedReversible,
    async handler({ params, query }) {
      const page = await listScopes(ctx, params.workspace_id, { page: query.page, size: query.size, reverse: query.reverse ?? false });
      return { status: 200, body: presentPage(page, query.page, query.size, presentScope) };
    },
  });

  route({
    generations,
    method: 'GET',
    url: SCOPE,
    scope: { kind: 'workspace' },
    summary: 'Get a scope',
    tags,
    async handler({ params }) {
      return { status: 200, body: presentScope(await getScope(ctx, params.workspace_id, params.scope_id)) };
    },
  });

  route({
    generations,
    method: 'POST',
    url: `${SCOPE}/sessions`,
    scope: { kind: 'workspace' },
    summary: 'Add sessions to a scope (1 to 100); sessions that hold messages are backfilled in the background',
    tags,
    body: { schema: ScopeSessionsAdd, required: true },
    async handler({ params, body }) {
      await addSessionsToScope(ctx, params.workspace_id, params.scope_id, body.session_ids);
      return { status: 204 };
    },
  });

  route({
    generations,
    method: 'DELETE',
    url: `${SCOPE}/sessions/:session_id`,
    scope: { kind: 'workspace' },
    summary: "Remove a session from a scope; what the scope holds from it is retired in the background",
    tags,
    async handler({ params }) {
      await removeSessionFromScope(ctx, params.workspace_id, params.scope_id, params.session_id);
      return { status: 204 };
    },
  });

  route({
    generations,
    method: 'POST',
    url: `${SCOPE}/sessions/list`,
    scope: { kind: 'workspace' },
    summary: 'List the sessions of a scope, in the order they joined',
    tags,
    query: pagedReversible,
    async handler({ params, query }) {
      const page = await listScopeSessions(ctx, params.workspace_id, params.scope_id, { page: query.page, size: query.size, reverse: query.reverse ?? false });
      return { status: 200, body: presentPage(page, query.page, query.size, presentSession) };
    },
  });

  route({
    generations,
    method: 'GET',
    url: `${SCOPE}/status`,
    scope: { kind: 'workspace' },
    summary: 'The backfill state of each session added to a scope',
    tags,
    async handler({ params }) {
      return { status: 200, body: presentStatus(await scopeStatus(ctx, params.workspace_id, params.scope_id)) };
    },
  });
}
