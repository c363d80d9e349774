import { z } from 'zod';
import { isoTime } from '../../http/shared/present.js';
import { AuthError } from '../../http/shared/auth.js';
import { InvalidInput } from '../api.js';
import { DomainError } from '../../domain/errors.js';
import type { QueueStatusCounts } from '../../domain/queue/queue-status.js';
import { json, tool, type ToolSpec } from '../tool.js';
import { FIRST_PAGE, PAGE_SIZE, conclusion, conclusionShape, idItem, message, messageShape, metadataShape, pageFields, pageOf, workspaceId } from './shapes.js';

const ADMIN_HINT = '. This operation is only possible with an admin API key.';

/** Workspace-level tools and the search that spans a workspace. */
export const workspaceTools: ToolSpec[] = [
  tool({
    name: 'inspect_workspace',
    title: 'Inspect workspace',
    description: 'One-glance summary of the workspace: its metadata and configuration, and the first 50 of its peers and of its sessions with their counts.',
    input: { ...workspaceId },
    output: {
      workspace_id: z.string(),
      metadata: metadataShape,
      configuration: metadataShape,
      peer_count: z.number().int(),
      peers: z.array(idItem),
      session_count: z.number().int(),
      sessions: z.array(idItem),
    },
    failure: 'Failed to inspect workspace',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      const record = await api.ensureWorkspace(w);
      const [peers, sessions] = await Promise.all([api.listPeers(w), api.listSessions(w)]);
      const data = {
        workspace_id: w,
        metadata: record.metadata,
        configuration: record.configuration,
        peer_count: peers.total,
        peers: peers.items.map((p) => ({ id: p.id })),
        session_count: sessions.total,
        sessions: sessions.items.map((s) => ({ id: s.id })),
      };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'list_workspaces',
    title: 'List workspaces',
    description:
      'Lists the workspaces (needs an admin key when authentication is on). Skip it when the connection already names a workspace.\nUse it to pick a workspace by id or metadata before the first workspace tool call.',
    input: {
      page: z.number().int().min(1).optional().describe('Page number (default 1)'),
      size: z.number().int().min(1).max(100).optional().describe('Page size (default 50)'),
    },
    output: { workspaces: z.array(z.object({ id: z.string(), metadata: metadataShape, created_at: z.string() })), ...pageFields },
    failure: 'Failed to list workspaces',
    annotations: { readOnlyHint: true },
    async run(args, { api }) {
      const page = args.page ?? FIRST_PAGE;
      const size = args.size ?? PAGE_SIZE;
      try {
        const found = await api.listWorkspaces(page, size);
        const data = { workspaces: found.items.map((w) => ({ id: w.id, metadata: w.metadata, created_at: isoTime(w.createdAt) })), ...pageOf(found, page, size) };
        return { text: json(data), data };
      } catch (error) {
        if (error instanceof AuthError) throw new AuthError(error.detail + ADMIN_HINT);
        throw error;
      }
    },
  }),

  tool({
    name: 'create_workspace',
    title: 'Create workspace',
    description:
      'Gets or creates the workspace named by workspace_id, with optional metadata (project, purpose) for a new one.\nUse it when no existing workspace fits; reuse its id for the rest of the conversation.',
    input: { ...workspaceId, metadata: metadataShape.optional().describe('Metadata of a new workspace') },
    output: { id: z.string(), metadata: metadataShape, created_at: z.string() },
    failure: 'Failed to create workspace',
    annotations: { idempotentHint: true },
    async run(args, { api, workspace }) {
      try {
        const record = await api.ensureWorkspace(workspace(args.workspace_id), args.metadata);
        const data = { id: record.id, metadata: record.metadata, created_at: isoTime(record.createdAt) };
        return { text: json(data), data };
      } catch (error) {
        if (error instanceof AuthError) throw new AuthError(error.detail + ADMIN_HINT);
        throw error;
      }
    },
  }),

  tool({
    name: 'search',
    title: 'Search memory',
    description:
      "Searches messages by relevance: in a session with session_id, among a peer's messages with peer_id, else the whole workspace.\nWith peer_id it also searches the peer's conclusions about itself.\nFast; prefer it (or the context tools) to chat for looking things up.",
    input: {
      ...workspaceId,
      query: z.string().describe('What to look for'),
      peer_id: z.string().optional().describe("Search this peer's messages and its conclusions about itself"),
      session_id: z.string().optional().describe("Search this session's messages only"),
      message_limit: z.number().optional().describe('Most messages returned (1 to 100, default 10)'),
      message_filters: metadataShape.optional().describe('Filters on messages (the filter language of the API)'),
      conclusion_top_k: z.number().optional().describe('Most conclusions returned (1 to 100, default 10)'),
      conclusion_filters: metadataShape.optional().describe('Filters on conclusions'),
    },
    output: { messages: z.array(messageShape), conclusions: z.array(conclusionShape) },
    failure: 'Search failed',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      if (args.peer_id !== undefined) await api.ensurePeer(w, args.peer_id);
      if (args.session_id !== undefined) await api.ensureSession(w, args.session_id);
      const body = { query: args.query, filters: args.message_filters, limit: args.message_limit };
      const scope =
        args.session_id !== undefined
          ? { workspaceId: w, sessionId: args.session_id }
          : args.peer_id !== undefined
            ? { workspaceId: w, peerId: args.peer_id }
            : { workspaceId: w };
      const messages = await api.searchMessages(scope, body);
      let conclusions: ReturnType<typeof conclusion>[] = [];
      if (args.peer_id !== undefined) {
        try {
          const filters = { ...args.conclusion_filters, observer_id: args.peer_id, observed_id: args.peer_id };
          conclusions = (await api.queryConclusions(w, { query: args.query, top_k: args.conclusion_top_k, filters })).map(conclusion);
        } catch (error) {
          // as the reference: the conclusion leg adds what it can; only filters it was given and refused fail the tool
          const refusedFilters = args.conclusion_filters !== undefined && (error instanceof InvalidInput || (error instanceof DomainError && error.code === 'invalid_input'));
          if (refusedFilters) throw error;
        }
      }
      const data = { messages: messages.map(message), conclusions };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'get_metadata',
    title: 'Get metadata',
    description: 'Reads the metadata of a session (session_id), else of a peer (peer_id), else of the workspace.',
    input: { ...workspaceId, peer_id: z.string().optional(), session_id: z.string().optional() },
    output: { metadata: metadataShape },
    failure: 'Failed to get metadata',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      const record = await api.ensureWorkspace(w);
      const metadata =
        args.session_id !== undefined
          ? (await api.ensureSession(w, args.session_id)).metadata
          : args.peer_id !== undefined
            ? (await api.ensurePeer(w, args.peer_id)).metadata
            : record.metadata;
      return { text: json(metadata), data: { metadata } };
    },
  }),

  tool({
    name: 'set_metadata',
    title: 'Set metadata',
    description: 'Replaces the metadata of a session (session_id), else of a peer (peer_id), else of the workspace.',
    input: { ...workspaceId, metadata: metadataShape, peer_id: z.string().optional(), session_id: z.string().optional() },
    output: { target: z.enum(['workspace', 'peer', 'session']), id: z.string(), metadata: metadataShape },
    failure: 'Failed to set metadata',
    annotations: { idempotentHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      if (args.session_id !== undefined) {
        await api.ensureSession(w, args.session_id);
        const session = await api.updateSession(w, args.session_id, args.metadata);
        return { text: 'Session metadata set successfully', data: { target: 'session', id: session.id, metadata: session.metadata } };
      }
      if (args.peer_id !== undefined) {
        await api.ensurePeer(w, args.peer_id);
        const peer = await api.updatePeer(w, args.peer_id, args.metadata);
        return { text: 'Peer metadata set successfully', data: { target: 'peer', id: peer.id, metadata: peer.metadata } };
      }
      const updated = await api.updateWorkspace(w, args.metadata);
      return { text: 'Workspace metadata set successfully', data: { target: 'workspace', id: updated.id, metadata: updated.metadata } };
    },
  }),
];

