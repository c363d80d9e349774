import { within, type DomainContext } from '../domain/context.js';
import { SCOPE_BACKFILL, SCOPE_REMOVAL } from '../domain/job-kinds.js';
import { runScopeBackfill, runScopeRemoval } from '../domain/scopes/scope-work.js';
import type { HandlersOf } from './catalog.js';

/** A backfill or removal reads and writes one session's conclusions: seconds at most. */
const SCOPE_TIMEOUT_MS = 2 * 60_000;

/** A scope's backfills and removals: no model is needed, so every worker runs them. */
export function scopeHandlers(ctx: DomainContext): HandlersOf<typeof SCOPE_BACKFILL | typeof SCOPE_REMOVAL> {
  return {
    [SCOPE_BACKFILL]: {
      async run(payload, _job, store) {
        const outcome = await runScopeBackfill(within(ctx, store), payload);
        return outcome.kind === 'done' ? { kind: 'done' } : outcome;
      },
      timeoutMs: SCOPE_TIMEOUT_MS,
    },
    [SCOPE_REMOVAL]: {
      async run(payload, _job, store) {
        const outcome = await runScopeRemoval(within(ctx, store), payload);
        return outcome.kind === 'done' ? { kind: 'done' } : outcome;
      },
      timeoutMs: SCOPE_TIMEOUT_MS,
    },
  };
}
