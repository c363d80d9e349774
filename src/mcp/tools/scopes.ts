import { z } from 'zod';
import { isoTime } from '../../http/shared/present.js';
import { json, tool, type ToolSpec } from '../tool.js';
import { FIRST_PAGE, PAGE_SIZE, idItem, metadataShape, pageFields, pageOf, workspaceId } from './shapes.js';

/*
 * Scopes (docs/reasoning.md, "Scopes"): a named set of sessions through which memory is read.
 * Not among the reference MCP server's tools; each stands for one route of /v3/.../scopes and
 * needs what the route needs (a workspace or admin key).
 */

const scopeId = z.string().describe('The scope: an unprefixed name (letters, digits, _ and -), e.g. "work"');
const scopeShape = z.object({ id: z.string(), metadata: metadataShape, created_at: z.string() });

export const scopeTools: ToolSpec[] = [
  tool({
    name: 'create_scope',
    title: 'Create scope',
    description:
      'Gets or creates a scope: a named set of sessions (e.g. "work", "therapy") that reads of memory can be confined to. Add sessions with add_sessions_to_scope.',
    input: { ...workspaceId, scope_id: scopeId, metadata: metadataShape.optional().describe('Replaces the scope’s metadata when given') },
    output: { scope: scopeShape, created: z.boolean() },
    failure: 'Failed to create scope',
    annotations: { idempotentHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      const { record, created } = await api.createScope(w, args.scope_id, args.metadata);
      const data = { scope: { id: record.id, metadata: record.metadata, created_at: isoTime(record.createdAt) }, created };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'list_scopes',
    title: 'List scopes',
    description: 'Lists the scopes of the workspace, oldest first (first 50, with the total).',
    input: { ...workspaceId },
    output: { scopes: z.array(scopeShape), ...pageFields },
    failure: 'Failed to list scopes',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      const page = await api.listScopes(w, FIRST_PAGE, PAGE_SIZE);
      const data = { scopes: page.items.map((s) => ({ id: s.id, metadata: s.metadata, created_at: isoTime(s.createdAt) })), ...pageOf(page, FIRST_PAGE, PAGE_SIZE) };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'add_sessions_to_scope',
    title: 'Add sessions to scope',
    description:
      'Adds 1 to 100 existing sessions to a scope. What those sessions already hold is copied into the scope in the background (see get_scope_status); new messages reach it as they come.',
    input: { ...workspaceId, scope_id: scopeId, session_ids: z.array(z.string()).describe('The sessions to add (1 to 100)') },
    output: { scope_id: z.string(), added: z.array(z.string()) },
    failure: 'Failed to add sessions to scope',
    annotations: { idempotentHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.addSessionsToScope(w, args.scope_id, args.session_ids);
      const data = { scope_id: args.scope_id, added: [...new Set(args.session_ids)] };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'remove_session_from_scope',
    title: 'Remove session from scope',
    description: 'Removes a session from a scope; what the scope formed from it is retired in the background. The session and its messages stay.',
    input: { ...workspaceId, scope_id: scopeId, session_id: z.string() },
    output: { scope_id: z.string(), removed: z.string() },
    failure: 'Failed to remove session from scope',
    annotations: { destructiveHint: true, idempotentHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.removeSessionFromScope(w, args.scope_id, args.session_id);
      const data = { scope_id: args.scope_id, removed: args.session_id };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'list_scope_sessions',
    title: 'List sessions of scope',
    description: 'Lists the sessions a scope holds now, in the order they joined (first 50, with the total).',
    input: { ...workspaceId, scope_id: scopeId },
    output: { sessions: z.array(idItem), ...pageFields },
    failure: 'Failed to list sessions of scope',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      const page = await api.scopeSessions(w, args.scope_id, FIRST_PAGE, PAGE_SIZE);
      const data = { sessions: page.items.map((s) => ({ id: s.id })), ...pageOf(page, FIRST_PAGE, PAGE_SIZE) };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'get_scope_status',
    title: 'Get scope status',
    description: 'Where the background copy of each session added to a scope stands: pending, completed (with how many conclusions were copied) or failed.',
    input: { ...workspaceId, scope_id: scopeId },
    output: { backfill_status: z.record(z.string(), z.object({ state: z.string(), updated_at: z.string(), docs_copied: z.number().int().optional() })) },
    failure: 'Failed to get scope status',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      const entries = await api.scopeStatus(w, args.scope_id);
      const backfill: Record<string, { state: string; updated_at: string; docs_copied?: number }> = {};
      for (const entry of entries) {
        backfill[entry.sessionId] = { state: entry.state, updated_at: isoTime(entry.updatedAt), ...(entry.state === 'completed' && entry.docsCopied !== null ? { docs_copied: entry.docsCopied } : {}) };
      }
      const data = { backfill_status: backfill };
      return { text: json(data), data };
    },
  }),
];