const countsShape = {
  total_work_units: z.number().int(),
  completed_work_units: z.number().int(),
  in_progress_work_units: z.number().int(),
  pending_work_units: z.number().int(),
};

const counts = (c: QueueStatusCounts) => ({
  total_work_units: c.total,
  completed_work_units: c.completed,
  in_progress_work_units: c.inProgress,
  pending_work_units: c.pending,
});

/** Background work: dreams and the queue. */
export const systemTools: ToolSpec[] = [
  tool({
    name: 'schedule_dream',
    title: 'Schedule dream',
    description:
      "Schedules a dream: background consolidation of what peer_id has concluded about target_peer_id (itself by default).\nWorth it after a long conversation; it runs later and is skipped when one is already pending.",
    input: { ...workspaceId, peer_id: z.string().describe('The observer'), target_peer_id: z.string().optional(), session_id: z.string().optional() },
    output: { status: z.enum(['queued', 'skipped']) },
    failure: 'Failed to schedule dream',
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      const status = await api.scheduleDream(w, args.peer_id, args.target_peer_id ?? args.peer_id, args.session_id);
      return { text: 'Dream scheduled successfully', data: { status } };
    },
  }),

  tool({
    name: 'get_queue_status',
    title: 'Get queue status',
    description: 'Counts of background reasoning work in the workspace (total, completed, in progress, pending), overall and per session. Reasoning is asynchronous: do not poll it in a loop.',
    input: { ...workspaceId },
    output: { ...countsShape, sessions: z.record(z.string(), z.object({ session_id: z.string(), ...countsShape })).nullable() },
    failure: 'Failed to get queue status',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      const status = await api.queueStatus(w);
      const sessions =
        status.sessions === undefined || status.sessions.size === 0
          ? null
          : Object.fromEntries([...status.sessions].map(([id, c]) => [id, { session_id: id, ...counts(c) }]));
      const data = { ...counts(status), sessions };
      return { text: json(data), data };
    },
  }),
];
