import { createHash, randomBytes } from 'node:crypto';
import type { ConclusionRecord, ForgetRecord, JsonObject, MessageRecord, Page } from '../../storage/store.js';
import { inTransaction, type DomainContext } from '../context.js';
import { conflict, invalidInput, notFound } from '../errors.js';
import { documentFilter, CURRENT_RULES } from '../filters/filters.js';
import { queryConclusions } from './conclusions.js';

/*
 * Forgetting (docs/forgetting.md): chosen conclusions about one peer, found by a query and/or
 * filters, removed in two steps. The first call previews them and answers a token; the same call
 * with the token removes exactly the previewed set (ids stored with the token's hash), whatever
 * matches by then. A token works once, for FORGET_TOKEN_TTL_MS, and only with the request that
 * made it. Each removal is recorded: who, when, whose memory and how many, never the content.
 */

/** How long a preview's token can be redeemed. */
export const FORGET_TOKEN_TTL_MS = 15 * 60_000;
/** Most conclusions one forget previews (and removes). */
export const FORGET_MAX_LIMIT = 1_000;
export const FORGET_DEFAULT_LIMIT = 100;

export interface ForgetRequest {
  observedId: string;
  observerId?: string;
  query?: string;
  filters?: JsonObject;
  includeMessages: boolean;
  limit: number;
}

export type ForgetResult =
  | { kind: 'preview'; token: string; expiresAt: Date; conclusions: ConclusionRecord[]; messages?: MessageRecord[] }
  | { kind: 'forgotten'; record: ForgetRecord };

/** The request as its token is bound to it: the same fields in a fixed order. */
function requestHash(request: ForgetRequest): string {
  const canonical = JSON.stringify([request.observedId, request.observerId ?? null, request.query ?? null, sorted(request.filters ?? null), request.includeMessages, request.limit]);
  return createHash('sha256').update(canonical).digest('hex');
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sorted((value as JsonObject)[key])]),
  );
}

const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

/** Previews (no token) or carries out (with the preview's token) a forget. */
export async function forget(ctx: DomainContext, workspaceId: string, request: ForgetRequest, token: string | undefined, actor: string): Promise<ForgetResult> {
  if (request.query === undefined && request.filters === undefined) throw invalidInput('A forget needs a query, filters, or both');
  if ((await ctx.store.workspaces.find(workspaceId)) === undefined) throw notFound(`Workspace ${workspaceId} not found`);
  if (token !== undefined) return carryOut(ctx, workspaceId, request, token, actor);
  if ((await ctx.store.peers.find(workspaceId, request.observedId)) === undefined) throw notFound(`Peer ${request.observedId} not found in workspace ${workspaceId}`);
  const conclusions = await matching(ctx, workspaceId, request);
  const messages = request.includeMessages ? await sourceMessages(ctx, workspaceId, conclusions) : undefined;
  const now = ctx.now();
  const issued = randomBytes(24).toString('base64url');
  const expiresAt = new Date(now.getTime() + FORGET_TOKEN_TTL_MS);
  // The token's row refers to the workspace, which a purge may have removed since the reads: the
  // workspace is checked again in the transaction that stores it, so a removal committed in
  // between ends the preview as a missing workspace (the store runs the transaction again when its
  // insert finds the workspace gone), not as a failed insert.
  await inTransaction(ctx, async ({ store }) => {
    if ((await store.workspaces.find(workspaceId)) === undefined) throw notFound(`Workspace ${workspaceId} not found`);
    await store.erasure.saveForgetPreview({
      tokenHash: tokenHash(issued),
      workspaceId,
      requestHash: requestHash(request),
      conclusionIds: conclusions.map((c) => c.id),
      messageIds: (messages ?? []).map((m) => m.id),
      createdAt: now,
      expiresAt,
    });
  });
  return { kind: 'preview', token: issued, expiresAt, conclusions, messages };
}

async function carryOut(ctx: DomainContext, workspaceId: string, request: ForgetRequest, token: string, actor: string): Promise<ForgetResult> {
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const now = ctx.now();
    const redeemed = await store.erasure.redeemForgetPreview(workspaceId, tokenHash(token), requestHash(request), now);
    if (redeemed.kind === 'unknown') throw notFound('Unknown forget token for this workspace');
    if (redeemed.kind === 'used') throw conflict('This forget token was used already');
    if (redeemed.kind === 'expired') throw conflict('This forget token has expired: preview again');
    if (redeemed.kind === 'mismatch') throw conflict('This forget token was issued for another request: send the same fields as the preview');
    // messages first: their sessions' rows come before conclusions' count rows in the lock order
    const messagesRemoved = await store.erasure.deleteMessages(workspaceId, redeemed.messageIds);
    const conclusionsRemoved = await store.erasure.deleteConclusions(workspaceId, redeemed.conclusionIds);
    const record: ForgetRecord = {
      id: ctx.newId(),
      workspaceId,
      observedId: request.observedId,
      observerId: request.observerId ?? null,
      actor,
      conclusionsRemoved,
      messagesRemoved,
      createdAt: now,
    };
    await store.erasure.recordForget(record);
    return { kind: 'forgotten', record };
  });
}

/** The conclusions a forget would remove: best match first with a query, newest first otherwise. */
async function matching(ctx: DomainContext, workspaceId: string, request: ForgetRequest): Promise<ConclusionRecord[]> {
  const { store } = ctx;
  const extra = request.filters === undefined ? {} : { AND: [request.filters] };
  // the filters' 422 before any search
  documentFilter(store, request.filters ?? null, CURRENT_RULES);
  const observers = request.observerId !== undefined ? [request.observerId] : await store.erasure.observersOf(workspaceId, request.observedId);
  if (request.query === undefined) {
    const filter = documentFilter(store, { observed_id: request.observedId, ...(request.observerId === undefined ? {} : { observer_id: request.observerId }), ...extra }, CURRENT_RULES);
    const page = await store.memory.listConclusions(workspaceId, { filter, page: 1, size: request.limit, reverse: false });
    return page.items;
  }
  const found: ConclusionRecord[] = [];
  for (const observerId of observers) {
    const filters = { observer: observerId, observed: request.observedId, ...extra };
    found.push(...(await queryConclusions(ctx, workspaceId, { query: request.query, topK: request.limit, distance: null, filters, rules: CURRENT_RULES })));
  }
  return found.slice(0, request.limit);
}

/** The messages explicit conclusions were drawn from (derived ones rest on conclusions, not messages). */
async function sourceMessages(ctx: DomainContext, workspaceId: string, conclusions: readonly ConclusionRecord[]): Promise<MessageRecord[]> {
  const ids = [...new Set(conclusions.filter((c) => c.level === 'explicit').flatMap((c) => c.sourceIds ?? []))];
  return ids.length === 0 ? [] : ctx.store.messages.byIds(workspaceId, ids);
}

/** The workspace's forgets, newest first. */
export async function listForgets(ctx: DomainContext, workspaceId: string, page: number, size: number): Promise<Page<ForgetRecord>> {
  if ((await ctx.store.workspaces.find(workspaceId)) === undefined) throw notFound(`Workspace ${workspaceId} not found`);
  return ctx.store.erasure.listForgets(workspaceId, page, size);
}
