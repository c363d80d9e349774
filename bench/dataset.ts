/**
 * The benchmark's data: one workspace with many peers and sessions, bulk-loaded through the
 * store (not HTTP) in transactions of a few thousand rows, plus one peer that is a member of
 * a few dozen sessions so "sessions of a peer" returns a real page. For the message and
 * search cases, `loadMessages` adds (to the same workspace) 1,000,000 generated messages over
 * 1,000 chat sessions, through `insertMessages` in transactions of 20,000.
 */
import { queryTerms } from '../src/domain/search/query-terms.js';
import type { MessageRecord, Store } from '../src/storage/store.js';
import type { Corpus } from './corpus.js';

/** The band of the loader's `sameMatches` queries, in messages matched (not scaled with the store). */
export const SAME_MATCHES = { low: 10, high: 100 } as const;

export const BENCH_PEER = 'bench-peer';

export interface DatasetShape {
  workspaceId: string;
  peers: number;
  sessions: number;
  /** Sessions `bench-peer` is a member of (spread evenly over all sessions). */
  benchPeerSessions: number;
  /** Memberships of other peers, spread round-robin over the sessions (0: none). */
  extraMemberships: number;
}

export interface LoadStats {
  peers: number;
  sessions: number;
  memberships: number;
  extraMemberships: number;
  peersMs: number;
  sessionsMs: number;
  membershipsMs: number;
  totalMs: number;
}

/** Rows per transaction. */
const TRANSACTION_ROWS = 5_000;
/** Peers per multi-row INSERT (3 parameters each; far below SQLite's and PostgreSQL's limits). */
const INSERT_ROWS = 1_000;

const pad = (n: number) => String(n).padStart(6, '0');

/** Peer ids: `bench-peer` plus `peer-000001`...; the total is `shape.peers`. */
export function peerId(index: number): string {
  return index === 0 ? BENCH_PEER : `peer-${pad(index)}`;
}

export function sessionId(index: number): string {
  return `session-${pad(index)}`;
}

/** Session indexes `bench-peer` belongs to. */
export function benchPeerSessionIndexes(shape: DatasetShape): number[] {
  const stride = Math.max(1, Math.floor(shape.sessions / shape.benchPeerSessions));
  const indexes: number[] = [];
  for (let i = 0; i < shape.benchPeerSessions && i * stride < shape.sessions; i++) indexes.push(i * stride);
  return indexes;
}

/** The store operations the loader needs (any Store, or the SqlStore that openDatabase returns). */
export type BulkStore = Pick<Store, 'transaction' | 'workspaces' | 'peers' | 'sessions'>;

