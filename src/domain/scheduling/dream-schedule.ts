import type { DreamState } from '../../storage/store.js';
import { inTransaction, type DomainContext } from '../context.js';
import { notConfigured } from '../errors.js';
import { DREAM, DREAM_AUTO, newJob, type DreamPayload } from '../job-kinds.js';
import { effectiveConfiguration } from './configuration.js';
import type { ReasoningSettings } from '../reasoning-settings.js';

/*
 * When dreams run (reasoning.md R6). A dream works on one collection (observer, observed); its
 * jobs share the queue key `dream:[workspace, observer, observed]`, so a collection dreams one
 * dream at a time. Manual dreams (`schedule_dream`) run at once; automatic ones are decided after
 * the deriver stores conclusions and wait, durably, as a pending job whose `run_after` is the due
 * time: new activity in the collection (messages of the observed peer that the observer sees, new
 * conclusions) moves it later by DREAM_IDLE_TIMEOUT_MINUTES. Any process may move it or run it,
 * and a restart keeps it, since it lives in the jobs table.
 */


export const dreamQueueKey = (p: { workspaceId: string; observerId: string; observedId: string }) =>
  `dream:${JSON.stringify([p.workspaceId, p.observerId, p.observedId])}`;

/** The collection of a dream queue key, undefined for other keys. */
export function collectionOfDreamKey(queueKey: string): { workspaceId: string; observerId: string; observedId: string } | undefined {
  if (!queueKey.startsWith('dream:')) return undefined;
  try {
    const parts: unknown = JSON.parse(queueKey.slice('dream:'.length));
    if (!Array.isArray(parts) || parts.length !== 3 || !parts.every((p) => typeof p === 'string')) return undefined;
    const [workspaceId, observerId, observedId] = parts as string[];
    return { workspaceId, observerId, observedId };
  } catch {
    return undefined;
  }
}

/**
 * Whether a collection is due a dream: DREAM_DOCUMENT_THRESHOLD more explicit conclusions than at
 * its last dream, and DREAM_MIN_HOURS_BETWEEN_DREAMS since it.
 */
export function dreamIsDue(settings: ReasoningSettings['dream'], last: DreamState | undefined, explicitCount: number, now: Date): boolean {
  if (explicitCount - (last?.explicitAtLastDream ?? 0) < settings.documentThreshold) return false;
  return last === undefined || now.getTime() - last.lastDreamAt.getTime() >= settings.minHoursBetweenDreams * 3_600_000;
}

const idleUntil = (settings: ReasoningSettings, now: Date) => new Date(now.getTime() + settings.dream.idleTimeoutMinutes * 60_000);

/** Whether this process can dream at all (settings and a dream model). */
export function dreamsAvailable(ctx: DomainContext): boolean {
  const reasoning = ctx.reasoning;
  return reasoning !== undefined && reasoning.settings.dream.enabled && reasoning.models.chat('dream_deduction') !== undefined;
}

/**
 * `schedule_dream`: queues the dream to run at once, unless one of that type is already pending
 * or running for the collection (then nothing is added: 'skipped'; a waiting automatic one is
 * brought forward). Refused as the reference does when dreams are off (settings, no dream model,
 * or `dream.enabled` false in the workspace or session configuration).
 */
export async function scheduleDream(ctx: DomainContext, request: DreamPayload): Promise<'queued' | 'skipped'> {
  const reasoning = ctx.reasoning;
  if (reasoning === undefined || !dreamsAvailable(ctx)) throw notConfigured('Dreams are not enabled in the system configuration');
  return inTransaction(ctx, async (ctx) => {
    const { store } = ctx;
    const workspace = await store.workspaces.find(request.workspaceId);
    const session = request.sessionId === null ? undefined : await store.sessions.find(request.workspaceId, request.sessionId);
    const config = effectiveConfiguration(reasoning.settings, { workspace: workspace?.configuration ?? {}, session: session?.configuration ?? {} });
    if (!config.dreamEnabled) throw notConfigured('Dreams are disabled in the configuration of this workspace or session');
    // No existence checks (contract), so a dream for a workspace or peers not created yet is
    // queued; but no row has an empty id, and a job naming one could only be dead-lettered.
    if ([request.workspaceId, request.observerId, request.observedId, request.sessionId].includes('')) return 'skipped';
    return queueDream(ctx, request, ctx.now());
  });
}

/**
 * Queues a dream to run at once inside the caller's transaction, past the schedule's gates (a
 * manual dream, or one that a scope's change of sessions asks for), unless one of that type is
 * already pending or running for the collection; a waiting automatic one is brought forward.
 */
