import type { Page } from './records.js';

/* A peer's deletion and forgetting chosen conclusions. */

/** What deleting a peer removes (counted the same way the purge removes it). */
export interface PeerFootprint {
  messages: number;
  /** Every conclusion the peer made or that is about it, soft-deleted ones included. */
  conclusions: number;
  /** Scopes' copies of those, made by other observers about other peers. */
  scopeCopies: number;
  /** Cards the peer holds and cards about it. */
  peerCards: number;
  memberships: number;
  metamessages: number;
  /** Summaries of sessions the peer wrote in, removed and queued to be written again. */
  summaries: number;
}

/** A forget's preview as stored: the token's hash, never the token. */
export interface ForgetPreviewRecord {
  tokenHash: string;
  workspaceId: string;
  requestHash: string;
  conclusionIds: string[];
  messageIds: string[];
  createdAt: Date;
  expiresAt: Date;
}

export type RedeemedPreview =
  | { kind: 'ok'; conclusionIds: string[]; messageIds: string[] }
  | { kind: 'unknown' }
  | { kind: 'used' }
  | { kind: 'expired' }
  | { kind: 'mismatch' };

/** One forget carried out: who, when, whose memory, how much; never the content. */
export interface ForgetRecord {
  id: string;
  workspaceId: string;
  observedId: string;
  observerId: string | null;
  /** The key's scope: "admin", "workspace:<id>", or "auth-off". */
  actor: string;
  conclusionsRemoved: number;
  messagesRemoved: number;
  createdAt: Date;
}

/** Removing memory: a peer's deletion and forgetting (docs/forgetting.md). */
export interface ErasureStore {
  /** Marks the peer as being deleted; false when it is absent or already marked. */
  markPeerDeleting(workspaceId: string, peerId: string, now: Date): Promise<boolean>;
  isDeleting(workspaceId: string, peerId: string): Promise<boolean>;
  peerFootprint(workspaceId: string, peerId: string): Promise<PeerFootprint>;
  /** A session the peer still has messages in (its oldest message's). */
  nextMessageSession(workspaceId: string, peerId: string): Promise<string | undefined>;
  /** Deletes up to `limit` of the peer's messages in the session; `left`: some remain there. */
  deletePeerMessages(workspaceId: string, peerId: string, sessionId: string, limit: number): Promise<{ deleted: number; left: boolean }>;
  clearSummaries(workspaceId: string, sessionId: string): Promise<number>;
  /** Deletes up to `limit` conclusions by or about the peer, scopes' copies of them first. */
  deletePeerConclusions(workspaceId: string, peerId: string, limit: number): Promise<number>;
  /** Deletes up to about `limit` of the rest: memberships, metamessages, cards, collection bookkeeping. */
  deletePeerRest(workspaceId: string, peerId: string, limit: number): Promise<number>;
  /** Deletes the marked peer's row (and whatever is left with it). */
  deletePeerRow(workspaceId: string, peerId: string): Promise<boolean>;
  /** The observers holding live conclusions about the peer, in id order (its collections' counts). */
  observersOf(workspaceId: string, observedId: string): Promise<string[]>;
  saveForgetPreview(preview: ForgetPreviewRecord): Promise<void>;
  /** Takes a preview once: marked used in the caller's transaction. */
  redeemForgetPreview(workspaceId: string, tokenHash: string, requestHash: string, now: Date): Promise<RedeemedPreview>;
  /** Deletes the conclusions (and scopes' copies of them); how many rows went. */
  deleteConclusions(workspaceId: string, ids: readonly string[]): Promise<number>;
  deleteMessages(workspaceId: string, ids: readonly string[]): Promise<number>;
  recordForget(record: ForgetRecord): Promise<void>;
  /** Newest first. */
  listForgets(workspaceId: string, page: number, size: number): Promise<Page<ForgetRecord>>;
}
