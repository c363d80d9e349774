import type { ConclusionRecord, ConclusionScope, MessageRecord } from '../../storage/store.js';
import { documentFilter, messageFilter, CURRENT_RULES } from '../filters/filters.js';
import type { DomainContext } from '../context.js';
import { vectorHalf } from '../memory/conclusions.js';
import { rankConclusions } from '../memory/conclusion-search.js';
import { searchMessages, searchTerms } from '../messages/search.js';
import { DEFAULT_CHAT_LIMITS } from '../reasoning-settings.js';
import type { Tool } from './tool-loop.js';

/** LLM_MAX_MESSAGE_CONTENT_CHARS's default: the most characters of one message a tool shows. */
const MAX_MESSAGE_CHARS = DEFAULT_CHAT_LIMITS.maxMessageChars;
/** Sessions the date-range tool reads at most (each one query); more are named as left out. */
export const DATE_RANGE_MAX_SESSIONS = 200;
/** Derived conclusion levels (their sources are conclusions). */
const DERIVED_LEVELS = ['deductive', 'inductive', 'contradiction'];

/** What the chat's tools may see. */
export interface ChatScope {
  ctx: DomainContext;
  workspaceId: string;
  /** The observer's conclusions about the target (allowlist applied when one is given); none for a workspace chat. */
  conclusions?: ConclusionScope;
  /** Under an allowlist only explicit conclusions are searched (reasoning.md R5). */
  explicitOnly: boolean;
  /** The sessions message tools may read: the chat's session, else the observer's (allowlist applied); 'all' for a workspace chat. */
  sessions: string[] | 'all';
  /** How messages are shown: renderMessage with LLM_MAX_MESSAGE_CONTENT_CHARS. */
  render: (m: MessageRecord) => string;
}

const day = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, 'Z');

export function renderConclusion(c: ConclusionRecord): string {
  return `[id ${c.id}] [${c.level}] [${day(c.createdAt)}] ${c.content}`;
}

/** A message as a chat shows it, its content cut after `maxChars` characters. */
export function renderMessage(m: MessageRecord, maxChars = MAX_MESSAGE_CHARS): string {
  const content = m.content.length > maxChars ? `${m.content.slice(0, maxChars)} [cut]` : m.content;
  return `[${day(m.createdAt)}] [session ${m.sessionId}] ${m.peerId}: ${content}`;
}

const list = (lines: string[], none: string) => (lines.length === 0 ? none : lines.join('\n'));

function dateArg(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  const time = Date.parse(String(value));
  if (Number.isNaN(time)) throw new Error(`${name} must be an ISO 8601 date or date-time, got ${JSON.stringify(value)}`);
  return new Date(time).toISOString();
}

function timeFilter(after: string | undefined, before: string | undefined): Record<string, string> | undefined {
  if (after === undefined && before === undefined) return undefined;
  return { ...(after !== undefined ? { gte: after } : {}), ...(before !== undefined ? { lte: before } : {}) };
}

const limitParam = (fallback: number, max: number) => ({ type: 'integer', minimum: 1, maximum: max, default: fallback, description: `How many results (default ${fallback}, at most ${max})` });

/** Every session of the workspace, up to DATE_RANGE_MAX_SESSIONS + 1 (to say more were left out). */
async function workspaceSessions(scope: ChatScope): Promise<string[]> {
  const page = await scope.ctx.store.sessions.list(scope.workspaceId, { filter: null, page: 1, size: DATE_RANGE_MAX_SESSIONS + 1, reverse: true, order: CURRENT_RULES.sessionOrder });
  return page.items.map((s) => s.id);
}

/** The observer's conclusions about the target that best answer `query` (conclusion-search.ts: full text, fused with vectors when on). */
export async function searchConclusionsFor(scope: ChatScope, query: string, limit: number, levels?: string[], vector?: readonly number[]): Promise<ConclusionRecord[]> {
  if (scope.conclusions === undefined) return [];
  const filters = levels !== undefined ? { level: levels.length === 1 ? levels[0] : { in: levels } } : scope.explicitOnly ? { level: 'explicit' } : null;
  return rankConclusions(
    scope.ctx,
    scope.conclusions,
    { query, filters, rules: CURRENT_RULES, limit },
    await vectorHalf(scope.ctx, scope.conclusions, query, { filters, rules: CURRENT_RULES, vector }),
  );
}

