import type {
  ConclusionRecord,
  ForgetRecord,
  MessageRecord,
  Page,
  PeerRecord,
  SessionRecord,
  SessionSummaryRecord,
  WebhookEndpointRecord,
  WorkspaceRecord,
} from '../../storage/store.js';
import { subMillisecondMicros } from '../../storage/precise-date.js';
import type { WorkspaceStatistics } from '../../domain/workspaces/workspace-statistics.js';

/*
 * Domain records -> wire JSON for the workspace generations (v2 and v3 share these shapes).
 * Field order follows the reference (contract §1.5).
 */

const MS_PER_DAY = 86_400_000;
/** Two-digit and three-digit zero-padded numbers, so formatting a time is a few lookups. */
const TWO_DIGITS = Array.from({ length: 60 }, (_, n) => String(n).padStart(2, '0'));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, '0'));
/** `YYYY-MM-DDT` of the last day formatted: a page's times mostly fall on a few days. */
let cachedDay = NaN;
let cachedDayPrefix = '';

/**
 * ISO 8601 UTC with `Z`; six fractional digits unless the sub-second part is zero (§1.5).
 * Every list item carries a time, so this builds the text from the day's cached prefix and the
 * time of day instead of calling `toISOString()` (equal output, tested against it).
 */
export function isoTime(date: Date): string {
  const ms = date.getTime();
  const day = Math.floor(ms / MS_PER_DAY);
  if (day !== cachedDay) {
    // years outside 0000-9999 (and invalid dates, which throw) take the general path
    if (!(ms >= -62_167_219_200_000 && ms < 253_402_300_800_000)) return isoTimeOf(date);
    cachedDayPrefix = date.toISOString().slice(0, 11);
    cachedDay = day;
  }
  const inDay = ms - day * MS_PER_DAY;
  const millis = inDay % 1000;
  const seconds = Math.floor(inDay / 1000);
  const clock = `${cachedDayPrefix}${TWO_DIGITS[Math.floor(seconds / 3600)]}:${TWO_DIGITS[Math.floor(seconds / 60) % 60]}:${TWO_DIGITS[seconds % 60]}`;
  const micros = subMillisecondMicros(date);
  return millis === 0 && micros === 0 ? `${clock}Z` : `${clock}.${THREE_DIGITS[millis]}${THREE_DIGITS[micros]}Z`;
}

/** The general formatter `isoTime` must equal (exported for its test). */
export function isoTimeOf(date: Date): string {
  const text = date.toISOString();
  const micros = subMillisecondMicros(date);
  // toISOString ends in `.sssZ` (its year may have six digits and a sign)
  if (date.getUTCMilliseconds() === 0 && micros === 0) return `${text.slice(0, -5)}Z`;
  return `${text.slice(0, -1)}${String(micros).padStart(3, '0')}Z`;
}

export function presentWorkspace(w: WorkspaceRecord) {
  return { id: w.id, metadata: w.metadata, configuration: w.configuration, created_at: isoTime(w.createdAt) };
}

export function presentPeer(p: PeerRecord) {
  return {
    id: p.id,
    workspace_id: p.workspaceId,
    created_at: isoTime(p.createdAt),
    metadata: p.metadata,
    configuration: p.configuration,
  };
}

export function presentSession(s: SessionRecord) {
  return {
    id: s.id,
    is_active: s.isActive,
    workspace_id: s.workspaceId,
    metadata: s.metadata,
    configuration: s.configuration,
    created_at: isoTime(s.createdAt),
  };
}

export function presentWebhookEndpoint(e: WebhookEndpointRecord) {
  return { id: e.id, workspace_id: e.workspaceId, url: e.url, created_at: isoTime(e.createdAt) };
}

export function presentMessage(m: MessageRecord) {
  return {
    id: m.id,
    content: m.content,
    peer_id: m.peerId,
    session_id: m.sessionId,
    metadata: m.metadata,
    created_at: isoTime(m.createdAt),
    workspace_id: m.workspaceId,
    token_count: m.tokenCount,
  };
}

