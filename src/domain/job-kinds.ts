import type { JsonObject, NewJob, PeerFootprint } from '../storage/store.js';

/*
 * Every kind of background job, declared once: its name, its payload's type, and the reader that
 * checks a stored payload when the job is claimed (a stored row is input too; a payload that does
 * not fit is dead-lettered without running). `newJob` is the one way the domain writes a job, so a
 * payload of the wrong shape for its kind does not compile; the worker's catalog
 * (jobs/catalog.ts) must give every kind a handler, or say why it has none.
 *
 * To add a kind: its name and payload here, its reader in PAYLOAD_READERS, its handler in
 * jobs/catalog.ts (docs/contributing.md).
 */

/** Remove a deleted session and everything in it (contract §7.3). */
export const PURGE_SESSION = 'session.purge';
/** Deliver one webhook event to one endpoint. */
export const DELIVER_WEBHOOK = 'webhook.deliver';
/** Form conclusions from a unit's open items (the deriver). */
export const REPRESENT = 'reasoning.represent';
/** Write a session's short and/or long summary. */
export const SUMMARIZE = 'reasoning.summarize';
/** Embed messages of one session. */
export const EMBED_MESSAGES = 'reasoning.embed_messages';
/** Embed stored conclusions again (`engram reembed`). */
export const EMBED_CONCLUSIONS = 'reasoning.embed_conclusions';
/** A dream asked for through the API. */
export const DREAM = 'reasoning.dream';
/** An automatic dream, waiting for its collection to be idle. */
export const DREAM_AUTO = 'reasoning.dream.auto';
/** Copy a session's explicit conclusions into a scope. */
export const SCOPE_BACKFILL = 'scope.backfill';
/** Retire what a scope holds from a session it left. */
export const SCOPE_REMOVAL = 'scope.removal';
/** Remove a peer marked as being deleted, and everything by or about it. */
export const PURGE_PEER = 'peer.purge';

export const DREAM_KINDS = [DREAM, DREAM_AUTO] as const;

export interface PurgeSessionPayload extends JsonObject {
  sessionId: string;
}

export type WebhookEventType = 'test.event' | 'queue.empty' | 'message.created' | 'peer.deleted';
const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = ['test.event', 'queue.empty', 'message.created', 'peer.deleted'];

/** A webhook event as delivered: `{"data", "timestamp", "type"}` (contract §7.6). */
export interface WebhookEvent {
  type: WebhookEventType;
  data: JsonObject;
  /** `YYYY-MM-DDTHH:MM:SSZ` */
  timestamp: string;
}

/** One event to deliver. */
export interface WebhookDelivery extends JsonObject {
  /** Same for every endpoint and every retry of one event: receivers drop duplicates by it. */
  eventId: string;
  event: WebhookEvent & JsonObject;
}

/** Most events one delivery job sends (one request each, in order): the events of one write to one endpoint, in jobs of this many. */
export const WEBHOOK_EVENTS_PER_JOB = 20;

/**
 * Events for one endpoint, sent one request each, in order; the job's queue key is
 * `webhook:<endpoint id>`, so deliveries to it run one at a time, in order. A job stored before
 * events were grouped (`eventId` and `event` of one) is read as a group of one.
 */
export interface DeliverWebhookPayload extends JsonObject {
  endpointId: string;
  events: WebhookDelivery[];
}

export interface RepresentPayload extends JsonObject {
  workspaceId: string;
  sessionId: string;
  observedId: string;
}

export interface SummarizePayload extends JsonObject {
  workspaceId: string;
  sessionId: string;
  messageId: string;
  /** The message's number in its session (1-based). */
  messageSeq: number;
  kinds: ('short' | 'long')[];
}

/** Most message (or conclusion) ids one embedding job carries (a bigger batch is split). */
export const MESSAGES_PER_EMBED_JOB = 100;

export interface EmbedMessagesPayload extends JsonObject {
  workspaceId: string;
  sessionId: string;
  messageIds: string[];
}

export interface EmbedConclusionsPayload extends JsonObject {
  workspaceId: string;
  conclusionIds: string[];
}

export type DreamType = 'omni' | 'card_refresh';

export interface DreamPayload extends JsonObject {
  workspaceId: string;
  observerId: string;
  observedId: string;
  dreamType: DreamType;
  /** The session the dream was asked about (its messages searched first); null: all. */
  sessionId: string | null;
  /** Rewrite from all the collection's conclusions, the card from scratch. */
  rebuild: boolean;
}

export interface ScopeWorkPayload extends JsonObject {
  workspaceId: string;
  /** The scope's peer (`scope.<name>`). */
  scopePeerId: string;
  sessionId: string;
}

export interface PurgePeerPayload extends JsonObject {
  peerId: string;
  /** What the request counted, reported again by the `peer.deleted` event. */
  removed: PeerFootprint & JsonObject;
}

const PEER_FOOTPRINT_COUNTS: readonly (keyof PeerFootprint)[] = ['messages', 'conclusions', 'scopeCopies', 'peerCards', 'memberships', 'metamessages', 'summaries'];