/** A conclusion of the chat's scope, or an error text for the model. */
async function conclusionInScope(scope: ChatScope, id: string): Promise<ConclusionRecord> {
  if (scope.conclusions === undefined) throw new Error('there are no conclusions in a workspace chat');
  const [found] = await scope.ctx.store.memory.conclusionsByIds(scope.conclusions, [id], documentFilter(scope.ctx.store, scope.explicitOnly ? { level: 'explicit' } : null, CURRENT_RULES));
  if (found === undefined) throw new Error(`no conclusion with id ${id} in this memory`);
  return found;
}

/** The tools of reasoning.md R5, confined to `scope`; `minimal` gets the first two. */
export function chatTools(scope: ChatScope, options: { minimal: boolean }): Tool[] {
  const { ctx, workspaceId } = scope;
  const sessionFilter: Record<string, unknown> = scope.sessions === 'all' ? {} : { session_id: { in: scope.sessions } };
  const noSessions = scope.sessions !== 'all' && scope.sessions.length === 0;
  const memory = scope.conclusions !== undefined;

  const tools: Tool[] = [
    {
      name: 'search_memory',
      description: 'Search the conclusions (observations) about the peer by meaning. Returns conclusions with ids, levels and dates.',
      parameters: { type: 'object', properties: { query: { type: 'string', minLength: 1 }, limit: limitParam(20, 40) }, required: ['query'], additionalProperties: false },
      async execute(args) {
        const found = await searchConclusionsFor(scope, String(args.query), Number(args.limit));
        return list(found.map(renderConclusion), 'No conclusions found.');
      },
    },
    {
      name: 'search_messages',
      description: 'Search the conversation messages by meaning and words. Returns messages with dates, sessions and senders.',
      parameters: { type: 'object', properties: { query: { type: 'string', minLength: 1 }, limit: limitParam(10, 20) }, required: ['query'], additionalProperties: false },
      async execute(args) {
        if (noSessions) return 'No messages: there are no sessions to search.';
        const found = await searchMessages(ctx, { workspaceId }, { query: String(args.query), filters: sessionFilter, limit: Number(args.limit), rules: CURRENT_RULES });
        return list(found.map(scope.render), 'No messages found.');
      },
    },
  ];
  if (!memory) tools.shift();
  if (options.minimal) return tools;

  tools.push(
    {
      name: 'grep_messages',
      description: 'Find messages containing this exact text (case-insensitive), newest first. Use it to enumerate every mention of a name or phrase.',
      parameters: { type: 'object', properties: { text: { type: 'string', minLength: 1 }, limit: limitParam(10, 30) }, required: ['text'], additionalProperties: false },
      async execute(args) {
        const text = String(args.text);
        const words = searchTerms(text);
        if (words.length === 0) return 'Error: the text must contain at least one word.';
        if (noSessions) return 'No messages: there are no sessions to search.';
        const candidates = await ctx.store.messages.searchCandidates({ workspaceId, terms: words, filter: messageFilter(ctx.store, sessionFilter, CURRENT_RULES), candidates: 1000 });
        const needle = text.toLowerCase();
        const ids = candidates.filter((c) => c.content.toLowerCase().includes(needle)).map((c) => c.id);
        const found = (await ctx.store.messages.byIds(workspaceId, ids.slice(0, Number(args.limit)))).sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
        const more = ids.length > found.length ? `\n(${ids.length - found.length} more matches not shown)` : '';
        return list(found.map(scope.render), `No message contains "${text}".`) + more;
      },
    },
    {
      name: 'get_messages_by_date_range',
      description: 'Messages between two dates (ISO 8601), oldest first.',
      parameters: { type: 'object', properties: { after: { type: 'string' }, before: { type: 'string' }, limit: limitParam(20, 50) }, additionalProperties: false },
      async execute(args) {
        const after = dateArg(args.after, 'after');
        const before = dateArg(args.before, 'before');
        const limit = Number(args.limit);
        const all = scope.sessions === 'all' ? await workspaceSessions(scope) : scope.sessions;
        const sessions = all.slice(0, DATE_RANGE_MAX_SESSIONS);
        const range = timeFilter(after, before);
        const pages = await Promise.all(
          sessions.map((sessionId) =>
            ctx.store.messages.list(workspaceId, sessionId, { filter: messageFilter(ctx.store, range ? { created_at: range } : null, CURRENT_RULES), page: 1, size: limit, reverse: false }),
          ),
        );
        const found = pages
          .flatMap((page) => page.items)
          .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
          .slice(0, limit);
        const left = all.length > sessions.length ? `\n(only the first ${sessions.length} of ${all.length} sessions were read)` : '';
        return list(found.map(scope.render), 'No messages in that range.') + left;
      },
    },
    {
      name: 'search_messages_temporal',
      description: 'Search messages by meaning and words within a date range (ISO 8601 after/before).',
      parameters: {
        type: 'object',
        properties: { query: { type: 'string', minLength: 1 }, after: { type: 'string' }, before: { type: 'string' }, limit: limitParam(10, 20) },
        required: ['query'],
        additionalProperties: false,
      },
      async execute(args) {
        if (noSessions) return 'No messages: there are no sessions to search.';
        const range = timeFilter(dateArg(args.after, 'after'), dateArg(args.before, 'before'));
        const filters = range ? { ...sessionFilter, created_at: range } : sessionFilter;
        const found = await searchMessages(ctx, { workspaceId }, { query: String(args.query), filters, limit: Number(args.limit), rules: CURRENT_RULES });
        return list(found.map(scope.render), 'No messages found.');
      },
    },
  );
  if (memory) {
    tools.push({
      name: 'get_observation_context',
      description: 'The messages a conclusion was drawn from, each with the two messages before it.',
      parameters: { type: 'object', properties: { observation_id: { type: 'string', minLength: 1 } }, required: ['observation_id'], additionalProperties: false },
      async execute(args) {
        const conclusion = await conclusionInScope(scope, String(args.observation_id));
        if (DERIVED_LEVELS.includes(conclusion.level)) return `${renderConclusion(conclusion)}\nA ${conclusion.level} conclusion: its sources are conclusions; use get_reasoning_chain.`;
        const allowed = new Set(scope.sessions === 'all' ? [] : scope.sessions);
        const sources = (await ctx.store.messages.byIds(workspaceId, (conclusion.sourceIds ?? []).slice(0, 10))).filter((m) => scope.sessions === 'all' || allowed.has(m.sessionId));
        if (sources.length === 0) return `${renderConclusion(conclusion)}\nNo source messages are recorded (or visible) for it.`;
        const blocks = await Promise.all(sources.map(async (m) => (await ctx.store.reasoning.messagesUpTo(workspaceId, m.sessionId, m.id, 3)).map(scope.render).join('\n')));
        return `${renderConclusion(conclusion)}\nSources:\n${blocks.join('\n---\n')}`;
      },
    });
  }
  if (memory && !scope.explicitOnly) {
    tools.push({
      name: 'get_reasoning_chain',
      description: 'A conclusion with the premises it was derived from, and theirs, up to three levels.',
      parameters: { type: 'object', properties: { observation_id: { type: 'string', minLength: 1 } }, required: ['observation_id'], additionalProperties: false },
      async execute(args) {
        const root = await conclusionInScope(scope, String(args.observation_id));
        const lines: string[] = [renderConclusion(root)];
        const seen = new Set([root.id]);
        let level = [root];
        for (let depth = 1; depth <= 3 && level.length > 0; depth++) {
          const premiseIds = level.filter((c) => DERIVED_LEVELS.includes(c.level)).flatMap((c) => c.sourceIds ?? []).filter((id) => !seen.has(id));
          if (premiseIds.length === 0) break;
          const premises = await ctx.store.memory.conclusionsByIds(scope.conclusions!, premiseIds.slice(0, 50), null);
          for (const p of premises) {
            seen.add(p.id);
            lines.push(`${'  '.repeat(depth)}<- ${renderConclusion(p)}`);
          }
          level = premises;
        }
        if (lines.length === 1) lines.push('No premises recorded.');
        return lines.join('\n');
      },
    });
  }
  return tools;
}