/** The page wrapper: `pages` is ceil(total / size), 0 when empty (contract §1.8). */
export function presentPage<T, U>(page: Page<T>, number: number, size: number, present: (item: T) => U) {
  return {
    items: page.items.map(present),
    total: page.total,
    page: number,
    size,
    pages: Math.ceil(page.total / size),
  };
}

/** v3 Conclusion (contract §7.5). */
export function presentConclusion(c: ConclusionRecord) {
  return {
    id: c.id,
    content: c.content,
    observer_id: c.observerId,
    observed_id: c.observedId,
    session_id: c.sessionId,
    level: c.level,
    // additions to the v3.0.12 shape that @honcho-ai/sdk 2.5.0 reads (docs/compatibility.md)
    source_ids: c.sourceIds,
    times_derived: c.timesDerived,
    created_at: isoTime(c.createdAt),
    // facts over time (docs/reasoning.md): additions, null while the conclusion is current
    valid_from: isoTime(c.validFrom ?? c.createdAt),
    superseded_at: c.supersededAt === null || c.supersededAt === undefined ? null : isoTime(c.supersededAt),
    superseded_by: c.supersededBy ?? null,
  };
}

/** v2 Observation: a conclusion without `level` (contract §9.1). */
export function presentObservation(c: ConclusionRecord) {
  return {
    id: c.id,
    content: c.content,
    observer_id: c.observerId,
    observed_id: c.observedId,
    session_id: c.sessionId,
    created_at: isoTime(c.createdAt),
  };
}

/**
 * v2 `Representation` object of peer context (openapi/v2.json): explicit and deductive
 * observations (v2 has no other levels). Derivation sources are not tracked, so `message_ids`
 * and `premises` are empty; a conclusion stored without a session has `session_name` "".
 */
export function presentV2Representation(conclusions: ConclusionRecord[]) {
  const base = (c: ConclusionRecord) => ({ created_at: isoTime(c.createdAt), message_ids: [] as number[], session_name: c.sessionId ?? '' });
  return {
    explicit: conclusions.filter((c) => c.level === 'explicit').map((c) => ({ ...base(c), content: c.content })),
    deductive: conclusions.filter((c) => c.level === 'deductive').map((c) => ({ ...base(c), premises: [] as string[], conclusion: c.content })),
  };
}

/** A session summary (contract: `{content, message_id, summary_type, created_at, token_count}`); null stays null. */
export function presentSummary(s: SessionSummaryRecord | null) {
  return s === null ? null : { content: s.content, message_id: s.messageId, summary_type: s.type, created_at: isoTime(s.createdAt), token_count: s.tokenCount };
}

/** A forget carried out (docs/forgetting.md): who, when, how many; never the content. */
export function presentForgetRecord(record: ForgetRecord) {
  return {
    id: record.id,
    workspace_id: record.workspaceId,
    observed: record.observedId,
    observer: record.observerId,
    actor: record.actor,
    conclusions_removed: record.conclusionsRemoved,
    messages_removed: record.messagesRemoved,
    created_at: isoTime(record.createdAt),
  };
}

/** A workspace's statistics (docs/inspector.md, "Statistics") over `hours` hours of model usage. */
export function presentStatistics(workspaceId: string, s: WorkspaceStatistics, hours: number) {
  return {
    workspace_id: workspaceId,
    peers: s.counts.peers,
    sessions: s.counts.sessions,
    messages: s.counts.messages,
    conclusions: s.counts.conclusions,
    pending_work_units: s.pendingWorkUnits,
    in_progress_work_units: s.inProgressWorkUnits,
    model_usage: {
      since: isoTime(s.usageSince),
      hours,
      modules: s.modelUsage.map((u) => ({
        module: u.module,
        model: u.model,
        calls: u.calls,
        failed_calls: u.failedCalls,
        input_tokens: u.inputTokens,
        output_tokens: u.outputTokens,
      })),
    },
  };
}