export async function loadDataset(store: BulkStore, shape: DatasetShape): Promise<LoadStats> {
  const started = performance.now();
  // Rows get increasing created_at values, as if written over the past day.
  const base = Date.now() - 86_400_000;
  const { workspaceId } = shape;
  await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, new Date(base));

  let mark = performance.now();
  for (let start = 0; start < shape.peers; start += TRANSACTION_ROWS) {
    const end = Math.min(shape.peers, start + TRANSACTION_ROWS);
    await store.transaction(async (tx) => {
      for (let chunk = start; chunk < end; chunk += INSERT_ROWS) {
        const ids: string[] = [];
        for (let i = chunk; i < Math.min(end, chunk + INSERT_ROWS); i++) ids.push(peerId(i));
        await tx.peers.ensure(workspaceId, ids, new Date(base + chunk));
      }
    });
  }
  const peersMs = performance.now() - mark;

  mark = performance.now();
  const sessionBase = base + shape.peers;
  for (let start = 0; start < shape.sessions; start += TRANSACTION_ROWS) {
    const end = Math.min(shape.sessions, start + TRANSACTION_ROWS);
    await store.transaction(async (tx) => {
      // one after another: node-postgres deprecates queries queued on a client that is busy
      for (let i = start; i < end; i++) {
        await tx.sessions.createIfAbsent(workspaceId, { id: sessionId(i), metadata: {}, configuration: {} }, new Date(sessionBase + i));
      }
    });
  }
  const sessionsMs = performance.now() - mark;

  mark = performance.now();
  const joinedAt = new Date(sessionBase + shape.sessions);
  const memberOf = benchPeerSessionIndexes(shape);
  await store.transaction(async (tx) => {
    for (const index of memberOf) {
      await tx.sessions.saveMemberships(workspaceId, sessionId(index), [{ peerId: BENCH_PEER, configuration: {}, joinedAt, leftAt: null }]);
    }
  });
  // Other peers' memberships: session i mod S gets peer 1 + (104729 i mod (P - 1)); 104729 is
  // prime, so the pairs do not repeat, and differ from the pairs the add-peers case walks.
  for (let start = 0; start < shape.extraMemberships; start += TRANSACTION_ROWS) {
    const end = Math.min(shape.extraMemberships, start + TRANSACTION_ROWS);
    await store.transaction(async (tx) => {
      for (let i = start; i < end; i++) {
        const member = peerId(1 + ((i * 104_729) % (shape.peers - 1)));
        await tx.sessions.saveMemberships(workspaceId, sessionId(i % shape.sessions), [{ peerId: member, configuration: {}, joinedAt, leftAt: null }]);
      }
    });
  }
  const membershipsMs = performance.now() - mark;

  return {
    peers: shape.peers,
    sessions: shape.sessions,
    memberships: memberOf.length,
    extraMemberships: shape.extraMemberships,
    peersMs,
    sessionsMs,
    membershipsMs,
    totalMs: performance.now() - started,
  };
}

// ------------------------------------------------------------------ messages

export interface MessageShape {
  workspaceId: string;
  /** Messages to load (BENCH_MESSAGES). */
  messages: number;
  /** Sessions they are spread over. */
  sessions: number;
  /** Words in the vocabulary and the Zipf exponent (see corpus.ts). */
  vocabulary: number;
  zipf: number;
  seed: number;
}

/** Messages per transaction of the bulk load (insertMessages writes 50 per INSERT). */
const MESSAGE_TRANSACTION_ROWS = 20_000;
/** Consecutive messages that go to one session, as if posted in one batch. */
const MESSAGE_RUN = 100;
/** Every this many runs goes to the list session (chat 0): 4,000 of 1,000,000 messages. */
const LIST_SESSION_EVERY = 250;

export function chatSessionId(index: number): string {
  return `chat-${pad(index)}`;
}

/** The session the message-list case reads: the one with the most messages. */
export const LIST_SESSION = chatSessionId(0);

/** Senders of chat session `index`: its user, the assistant, and in every fourth session a second user. */
export function chatSenders(index: number, sessions: number): string[] {
  const senders = [`user-${pad(index)}`, 'assistant'];
  if (index % 4 === 3) senders.push(`user-${pad((index + 1) % sessions)}`);
  return senders;
}

/** Session index of message run `run` (MESSAGE_RUN consecutive messages). */
function runSession(run: number, sessions: number): number {
  return run % LIST_SESSION_EVERY === 0 || sessions === 1 ? 0 : 1 + (run % (sessions - 1));
}

export interface MessageLoadStats {
  messages: number;
  sessions: number;
  listSessionMessages: number;
  /** Total time, and the part of it spent generating text and token counts (no database). */
  totalMs: number;
  generateMs: number;
  /** Per vocabulary rank: messages containing the word (document frequency). */
  documentFrequency: Int32Array;
  /**
   * Per vocabulary rank: messages a search for the word matches, i.e. holding a word of the same
   * stem ("loving" matches "love", "loved", "lovely"): what the full-text index finds.
   */
  matchFrequency: Int32Array;
  meanChars: number;
  meanTokens: number;
}

