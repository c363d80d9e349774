import { Ajv } from 'ajv';
import { LRUCache } from 'lru-cache';
import { ModelError, type ChatMessage, type ChatModel, type JsonSchema } from '../../llm/provider.js';
import type { ConclusionRecord, JsonObject, MessageRecord } from '../../storage/store.js';
import { CURRENT_RULES } from '../filters/filters.js';
import { inTransaction, type DomainContext } from '../context.js';
import { DomainError, invalidInput, notFound, unavailable } from '../errors.js';
import { searchMessages } from '../messages/search.js';
import { tokenCount } from '../text/token-count.js';
import { cardOf } from '../memory/recall.js';
import { chatTools, renderConclusion, renderMessage, searchConclusionsFor, type ChatScope } from './chat-tools.js';
import { effectiveConfiguration } from '../scheduling/configuration.js';
import { embedQueryForRequest, embedderOf } from '../search/embeddings.js';
import { DEFAULT_REASONING_SETTINGS } from '../reasoning-settings.js';
import { FinalAnswerError, runToolLoop } from './tool-loop.js';
import type { ChatReport, ReasoningLevel } from '../chat-report.js';
import { forWorkspace } from '../model-usage.js';


export interface DialecticLevelLimits {
  maxToolIterations: number;
  maxOutputTokens: number;
  toolChoice?: 'auto' | 'required' | 'none';
}

/** Most sessions of the observer its message tools search. */
export const MAX_OBSERVER_SESSIONS = 1_000;

export interface ChatRequest {
  /** The peer asking (whose memory is used); absent: a workspace chat over every message of the workspace. */
  observerId?: string;
  /** The peer asked about; the observer itself when absent. */
  targetId?: string;
  query: string;
  sessionId?: string;
  level: ReasoningLevel;
  responseFormat?: JsonObject;
  /** The sessions recall is confined to (recall.ts): the `filters.session_id` allowlist, or a list-form scope's sessions. */
  allowlist?: string[];
  /** The peer the request names (created when missing) when it is not the observer: a chat through a scope. */
  askingPeerId?: string;
  stream: boolean;
}


/** A chat checked and prepared: `run` asks the model (with `onText`, streaming its final turn). */
export interface PreparedChat {
  run(options: { signal?: AbortSignal; onText?: (text: string) => void }): Promise<{ content: string }>;
}

const schemaChecker = new Ajv({ strict: false, allErrors: false });

/** `response_format` as a usable JSON Schema with an object root, or the reference's 422. */
function usableSchema(format: JsonObject): { schema: JsonSchema; validate: (text: string) => string | undefined } {
  // the OpenAI shape {type: 'json_schema', json_schema: {name, schema}} is accepted too
  const inner = format.type === 'json_schema' && typeof format.json_schema === 'object' && format.json_schema !== null ? (format.json_schema as JsonObject).schema : format;
  if (typeof inner !== 'object' || inner === null || Array.isArray(inner)) throw invalidInput('Invalid response_format: the schema must be a JSON object');
  // the draft is not needed to validate (and zod's toJSONSchema names 2020-12, which the checker would refuse)
  const { $schema: _draft, ...schema } = inner as JsonSchema;
  const rootIsObject = schema.type === 'object' || (schema.type === undefined && typeof schema.properties === 'object');
  if (!rootIsObject) throw invalidInput('Invalid response_format: the schema root must be of type "object"');
  let check;
  try {
    check = schemaChecker.compile(schema);
  } catch (error) {
    throw invalidInput(`Invalid response_format: ${error instanceof Error ? error.message : String(error)}`);
  }
  return {
    schema,
    validate(text) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return 'the answer is not JSON';
      }
      if (check(value)) return undefined;
      return (check.errors ?? []).map((e) => `${e.instancePath || 'the answer'} ${e.message ?? 'is invalid'}`).join('; ');
    },
  };
}

