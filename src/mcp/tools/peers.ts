import { z } from 'zod';
import { json, tool, ToolError, type ToolSpec } from '../tool.js';
import { isoTime } from '../../http/shared/present.js';
import { FIRST_PAGE, PAGE_SIZE, conclusion, conclusionShape, idItem, metadataShape, pageFields, pageOf, workspaceId } from './shapes.js';

const LEVELS = ['minimal', 'low', 'medium', 'high', 'max'] as const;

const observer = z.string().describe('The peer whose memory is used (the observer)');
const target = z.string().optional().describe('The peer it is about (the observer itself by default)');

/** Peers, their memory (cards, representations, conclusions) and chat. */
export const peerTools: ToolSpec[] = [
  tool({
    name: 'create_peer',
    title: 'Create peer',
    description: 'Gets or creates a peer: a participant (user, assistant, agent). Use one stable peer_id per real person across sessions.',
    input: {
      ...workspaceId,
      peer_id: z.string(),
      configuration: z
        .object({ observeMe: z.boolean().nullable().optional().describe('false: no memory is formed about this peer (deterministic bots)') })
        .optional(),
    },
    output: { peer_id: z.string(), configuration: metadataShape },
    failure: 'Failed to create peer',
    annotations: { idempotentHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      const observeMe = args.configuration?.observeMe;
      const peer = await api.ensurePeer(w, args.peer_id, observeMe === undefined ? undefined : { observe_me: observeMe });
      const data = { peer_id: peer.id, configuration: peer.configuration };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'list_peers',
    title: 'List peers',
    description: 'Lists the peers of the workspace (first 50, with the total).',
    input: { ...workspaceId },
    output: { peers: z.array(idItem), ...pageFields },
    failure: 'Failed to list peers',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      const page = await api.listPeers(w, FIRST_PAGE, PAGE_SIZE);
      const data = { peers: page.items.map((p) => ({ id: p.id })), ...pageOf(page, FIRST_PAGE, PAGE_SIZE) };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'chat',
    title: 'Ask memory',
    description:
      'Asks a question about a peer and gets an answer reasoned from memory, from the perspective of peer_id (about target_peer_id when given), optionally within a session.\nIt takes seconds (a model answers); prefer search, get_peer_context or get_session_context for plain look-ups.\nreasoning_level: minimal, low (default), medium, high, max; higher is slower and costlier.',
    input: {
      ...workspaceId,
      peer_id: z.string().describe('The asking peer (whose memory answers)'),
      query: z.string().describe('The question'),
      target_peer_id: z.string().optional().describe('The peer the question is about'),
      session_id: z.string().optional().describe('Keep to what this session holds'),
      reasoning_level: z.enum(LEVELS).optional(),
    },
    output: { content: z.string().nullable() },
    failure: 'Chat failed',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace, signal }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensurePeer(w, args.peer_id);
      const content = await api.chat(
        w,
        args.peer_id,
        { query: args.query, target: args.target_peer_id, sessionId: args.session_id, level: args.reasoning_level ?? 'low' },
        signal,
      );
      // the whole answer, however long
      return { text: content === null || content === '' ? 'None' : content, data: { content: content === '' ? null : content } };
    },
  }),

  tool({
    name: 'get_peer_card',
    title: 'Get peer card',
    description: "Reads the peer card: a short list of key facts peer_id keeps about target_peer_id (about itself by default).",
    input: { ...workspaceId, peer_id: observer, target_peer_id: target },
    output: { peer_card: z.array(z.string()).nullable() },
    failure: 'Failed to get peer card',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensurePeer(w, args.peer_id);
      const card = await api.peerCard(w, args.peer_id, args.target_peer_id);
      return { text: card === null ? 'No peer card found.' : json(card), data: { peer_card: card } };
    },
  }),

  tool({
    name: 'set_peer_card',
    title: 'Set peer card',
    description: "Replaces the peer card peer_id keeps about target_peer_id (itself by default) with the given facts.",
    input: { ...workspaceId, peer_id: observer, peer_card: z.array(z.string()), target_peer_id: target },
    output: { peer_card: z.array(z.string()).nullable() },
    failure: 'Failed to set peer card',
    annotations: { idempotentHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensurePeer(w, args.peer_id);
      const card = await api.setPeerCard(w, args.peer_id, args.peer_card, args.target_peer_id);
      return { text: card === null ? 'Peer card set successfully' : json(card), data: { peer_card: card } };
    },
  }),

  tool({
    name: 'get_peer_context',
    title: 'Get peer context',
    description: "The representation (what peer_id knows of target_peer_id, itself by default) and the peer card in one call; search_query picks the conclusions most related to a topic.",
    input: {
      ...workspaceId,
      peer_id: observer,
      target_peer_id: target,
      search_query: z.string().optional(),
      max_conclusions: z.number().optional().describe('Most conclusions in the representation (1 to 100)'),
    },
    output: { peer_id: z.string(), target_id: z.string(), representation: z.string(), peer_card: z.array(z.string()).nullable() },
    failure: 'Failed to get peer context',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensurePeer(w, args.peer_id);
      const context = await api.peerContext(w, args.peer_id, { target: args.target_peer_id, searchQuery: args.search_query, maxConclusions: args.max_conclusions });
      const data = { peer_id: context.peerId, target_id: context.targetId, representation: context.representation, peer_card: context.peerCard };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'get_representation',
    title: 'Get representation',
    description: "The representation alone: what peer_id knows of target_peer_id (itself by default) as text, optionally kept to one session or focused by search_query.",
    input: {
      ...workspaceId,
      peer_id: observer,
      target_peer_id: target,
      session_id: z.string().optional(),
      search_query: z.string().optional(),
      max_conclusions: z.number().optional(),
    },
    output: { representation: z.string() },
    failure: 'Failed to get representation',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensurePeer(w, args.peer_id);
      const representation = await api.representation(w, args.peer_id, {
        target: args.target_peer_id,
        sessionId: args.session_id,
        searchQuery: args.search_query,
        maxConclusions: args.max_conclusions,
      });
      return { text: representation, data: { representation } };
    },
  }),
];

