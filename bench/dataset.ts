/**
 * The benchmark's data: one workspace with many peers and sessions, bulk-loaded through the
 * store (not HTTP) in transactions of a few thousand rows, plus one peer that is a member of
 * a few dozen sessions so "sessions of a peer" returns a real page.
 */
import type { Store } from '../src/storage/store.js';

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
export type BulkStore = Pick<Store, 'transaction' | 'createWorkspaceIfAbsent' | 'ensurePeers' | 'createSessionIfAbsent' | 'saveMemberships'>;

export async function loadDataset(store: BulkStore, shape: DatasetShape): Promise<LoadStats> {
  const started = performance.now();
  // Rows get increasing created_at values, as if written over the past day.
  const base = Date.now() - 86_400_000;
  const { workspaceId } = shape;
  await store.createWorkspaceIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, new Date(base));

  let mark = performance.now();
  for (let start = 0; start < shape.peers; start += TRANSACTION_ROWS) {
    const end = Math.min(shape.peers, start + TRANSACTION_ROWS);
    await store.transaction(async (tx) => {
      for (let chunk = start; chunk < end; chunk += INSERT_ROWS) {
        const ids: string[] = [];
        for (let i = chunk; i < Math.min(end, chunk + INSERT_ROWS); i++) ids.push(peerId(i));
        await tx.ensurePeers(workspaceId, ids, new Date(base + chunk));
      }
    });
  }
  const peersMs = performance.now() - mark;

  mark = performance.now();
  const sessionBase = base + shape.peers;
  for (let start = 0; start < shape.sessions; start += TRANSACTION_ROWS) {
    const end = Math.min(shape.sessions, start + TRANSACTION_ROWS);
    await store.transaction(async (tx) => {
      // All issued at once: SQLite runs each as it is called, pg queues them on the one
      // transaction connection in call order, so ids and row order stay sequential.
      const created: Promise<unknown>[] = [];
      for (let i = start; i < end; i++) {
        created.push(tx.createSessionIfAbsent(workspaceId, { id: sessionId(i), metadata: {}, configuration: {} }, new Date(sessionBase + i)));
      }
      await Promise.all(created);
    });
  }
  const sessionsMs = performance.now() - mark;

  mark = performance.now();
  const joinedAt = new Date(sessionBase + shape.sessions);
  const memberOf = benchPeerSessionIndexes(shape);
  await store.transaction(async (tx) => {
    for (const index of memberOf) {
      await tx.saveMemberships(workspaceId, sessionId(index), [{ peerId: BENCH_PEER, configuration: {}, joinedAt, leftAt: null }]);
    }
  });
  // Other peers' memberships: session i mod S gets peer 1 + (104729 i mod (P - 1)); 104729 is
  // prime, so the pairs do not repeat, and differ from the pairs the add-peers case walks.
  for (let start = 0; start < shape.extraMemberships; start += TRANSACTION_ROWS) {
    const end = Math.min(shape.extraMemberships, start + TRANSACTION_ROWS);
    await store.transaction(async (tx) => {
      for (let i = start; i < end; i++) {
        const member = peerId(1 + ((i * 104_729) % (shape.peers - 1)));
        await tx.saveMemberships(workspaceId, sessionId(i % shape.sessions), [{ peerId: member, configuration: {}, joinedAt, leftAt: null }]);
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