/** A workspace chat's prefetch: the messages found for the question. */
async function prefetchMessages(scope: ChatScope, query: string, limit: number): Promise<string> {
  const filters = scope.sessions === 'all' ? null : { session_id: { in: scope.sessions } };
  const found = await searchMessages(scope.ctx, { workspaceId: scope.workspaceId }, { query, filters, limit, rules: CURRENT_RULES });
  return found.length > 0 ? `Messages found:\n${found.map(scope.render).join('\n')}` : 'Messages found: none.';
}

async function observerSessions(ctx: DomainContext, workspaceId: string, observerId: string): Promise<string[]> {
  const ids: string[] = [];
  for (let page = 1; ids.length < MAX_OBSERVER_SESSIONS; page++) {
    const result = await ctx.store.sessions.ofPeer(workspaceId, observerId, { filter: null, page, size: 100, reverse: false, order: CURRENT_RULES.sessionOrder });
    ids.push(...result.items.map((s) => s.id));
    if (result.items.length < 100 || page * 100 >= result.total) break;
  }
  return ids.slice(0, MAX_OBSERVER_SESSIONS);
}

/**
 * Token counts of history lines' prefixes (`[time] [session s] peer: `), the most recently used
 * kept: every chat in a session shows its newest messages again, and counting their prefixes
 * afresh was a tenth of a chat's CPU (bench/README.md, "Peer chat").
 */
const prefixTokens = new LRUCache<string, number>({ max: 16_384 });

function prefixTokenCount(prefix: string): number {
  let counted = prefixTokens.get(prefix);
  if (counted === undefined) prefixTokens.set(prefix, (counted = tokenCount(prefix)));
  return counted;
}

/** The newest messages of the session, oldest first, within `maxTokens`, as `render` shows them. */
async function sessionHistory(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  maxTokens: number,
  render: (m: MessageRecord) => string,
): Promise<string[]> {
  const newest = await ctx.store.messages.recent(workspaceId, sessionId, 100);
  const lines: string[] = [];
  let used = 0;
  for (const message of newest) {
    const line = render(message);
    // a message's own count is stored: only its line's prefix is counted here (plus one token
    // for the join), unless the line cut the content short
    const content = line.endsWith(message.content) ? message.content : undefined;
    used += content === undefined ? tokenCount(line, maxTokens + 1) : prefixTokenCount(line.slice(0, line.length - content.length)) + message.tokenCount + 1;
    if (used > maxTokens) break;
    lines.unshift(line);
  }
  return lines;
}

function systemPrompt(p: {
  observerId: string | undefined;
  targetId: string | undefined;
  cards: { own?: string[] | null; ofTarget?: string[] | null };
  toolNames: string[];
  history: string[];
  schema?: JsonSchema;
}): string {
  const self = p.observerId === p.targetId;
  const perspective =
    p.observerId === undefined
      ? 'You answer questions about the conversations stored in this workspace, from their messages.'
      : self
    ? `You answer questions about the peer "${p.targetId}" from the memory kept about them: conclusions drawn from their conversations, and the messages themselves.`
    : `You answer questions about the peer "${p.targetId}" from the perspective of the peer "${p.observerId}": only what "${p.observerId}" has observed of "${p.targetId}" (conclusions and the messages of "${p.observerId}"'s sessions).`;
  const parts = [perspective];
  const card = (name: string, lines: string[] | null | undefined) => (lines && lines.length > 0 ? `Card of ${name}:\n${lines.map((l) => `- ${l}`).join('\n')}` : undefined);
  const cards = [card(p.observerId ?? '', p.cards.own), self ? undefined : card(`${p.targetId} (as ${p.observerId} knows them)`, p.cards.ofTarget)].filter((c) => c !== undefined);
  if (cards.length > 0) parts.push(cards.join('\n\n'));
  parts.push(
    `Tools: ${p.toolNames.join(', ')}. The observations below were found for the question already; search further when they do not answer it.`,
    [
      'Rules:',
      '- To list or count every mention of something, search for it exactly (grep_messages) rather than trusting one search.',
      '- Newer information updates older; when facts contradict each other, say so and prefer the newest.',
      '- If the memory does not hold the answer, say so plainly. Never invent facts.',
      '- Answer the question directly and concisely.',
    ].join('\n'),
  );
  if (p.history.length > 0) parts.push(`The newest messages of the current session:\n${p.history.join('\n')}`);
  if (p.schema) parts.push(`Give the final answer as one JSON value that validates against this JSON Schema, and nothing else:\n${JSON.stringify(p.schema)}`);
  return parts.join('\n\n');
}

