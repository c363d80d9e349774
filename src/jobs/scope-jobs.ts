import { within, type DomainContext } from '../domain/context.js';
import { runScopeBackfill, runScopeRemoval, SCOPE_BACKFILL, SCOPE_REMOVAL, type ScopeWorkPayload } from '../domain/scopes/scope-work.js';
import type { JsonObject } from '../storage/store.js';
import { isText, jobHandler, type JobCatalog } from './catalog.js';

/** A stored payload of either kind, checked when claimed (a stored row is input too). */
export function readScopeWorkPayload(payload: JsonObject): ScopeWorkPayload | undefined {
  const { workspaceId, scopePeerId, sessionId } = payload;
  return isText(workspaceId) && isText(scopePeerId) && isText(sessionId) ? { workspaceId, scopePeerId, sessionId } : undefined;
}

/** A backfill or removal reads and writes one session's conclusions: seconds at most. */
const SCOPE_TIMEOUT_MS = 2 * 60_000;

/** A scope's backfills and removals: no model is needed, so every worker runs them. */
export function scopeHandlers(ctx: DomainContext): JobCatalog {
  return {
    [SCOPE_BACKFILL]: jobHandler({
      readPayload: readScopeWorkPayload,
      async run(payload, _job, store) {
        const outcome = await runScopeBackfill(within(ctx, store), payload);
        return outcome.kind === 'done' ? { kind: 'done' } : outcome;
      },
      timeoutMs: SCOPE_TIMEOUT_MS,
    }),
    [SCOPE_REMOVAL]: jobHandler({
      readPayload: readScopeWorkPayload,
      async run(payload, _job, store) {
        const outcome = await runScopeRemoval(within(ctx, store), payload);
        return outcome.kind === 'done' ? { kind: 'done' } : outcome;
      },
      timeoutMs: SCOPE_TIMEOUT_MS,
    }),
  };
}
