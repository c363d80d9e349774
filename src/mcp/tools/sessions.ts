import { z } from 'zod';
import { presentSummary } from '../../http/shared/present.js';
import type { JsonObject } from '../../storage/store.js';
import { json, tool, type ToolSpec } from '../tool.js';
import { FIRST_PAGE, PAGE_SIZE, idItem, message, messageShape, metadataShape, pageFields, pageOf, summaryShape, workspaceId } from './shapes.js';

const sessionId = z.string().describe('The session (one per coherent conversation, thread or channel; reuse it across turns)');

const peerEntry = z.union([
  z.string(),
  z.object({
    peer_id: z.string(),
    observe_me: z.boolean().nullable().optional().describe('Form memory about this peer from the session (default true)'),
    observe_others: z.boolean().nullable().optional().describe('This peer forms memory about the others (default false)'),
  }),
]);

/** Sessions and their messages. */
export const sessionTools: ToolSpec[] = [
  tool({
    name: 'create_session',
    title: 'Create session',
    description: 'Gets or creates a session: one conversation (thread, project, channel). Once per conversation, then add_peers_to_session.',
    input: { ...workspaceId, session_id: sessionId },
    output: { session_id: z.string() },
    failure: 'Failed to create session',
    annotations: { idempotentHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      const session = await api.ensureSession(w, args.session_id);
      const data = { session_id: session.id };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'list_sessions',
    title: 'List sessions',
    description: 'Lists the active sessions of the workspace (first 50, with the total).',
    input: { ...workspaceId },
    output: { sessions: z.array(idItem), ...pageFields },
    failure: 'Failed to list sessions',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      const page = await api.listSessions(w, FIRST_PAGE, PAGE_SIZE);
      const data = { sessions: page.items.map((s) => ({ id: s.id })), ...pageOf(page, FIRST_PAGE, PAGE_SIZE) };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'delete_session',
    title: 'Delete session',
    description: 'Deletes a session and its messages. Irreversible.',
    input: { ...workspaceId, session_id: sessionId },
    output: { deleted: z.string() },
    failure: 'Failed to delete session',
    annotations: { destructiveHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.deleteSession(w, args.session_id);
      return { text: 'Session deleted successfully', data: { deleted: args.session_id } };
    },
  }),

  tool({
    name: 'clone_session',
    title: 'Clone session',
    description: 'Copies a session into a new one, with all its messages or those up to message_id.',
    input: { ...workspaceId, session_id: sessionId, message_id: z.string().optional().describe('The last message to copy') },
    output: { session_id: z.string() },
    failure: 'Failed to clone session',
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensureSession(w, args.session_id);
      const clone = await api.cloneSession(w, args.session_id, args.message_id);
      const data = { session_id: clone.id };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'add_peers_to_session',
    title: 'Add peers to session',
    description:
      'Adds participants to a session: peer ids, or objects with observe_me and observe_others.\nFor a user and an assistant: the user with observe_me true and observe_others true, the assistant with observe_me false and observe_others true.',
    input: { ...workspaceId, session_id: sessionId, peers: z.array(peerEntry) },
    output: { session_id: z.string(), peers: z.array(z.string()) },
    failure: 'Failed to add peers',
    annotations: { idempotentHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensureSession(w, args.session_id);
      const body: JsonObject = {};
      for (const entry of args.peers) {
        if (typeof entry === 'string') body[entry] = {};
        else body[entry.peer_id] = Object.fromEntries(Object.entries({ observe_me: entry.observe_me, observe_others: entry.observe_others }).filter(([, v]) => v !== undefined));
      }
      await api.addPeers(w, args.session_id, body);
      return { text: 'Peers added to session successfully', data: { session_id: args.session_id, peers: Object.keys(body) } };
    },
  }),

  tool({
    name: 'remove_peers_from_session',
    title: 'Remove peers from session',
    description: 'Removes participants from a session (their messages stay).',
    input: { ...workspaceId, session_id: sessionId, peer_ids: z.array(z.string()) },
    output: { session_id: z.string(), removed: z.array(z.string()) },
    failure: 'Failed to remove peers',
    annotations: { idempotentHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensureSession(w, args.session_id);
      await api.removePeers(w, args.session_id, args.peer_ids);
      return { text: 'Peers removed from session successfully', data: { session_id: args.session_id, removed: args.peer_ids } };
    },
  }),

  tool({
    name: 'get_session_peers',
    title: 'Get session peers',
    description: 'The ids of the peers taking part in a session.',
    input: { ...workspaceId, session_id: sessionId },
    output: { peers: z.array(z.string()), total: z.number().int() },
    failure: 'Failed to get session peers',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensureSession(w, args.session_id);
      const page = await api.sessionPeers(w, args.session_id);
      const peers = page.items.map((p) => p.id);
      return { text: json(peers), data: { peers, total: page.total } };
    },
  }),

  tool({
    name: 'inspect_session',
    title: 'Inspect session',
    description: 'One-glance summary of a session: its peers, its message count and its short and long summaries.',
    input: { ...workspaceId, session_id: sessionId },
    output: {
      session_id: z.string(),
      peers: z.array(idItem),
      message_count: z.number().int(),
      summaries: z.object({ short_summary: summaryShape, long_summary: summaryShape }),
    },
    failure: 'Failed to inspect session',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensureSession(w, args.session_id);
      const [peers, messages, summaries] = await Promise.all([
        api.sessionPeers(w, args.session_id),
        api.listMessages(w, args.session_id, undefined, 1, 1),
        api.sessionSummaries(w, args.session_id),
      ]);
      const data = {
        session_id: args.session_id,
        peers: peers.items.map((p) => ({ id: p.id })),
        message_count: messages.total,
        summaries: { short_summary: presentSummary(summaries.short), long_summary: presentSummary(summaries.long) },
      };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'add_messages_to_session',
    title: 'Add messages',
    description:
      "Records turns of the conversation (1 to 100 messages, each with its sender's peer_id and exact text). Call it after every exchange with both the user's and the assistant's messages; memory is formed from them in the background.",
    input: {
      ...workspaceId,
      session_id: sessionId,
      messages: z.array(z.object({ peer_id: z.string(), content: z.string(), metadata: metadataShape.optional() })),
    },
    output: { session_id: z.string(), message_ids: z.array(z.string()) },
    failure: 'Failed to add messages',
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensureSession(w, args.session_id);
      for (const peerId of new Set(args.messages.map((m) => m.peer_id))) await api.ensurePeer(w, peerId);
      const created = await api.createMessages(
        w,
        args.session_id,
        args.messages.map((m) => (m.metadata === undefined ? { peer_id: m.peer_id, content: m.content } : { peer_id: m.peer_id, content: m.content, metadata: m.metadata })),
      );
      return { text: 'Messages added to session successfully', data: { session_id: args.session_id, message_ids: created.map((m) => m.id) } };
    },
  }),

  tool({
    name: 'get_session_messages',
    title: 'Get session messages',
    description: 'Reads the history of a session, oldest first (first 50, with the total), optionally filtered.',
    input: { ...workspaceId, session_id: sessionId, filters: metadataShape.optional().describe('Filters on messages (the filter language of the API)') },
    output: { messages: z.array(messageShape), ...pageFields },
    failure: 'Failed to get messages',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensureSession(w, args.session_id);
      const page = await api.listMessages(w, args.session_id, args.filters, FIRST_PAGE, PAGE_SIZE);
      const data = { messages: page.items.map(message), ...pageOf(page, FIRST_PAGE, PAGE_SIZE) };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'get_session_message',
    title: 'Get session message',
    description: 'One message of a session by id.',
    input: { ...workspaceId, session_id: sessionId, message_id: z.string() },
    output: messageShape.shape,
    failure: 'Failed to get message',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensureSession(w, args.session_id);
      const data = message(await api.getMessage(w, args.session_id, args.message_id));
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'get_session_context',
    title: 'Get session context',
    description: "Context for a model: the session's most recent messages that fit a token budget, with its summary of what came before. Fast.",
    input: {
      ...workspaceId,
      session_id: sessionId,
      summary: z.boolean().optional().describe('Include the summary (default true)'),
      tokens: z.number().optional().describe('Token budget (at most 100,000, the default)'),
    },
    output: { session_id: z.string(), summary: summaryShape, messages: z.array(messageShape) },
    failure: 'Failed to get context',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensureSession(w, args.session_id);
      const context = await api.sessionContext(w, args.session_id, { tokens: args.tokens, summary: args.summary });
      const data = { session_id: args.session_id, summary: presentSummary(context.summary), messages: context.messages.map(message) };
      return { text: json(data), data };
    },
  }),
];