export async function queueDream(ctx: DomainContext, request: DreamPayload, now: Date): Promise<'queued' | 'skipped'> {
  const { store } = ctx;
  const key = dreamQueueKey(request);
  // an automatic dream waiting for the collection to be idle runs now (it would hold this one back)
  await store.jobs.reschedulePending(key, DREAM_AUTO, now, DREAM);
  const open = await store.jobs.openJobs(key);
  if (open.some((job) => job.payload.dreamType === request.dreamType)) return 'skipped';
  await store.jobs.enqueue([newJob({ id: ctx.newId(), kind: DREAM, workspaceId: request.workspaceId, queueKey: key, payload: { ...request }, maxAttempts: ctx.limits.jobMaxAttempts })], now);
  return 'queued';
}

/**
 * New activity in these collections (inside the caller's transaction): a waiting automatic dream
 * is moved to DREAM_IDLE_TIMEOUT_MINUTES from now. `waiting`: the queue keys of the workspace's
 * waiting automatic dreams, when the caller read them in its transaction (most collections have
 * none: no statement for them). A dream a deriver queues after that read is not moved, and needs
 * not be: it was queued to run DREAM_IDLE_TIMEOUT_MINUTES after that deriver's commit.
 */
export async function postponeAutomaticDreams(
  ctx: DomainContext,
  collections: readonly { workspaceId: string; observerId: string; observedId: string }[],
  now: Date,
  waiting?: ReadonlySet<string>,
): Promise<void> {
  const { store } = ctx;
  const reasoning = ctx.reasoning;
  if (reasoning === undefined || !dreamsAvailable(ctx)) return;
  // in key order, as considerAutomaticDreams takes them (a deriver's batch beside a message write)
  const keys = [...new Set(collections.map(dreamQueueKey))].filter((key) => waiting === undefined || waiting.has(key)).sort();
  await store.jobs.reschedulePendingOf(keys, DREAM_AUTO, idleUntil(reasoning.settings, now));
}

/**
 * After the deriver stored explicit conclusions in these collections (inside its transaction):
 * a waiting automatic dream is postponed (new activity); otherwise, when the collection is due
 * (dreamIsDue) and has no dream pending or running, an automatic omni dream is queued to run
 * after DREAM_IDLE_TIMEOUT_MINUTES.
 */
export async function considerAutomaticDreams(
  ctx: DomainContext,
  collections: readonly { workspaceId: string; observerId: string; observedId: string; sessionId: string }[],
  now: Date,
): Promise<number> {
  const { store } = ctx;
  const reasoning = ctx.reasoning;
  // automatic dreams are omni dreams: DREAM_ENABLED_TYPES without omni turns them off
  if (reasoning === undefined || !dreamsAvailable(ctx) || !reasoning.settings.dream.enabledTypes.includes('omni')) return 0;
  let queued = 0;
  // in key order, as postponeAutomaticDreams takes them (a message write beside this batch)
  const ordered = collections.map((collection) => ({ collection, key: dreamQueueKey(collection) })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (const { collection, key } of ordered) {
    const open = await store.jobs.openJobs(key);
    if (open.some((job) => job.status === 'pending' && job.kind === DREAM_AUTO)) {
      await store.jobs.reschedulePending(key, DREAM_AUTO, idleUntil(reasoning.settings, now), DREAM_AUTO);
      continue;
    }
    if (open.length > 0) continue;
    const explicit = await store.memory.countConclusions(collection, 'explicit');
    const last = await store.memory.dreamState(collection.workspaceId, collection.observerId, collection.observedId);
    if (!dreamIsDue(reasoning.settings.dream, last, explicit, now)) continue;
    const workspace = await store.workspaces.find(collection.workspaceId);
    const session = await store.sessions.find(collection.workspaceId, collection.sessionId);
    const config = effectiveConfiguration(reasoning.settings, { workspace: workspace?.configuration ?? {}, session: session?.configuration ?? {} });
    if (!config.dreamEnabled) continue;
    const payload: DreamPayload = { workspaceId: collection.workspaceId, observerId: collection.observerId, observedId: collection.observedId, dreamType: 'omni', sessionId: null, rebuild: false };
    await store.jobs.enqueue(
      [newJob({ id: ctx.newId(), kind: DREAM_AUTO, workspaceId: collection.workspaceId, queueKey: key, payload, maxAttempts: ctx.limits.jobMaxAttempts, runAfter: idleUntil(reasoning.settings, now) })],
      now,
    );
    queued++;
  }
  return queued;
}