/** Each kind's payload. */
export interface JobPayloads {
  [PURGE_SESSION]: PurgeSessionPayload;
  [DELIVER_WEBHOOK]: DeliverWebhookPayload;
  [REPRESENT]: RepresentPayload;
  [SUMMARIZE]: SummarizePayload;
  [EMBED_MESSAGES]: EmbedMessagesPayload;
  [EMBED_CONCLUSIONS]: EmbedConclusionsPayload;
  [DREAM]: DreamPayload;
  [DREAM_AUTO]: DreamPayload;
  [SCOPE_BACKFILL]: ScopeWorkPayload;
  [SCOPE_REMOVAL]: ScopeWorkPayload;
  [PURGE_PEER]: PurgePeerPayload;
}

export type JobKind = keyof JobPayloads;

export const isText = (value: unknown): value is string => typeof value === 'string' && value.length > 0;
const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);
const isIdList = (value: unknown): value is string[] => Array.isArray(value) && value.length > 0 && value.length <= MESSAGES_PER_EMBED_JOB && value.every(isText);

function readScopeWork(payload: JsonObject): ScopeWorkPayload | undefined {
  const { workspaceId, scopePeerId, sessionId } = payload;
  return isText(workspaceId) && isText(scopePeerId) && isText(sessionId) ? { workspaceId, scopePeerId, sessionId } : undefined;
}

function readDream(payload: JsonObject): DreamPayload | undefined {
  const { workspaceId, observerId, observedId, dreamType, sessionId, rebuild } = payload;
  if (!isText(workspaceId) || !isText(observerId) || !isText(observedId)) return undefined;
  if (dreamType !== 'omni' && dreamType !== 'card_refresh') return undefined;
  if (sessionId !== null && !isText(sessionId)) return undefined;
  if (typeof rebuild !== 'boolean') return undefined;
  return { workspaceId, observerId, observedId, dreamType, sessionId, rebuild };
}

function readDelivery({ eventId, event }: JsonObject): WebhookDelivery | undefined {
  if (!isText(eventId) || !isObject(event)) return undefined;
  const { type, data, timestamp } = event;
  if (!WEBHOOK_EVENT_TYPES.includes(type as WebhookEventType) || !isObject(data) || !isText(timestamp)) return undefined;
  return { eventId, event: { type: type as WebhookEventType, data, timestamp } };
}

/** Each kind's reader of a stored payload: the typed payload, or undefined when it does not fit. */
export const PAYLOAD_READERS: { readonly [K in JobKind]: (payload: JsonObject) => JobPayloads[K] | undefined } = {
  [PURGE_SESSION]: ({ sessionId }) => (isText(sessionId) ? { sessionId } : undefined),
  [DELIVER_WEBHOOK]: ({ endpointId, events, eventId, event }) => {
    if (!isText(endpointId)) return undefined;
    const stored = events === undefined ? [{ eventId, event }] : events;
    if (!Array.isArray(stored) || stored.length === 0 || stored.length > WEBHOOK_EVENTS_PER_JOB) return undefined;
    const read: WebhookDelivery[] = [];
    for (const item of stored) {
      const delivery = isObject(item) ? readDelivery(item) : undefined;
      if (delivery === undefined) return undefined;
      read.push(delivery);
    }
    return { endpointId, events: read };
  },
  [REPRESENT]: ({ workspaceId, sessionId, observedId }) => (isText(workspaceId) && isText(sessionId) && isText(observedId) ? { workspaceId, sessionId, observedId } : undefined),
  [SUMMARIZE]: ({ workspaceId, sessionId, messageId, messageSeq, kinds }) => {
    if (!isText(workspaceId) || !isText(sessionId) || !isText(messageId)) return undefined;
    if (typeof messageSeq !== 'number' || !Number.isInteger(messageSeq) || messageSeq < 1) return undefined;
    if (!Array.isArray(kinds) || kinds.length === 0 || !kinds.every((kind) => kind === 'short' || kind === 'long')) return undefined;
    return { workspaceId, sessionId, messageId, messageSeq, kinds: kinds as ('short' | 'long')[] };
  },
  [EMBED_MESSAGES]: ({ workspaceId, sessionId, messageIds }) => (isText(workspaceId) && isText(sessionId) && isIdList(messageIds) ? { workspaceId, sessionId, messageIds } : undefined),
  [EMBED_CONCLUSIONS]: ({ workspaceId, conclusionIds }) => (isText(workspaceId) && isIdList(conclusionIds) ? { workspaceId, conclusionIds } : undefined),
  [DREAM]: readDream,
  [DREAM_AUTO]: readDream,
  [SCOPE_BACKFILL]: readScopeWork,
  [SCOPE_REMOVAL]: readScopeWork,
  [PURGE_PEER]: ({ peerId, removed }) => {
    if (!isText(peerId) || !isObject(removed)) return undefined;
    if (!PEER_FOOTPRINT_COUNTS.every((key) => Number.isSafeInteger(removed[key]) && (removed[key] as number) >= 0)) return undefined;
    return { peerId, removed: Object.fromEntries(PEER_FOOTPRINT_COUNTS.map((key) => [key, removed[key]])) as PurgePeerPayload['removed'] };
  },
};

export const JOB_KINDS = Object.keys(PAYLOAD_READERS) as JobKind[];

/** A job of one kind, its payload of that kind's type. */
export interface JobOf<K extends JobKind> extends Omit<NewJob, 'kind' | 'payload'> {
  kind: K;
  payload: JobPayloads[K];
}

/** A job row to enqueue; the payload's type is checked against the kind's. */
export function newJob<K extends JobKind>(job: JobOf<K>): NewJob {
  return job;
}
