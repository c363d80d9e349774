import { z } from 'zod';
import { json, tool, type ToolSpec } from '../tool.js';
import { isoTime, presentForgetRecord, presentStatistics } from '../../http/shared/present.js';
import type { JsonObject } from '../../storage/store.js';
import { FORGET_TOKEN_TTL_MS } from '../../domain/memory/forget.js';
import { conclusion, conclusionShape, message, messageShape, metadataShape, workspaceId } from './shapes.js';

/*
 * Tools beyond the reference's over what memory holds (docs/mcp.md): a fact replaced by a newer
 * one, chosen facts forgotten at a person's request, and the workspace's counts. Each stands on
 * the route of the same name (api.ts), with its rule.
 */

const forgetRecordShape = z.object({
  id: z.string(),
  workspace_id: z.string(),
  observed: z.string(),
  observer: z.string().nullable(),
  actor: z.string(),
  conclusions_removed: z.number().int(),
  messages_removed: z.number().int(),
  created_at: z.string(),
});

export const memoryTools: ToolSpec[] = [
  tool({
    name: 'replace_conclusion',
    title: 'Replace conclusion',
    description:
      'Records that a fact changed: stores content as what peer_id now holds about target_peer_id and marks the conclusions conclusion_ids as superseded by it (kept, with when and by what, but left out of representations, search and chat). Use it when something stops being true ("moved from Paris to Berlin"), rather than delete_conclusion, so memory keeps what was true before.',
    input: {
      ...workspaceId,
      peer_id: z.string().describe('The observer whose conclusions they are'),
      target_peer_id: z.string().describe('The peer they are about (the observer itself for self-knowledge)'),
      conclusion_ids: z.array(z.string()).describe('The current conclusions the new one replaces (1 to 100; find them with list_conclusions or query_conclusions)'),
      content: z.string().describe('The fact as it is now'),
      session_id: z.string().optional(),
    },
    output: { conclusion: conclusionShape, superseded: z.array(z.string()) },
    failure: 'Failed to replace conclusion',
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      await api.ensureWorkspace(w);
      const [created] = await api.createConclusions(w, [
        { content: args.content, observer_id: args.peer_id, observed_id: args.target_peer_id, session_id: args.session_id ?? null, supersedes: args.conclusion_ids },
      ]);
      const n = args.conclusion_ids.length;
      return { text: `Replaced ${n} conclusion${n === 1 ? '' : 's'} with ${created.id}`, data: { conclusion: conclusion(created), superseded: args.conclusion_ids } };
    },
  }),

  tool({
    name: 'forget',
    title: 'Forget',
    description: `Removes chosen memory about a person for good, in two calls. First without token: a preview of the conclusions about target_peer_id that query and/or filters find (held by peer_id, or by every observer when peer_id is left out; with include_messages also the messages they were drawn from) and a token valid for ${FORGET_TOKEN_TTL_MS / 60_000} minutes. Show the user what will go; then call again with the same arguments and the token to remove exactly what was previewed. Cannot be undone.`,
    input: {
      ...workspaceId,
      target_peer_id: z.string().describe('The peer whose memory is forgotten'),
      peer_id: z.string().optional().describe('Only this observer’s conclusions (every observer’s by default)'),
      query: z.string().optional().describe('What to forget, in words: conclusions are matched by relevance'),
      filters: metadataShape.optional().describe('Conclusion filters, as for list_conclusions (e.g. {"session_id": "s1"})'),
      include_messages: z.boolean().optional().describe('Also remove the messages the conclusions were drawn from'),
      limit: z.number().int().optional().describe('Most conclusions previewed and removed (1 to 1,000, default 100)'),
      token: z.string().optional().describe('The preview’s token: removes what it previewed'),
    },
    output: {
      status: z.enum(['preview', 'forgotten']),
      token: z.string().optional(),
      expires_at: z.string().optional(),
      conclusions: z.array(conclusionShape).optional(),
      messages: z.array(messageShape).optional(),
      record: forgetRecordShape.optional(),
    },
    failure: 'Failed to forget',
    annotations: { destructiveHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      const result = await api.forget(w, {
        observed: args.target_peer_id,
        observer: args.peer_id,
        query: args.query,
        filters: args.filters as JsonObject | undefined,
        include_messages: args.include_messages,
        limit: args.limit,
        token: args.token,
      });
      if (result.kind === 'forgotten') {
        const record = presentForgetRecord(result.record);
        const data = { status: 'forgotten' as const, record };
        return { text: `Forgot ${record.conclusions_removed} conclusions and ${record.messages_removed} messages`, data };
      }
      const data = {
        status: 'preview' as const,
        token: result.token,
        expires_at: isoTime(result.expiresAt),
        conclusions: result.conclusions.map(conclusion),
        ...(result.messages === undefined ? {} : { messages: result.messages.map(message) }),
      };
      return { text: json(data), data };
    },
  }),

  tool({
    name: 'get_workspace_statistics',
    title: 'Get workspace statistics',
    description:
      'Counts of the workspace (peers, active sessions, messages, current conclusions, reasoning work pending and in progress) and its model calls and tokens over the last hours (24 by default), by module and model.',
    input: { ...workspaceId, hours: z.number().int().optional().describe('Hours of model usage counted (1 to 720, default 24)') },
    output: {
      workspace_id: z.string(),
      peers: z.number().int(),
      sessions: z.number().int(),
      messages: z.number().int(),
      conclusions: z.number().int(),
      pending_work_units: z.number().int(),
      in_progress_work_units: z.number().int(),
      model_usage: z.object({
        since: z.string(),
        hours: z.number().int(),
        modules: z.array(
          z.object({
            module: z.string(),
            model: z.string(),
            calls: z.number().int(),
            failed_calls: z.number().int(),
            input_tokens: z.number().int(),
            output_tokens: z.number().int(),
          }),
        ),
      }),
    },
    failure: 'Failed to get workspace statistics',
    annotations: { readOnlyHint: true },
    async run(args, { api, workspace }) {
      const w = workspace(args.workspace_id);
      const { statistics, hours } = await api.statistics(w, args.hours);
      const data = presentStatistics(w, statistics, hours);
      return { text: json(data), data };
    },
  }),
];