/** Keys of conclusion filters the tools set themselves from peer_id and target_peer_id. */
const MANAGED_FILTERS = ['observer', 'observed', 'observer_id', 'observed_id'];

/** Conclusions: the facts memory holds, listed, searched, written and removed. */
export const conclusionTools: ToolSpec[] = [
  tool({
    name: 'list_conclusions',
    title: 'List conclusions',
    description:
      'Lists the conclusions peer_id holds about target_peer_id (itself by default), newest first (first 50, with the total). With include_superseded, also the ones a newer conclusion replaced (with superseded_at and superseded_by).',
    input: {
      ...workspaceId,
      peer_id: observer,
      target_peer_id: target,
      include_superseded: z.boolean().optional().describe('Also the conclusions a newer one replaced (replace_conclusion)'),
    },
    output: { conclusions: z.array(conclusionShape), ...pageFields },
    failure: 'Failed to list conclusions',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensurePeer(w, args.peer_id);
      const filters = { observer_id: args.peer_id, observed_id: args.target_peer_id ?? args.peer_id };
      const page = await api.listConclusions(w, filters, FIRST_PAGE, PAGE_SIZE, args.include_superseded === true);
      const data = { conclusions: page.items.map(conclusion), ...pageOf(page, FIRST_PAGE, PAGE_SIZE) };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'query_conclusions',
    title: 'Query conclusions',
    description: 'Searches the conclusions peer_id holds about target_peer_id (itself by default) by relevance to query.',
    input: {
      ...workspaceId,
      peer_id: observer,
      query: z.string(),
      target_peer_id: target,
      top_k: z.number().optional().describe('Most conclusions returned (1 to 100, default 10)'),
      filters: metadataShape.optional().describe('More filters on conclusions (not observer or observed: peer_id and target_peer_id set them)'),
    },
    output: { conclusions: z.array(conclusionShape) },
    failure: 'Query failed',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const managed = Object.keys(args.filters ?? {}).filter((key) => MANAGED_FILTERS.includes(key));
      if (managed.length > 0) throw new ToolError(`Filter key(s) ${managed.join(', ')} are set from peer_id and target_peer_id; leave them out of filters`);
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensurePeer(w, args.peer_id);
      const filters = { ...args.filters, observer_id: args.peer_id, observed_id: args.target_peer_id ?? args.peer_id };
      const found = (await api.queryConclusions(w, { query: args.query, top_k: args.top_k, filters })).map(conclusion);
      return { text: json(found), data: { conclusions: found } };
    },
  }),

  tool({
    name: 'create_conclusions',
    title: 'Create conclusions',
    description: 'Writes facts that peer_id holds about target_peer_id into memory (1 to 100), optionally tied to a session.',
    input: {
      ...workspaceId,
      peer_id: observer,
      target_peer_id: z.string().describe('The peer the facts are about (the observer itself for self-knowledge)'),
      conclusions: z.array(z.string()),
      session_id: z.string().optional(),
    },
    output: { conclusions: z.array(conclusionShape) },
    failure: 'Failed to create conclusions',
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensurePeer(w, args.peer_id);
      const created = await api.createConclusions(
        w,
        args.conclusions.map((content) => ({ content, observer_id: args.peer_id, observed_id: args.target_peer_id, session_id: args.session_id ?? null })),
      );
      const n = created.length;
      return { text: `Created ${n} conclusion${n === 1 ? '' : 's'} successfully`, data: { conclusions: created.map(conclusion) } };
    },
  }),

  tool({
    name: 'delete_conclusion',
    title: 'Delete conclusion',
    description: 'Removes one conclusion by id (find ids with list_conclusions or query_conclusions).',
    input: { ...workspaceId, peer_id: observer, target_peer_id: z.string(), conclusion_id: z.string() },
    output: { deleted: z.string() },
    failure: 'Failed to delete conclusion',
    annotations: { destructiveHint: true, idempotentHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      await api.ensurePeer(w, args.peer_id);
      await api.deleteConclusion(w, args.conclusion_id);
      return { text: 'Conclusion deleted successfully', data: { deleted: args.conclusion_id } };
    },
  }),
];

/** Tools beyond the reference's: what an agent needs that its tools leave out (docs/mcp.md). */
export const extraPeerTools: ToolSpec[] = [
  tool({
    name: 'list_peer_sessions',
    title: 'List sessions of a peer',
    description:
      'Lists the sessions a peer has taken part in (50 a page, with the total): to find an earlier conversation with the same person before creating a new session.',
    input: { ...workspaceId, peer_id: z.string(), page: z.number().int().min(1).optional().describe('Page number (default 1)') },
    output: { sessions: z.array(z.object({ id: z.string(), is_active: z.boolean(), metadata: metadataShape, created_at: z.string() })), ...pageFields },
    failure: 'Failed to list sessions of peer',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      const number = args.page ?? FIRST_PAGE;
      const page = await api.peerSessions(w, args.peer_id, number, PAGE_SIZE);
      const data = {
        sessions: page.items.map((s) => ({ id: s.id, is_active: s.isActive, metadata: s.metadata, created_at: isoTime(s.createdAt) })),
        ...pageOf(page, number, PAGE_SIZE),
      };
      return { text: json(data), data };
    },
  }),
];