/**
 * Loads `shape.messages` messages through `insertMessages` in transactions of 20,000 rows, in
 * runs of 100 consecutive messages per session (created_at increasing over the past 30 days).
 * Senders and chat sessions are created first, and senders made members of their sessions.
 * Token counts come from `corpus.tokenCount` (exact, memoised per word; see corpus.ts).
 */
export async function loadMessages(
  store: Pick<Store, 'transaction' | 'workspaces'>,
  shape: MessageShape,
  corpus: Corpus,
  newId: () => string,
): Promise<MessageLoadStats> {
  const started = performance.now();
  const { workspaceId, sessions } = shape;
  const span = 30 * 86_400_000;
  const base = Date.now() - span - 60_000;
  await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, new Date(base));
  await store.transaction(async (tx) => {
    for (let i = 0; i < sessions; i++) {
      await tx.sessions.createIfAbsent(workspaceId, { id: chatSessionId(i), metadata: {}, configuration: {} }, new Date(base));
    }
    const users = Array.from({ length: sessions }, (_, i) => `user-${pad(i)}`);
    for (let start = 0; start < users.length; start += INSERT_ROWS) {
      await tx.peers.ensure(workspaceId, [...users.slice(start, start + INSERT_ROWS), 'assistant'], new Date(base));
    }
    for (let i = 0; i < sessions; i++) {
      const members = chatSenders(i, sessions).map((peerId) => ({ peerId, configuration: {}, joinedAt: new Date(base), leftAt: null }));
      await tx.sessions.saveMemberships(workspaceId, chatSessionId(i), members);
    }
  });

  const documentFrequency = new Int32Array(corpus.words.length);
  // each word's search stem, as a number; a stem counted once per message
  const stems = new Map<string, number>();
  const stemOf = Int32Array.from(corpus.words, (word) => {
    const stem = queryTerms(word)[0]?.stem ?? word;
    let id = stems.get(stem);
    if (id === undefined) stems.set(stem, (id = stems.size));
    return id;
  });
  const stemFrequency = new Int32Array(stems.size);
  const stemSeen = new Int32Array(stems.size).fill(-1);
  let generateMs = 0;
  let chars = 0;
  let tokens = 0;
  let listSessionMessages = 0;
  for (let start = 0; start < shape.messages; start += MESSAGE_TRANSACTION_ROWS) {
    const end = Math.min(shape.messages, start + MESSAGE_TRANSACTION_ROWS);
    const mark = performance.now();
    const rows: MessageRecord[] = [];
    for (let i = start; i < end; i++) {
      const run = Math.floor(i / MESSAGE_RUN);
      const session = runSession(run, sessions);
      if (session === 0) listSessionMessages++;
      const senders = chatSenders(session, sessions);
      const content = corpus.message();
      for (const rank of corpus.lastWords()) {
        documentFrequency[rank]++;
        if (stemSeen[stemOf[rank]] !== i) {
          stemSeen[stemOf[rank]] = i;
          stemFrequency[stemOf[rank]]++;
        }
      }
      const tokenCount = corpus.tokenCount(content);
      chars += content.length;
      tokens += tokenCount;
      rows.push({
        id: newId(),
        workspaceId,
        sessionId: chatSessionId(session),
        peerId: senders[i % senders.length],
        content,
        metadata: {},
        tokenCount,
        createdAt: new Date(base + Math.floor((i / shape.messages) * span)),
      });
    }
    generateMs += performance.now() - mark;
    await store.transaction((tx) => tx.messages.insert(rows));
  }
  return {
    messages: shape.messages,
    sessions,
    listSessionMessages,
    totalMs: performance.now() - started,
    generateMs,
    documentFrequency,
    matchFrequency: Int32Array.from(stemOf, (id) => stemFrequency[id]),
    meanChars: chars / Math.max(1, shape.messages),
    meanTokens: tokens / Math.max(1, shape.messages),
  };
}