/**
 * Checks a chat request and prepares the agent of reasoning.md R5: the peers, the session, the
 * model of the level, the response format, the cards, the session history and the prefetched
 * memory. Every error here comes before any answer is sent (a stream has not started yet).
 */
export async function prepareChat(given: DomainContext, workspaceId: string, request: ChatRequest, report?: (report: ChatReport) => void): Promise<PreparedChat> {
  // its model calls counted for the workspace
  const ctx = forWorkspace(given, workspaceId);
  const started = performance.now();
  const store = ctx.store;
  const format = request.responseFormat !== undefined ? usableSchema(request.responseFormat) : undefined;
  const model: ChatModel | undefined = ctx.reasoning?.models.chat('dialectic', request.level);
  if (model === undefined) {
    throw unavailable(`Chat needs a dialectic model and none is configured for level ${request.level} (set LLM_OPENAI_API_KEY or LLM_OPENAI_BASE_URL, or DIALECTIC_LEVELS__${request.level}__MODEL_CONFIG__*)`);
  }
  const observerId = request.observerId;
  const targetId = request.targetId ?? observerId;
  // the asking peer is created when missing, as the reference does; in a transaction, so that a
  // workspace deleted between the check and the insert is found gone when it runs again
  const workspace = await inTransaction(ctx, async ({ store }) => {
    const found = await store.workspaces.find(workspaceId);
    if (found === undefined) throw notFound(`Workspace ${workspaceId} not found`);
    for (const peerId of new Set([observerId, request.askingPeerId])) {
      if (peerId !== undefined && (await store.peers.find(workspaceId, peerId)) === undefined) await store.peers.ensure(workspaceId, [peerId], ctx.now());
    }
    return found;
  });
  if (targetId !== undefined && targetId !== observerId && (await store.peers.find(workspaceId, targetId)) === undefined) throw notFound(`Peer ${targetId} not found in workspace ${workspaceId}`);
  const session = request.sessionId !== undefined ? await store.sessions.find(workspaceId, request.sessionId) : undefined;
  if (request.sessionId !== undefined && session === undefined) throw notFound(`Session ${request.sessionId} not found in workspace ${workspaceId}`);

  const limits = (ctx.reasoning?.settings.dialectic ?? DEFAULT_REASONING_SETTINGS.dialectic!)[request.level];
  const chatSettings = ctx.reasoning?.settings.chat ?? DEFAULT_REASONING_SETTINGS.chat!;

  // what the observer may see
  let sessions: string[] | 'all' =
    request.sessionId !== undefined ? [request.sessionId] : observerId !== undefined ? await observerSessions(ctx, workspaceId, observerId) : 'all';
  if (request.allowlist !== undefined) {
    const allowed = new Set(request.allowlist);
    sessions = sessions === 'all' ? [...allowed] : sessions.filter((id) => allowed.has(id));
  }
  const scope: ChatScope = {
    ctx,
    workspaceId,
    conclusions: observerId !== undefined && targetId !== undefined ? { workspaceId, observerId, observedId: targetId, sessionIds: request.allowlist } : undefined,
    explicitOnly: request.allowlist !== undefined,
    sessions,
    render: (m) => renderMessage(m, chatSettings.maxMessageChars),
  };
  const minimal = request.level === 'minimal';
  const tools = chatTools(scope, { minimal });

  const settings = ctx.reasoning?.settings;
  const configuration = settings
    ? effectiveConfiguration(settings, { workspace: workspace.configuration, session: session?.configuration ?? {} })
    : { peerCardUse: true };
  const cards =
    configuration.peerCardUse && observerId !== undefined && targetId !== undefined
      ? {
          own: await cardOf(ctx, workspaceId, observerId, observerId, request.allowlist),
          ofTarget: targetId !== observerId ? await cardOf(ctx, workspaceId, observerId, targetId, request.allowlist) : null,
        }
      : {};
  const history =
    request.sessionId !== undefined ? await sessionHistory(ctx, workspaceId, request.sessionId, chatSettings.sessionHistoryMaxTokens, scope.render) : [];

  // prefetch (R5 step 3): explicit and derived conclusions for the question
  const prefetchSize = minimal ? 10 : 25;
  // the query is embedded once for both searches (when semantic search can run)
  const canEmbed = scope.conclusions !== undefined && embedderOf(ctx) !== undefined && (await store.vectors.dimensions()) !== undefined && request.query.trim() !== '';
  const vector = canEmbed ? await embedQueryForRequest(ctx, workspaceId, request.query, 'the chat could not search its memory') : undefined;
  const explicit = await searchConclusionsFor(scope, request.query, prefetchSize, ['explicit'], vector);
  const derived: ConclusionRecord[] = scope.explicitOnly ? [] : await searchConclusionsFor(scope, request.query, prefetchSize, ['deductive', 'inductive', 'contradiction'], vector);
  const observations =
    scope.conclusions === undefined
      ? [await prefetchMessages(scope, request.query, prefetchSize)]
      : [
          explicit.length > 0 ? `Explicit observations:\n${explicit.map(renderConclusion).join('\n')}` : 'Explicit observations: none found.',
          ...(scope.explicitOnly ? [] : [derived.length > 0 ? `Derived observations:\n${derived.map(renderConclusion).join('\n')}` : 'Derived observations: none found.']),
        ];

  const messages: ChatMessage[] = [
    { role: 'system', content: systemPrompt({ observerId, targetId, cards, toolNames: tools.map((t) => t.name), history, schema: format?.schema }) },
    { role: 'user', content: `${request.query}\n\n${observations.join('\n\n')}` },
  ];

  return {
    async run({ signal, onText }) {
      let outcome: ChatReport['outcome'] = 'error';
      let failure: string | undefined;
      let result: Awaited<ReturnType<typeof runToolLoop>> | undefined;
      try {
        result = await runToolLoop({
          model,
          module: 'dialectic',
          messages,
          tools,
          maxIterations: limits.maxToolIterations,
          maxOutputTokens: limits.maxOutputTokens,
          toolChoice: limits.toolChoice,
          maxInputTokens: chatSettings.maxInputTokens,
          maxToolOutputChars: chatSettings.maxToolOutputChars,
          signal,
          // a JSON answer is sent once validated, not piece by piece
          onText: format === undefined ? onText : undefined,
          json: format ? { name: 'answer', schema: format.schema, validate: format.validate } : undefined,
        });
        outcome = 'ok';
        if (format !== undefined && onText) onText(result.text);
        return { content: result.text };
      } catch (error) {
        failure = error instanceof Error ? error.message : String(error);
        if (signal?.aborted) {
          outcome = 'aborted';
          throw error;
        }
        if (error instanceof FinalAnswerError) {
          outcome = 'invalid_answer';
          throw new DomainError('model_failed', `${error.message} (after one retry)`);
        }
        if (error instanceof ModelError) {
          outcome = 'model_error';
          throw new DomainError('model_failed', `The dialectic model failed: ${error.message}`);
        }
        throw error;
      } finally {
        report?.({
          workspaceId,
          level: request.level,
          model: model.name,
          stream: request.stream,
          outcome,
          toolCalls: result?.toolCalls ?? [],
          usage: result?.usage ?? { inputTokens: 0, outputTokens: 0 },
          modelCalls: result?.modelCalls ?? 0,
          durationMs: Math.round(performance.now() - started),
          error: failure,
        });
      }
    },
  };
}
