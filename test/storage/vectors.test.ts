/*
 * The vector index behind the store (storage/vector-index.ts), the same cases on each dialect:
 * sqlite-vec on SQLite, pgvector on PostgreSQL. Each test opens a database of its own, since the
 * vector size is fixed per store. Expected distances are computed here (1 - cosine similarity).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { VectorSizeError, type ConclusionLevel, type ConclusionRecord, type Store } from '../../src/storage/store.js';
import { clearVectors } from '../../src/cli/commands/reembed.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { openDatabase } from '../../src/runtime/database.js';
import type { SqlExecutor } from '../../src/storage/sql/driver.js';
import { DELETE_CHUNK_SIGNS, DELETE_MESSAGE_CHUNKS, PARTITION_SEARCHES, signBits, signCandidates } from '../../src/storage/sqlite/sqlite-vector-index.js';
import { MEMBER_SESSIONS_LISTED, PostgresVectorIndex } from '../../src/storage/postgres/postgres-vector-index.js';
import { openFreshDatabase } from '../support/fresh-database.js';
import { cosineDistance } from '../support/cosine.js';
import { recordingExecutor } from '../support/recording-executor.js';
import { DIALECT, uniqueId } from '../support/test-app.js';

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (opened.length > 0) await opened.pop()!.close();
});

async function freshStore(): Promise<Store> {
  const database = await openFreshDatabase();
  opened.push(database);
  return database.store;
}

const NOW = new Date('2025-01-02T03:04:05.000Z');

/** A unit vector at `degrees` in the plane of the first two axes (size `n`). */
function angle(degrees: number, n = 4): number[] {
  const v = new Array<number>(n).fill(0);
  v[0] = Math.cos((degrees * Math.PI) / 180);
  v[1] = Math.sin((degrees * Math.PI) / 180);
  return v;
}

async function workspace(store: Store, peers = ['alice', 'bob', 'carol'], sessions = ['s1', 's2']): Promise<string> {
  const ws = uniqueId('vec');
  await store.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, NOW);
  await store.peers.ensure(ws, peers, NOW);
  for (const s of sessions) await store.sessions.createIfAbsent(ws, { id: s, metadata: {}, configuration: {} }, NOW);
  return ws;
}

let counter = 0;
async function conclusion(
  store: Store,
  ws: string,
  observer: string,
  observed: string,
  vector: number[],
  extra: { level?: ConclusionLevel; sessionId?: string | null } = {},
): Promise<string> {
  const record: ConclusionRecord = {
    id: `c${++counter}-${uniqueId('c')}`,
    workspaceId: ws,
    observerId: observer,
    observedId: observed,
    sessionId: extra.sessionId ?? null,
    content: `conclusion ${counter}`,
    level: extra.level ?? 'explicit',
    sourceIds: null,
    timesDerived: 1,
    createdAt: NOW,
  };
  await store.memory.insertConclusions([record]);
  await store.vectors.putConclusions([
    { conclusionId: record.id, workspaceId: ws, observerId: observer, observedId: observed, level: record.level, sessionId: record.sessionId, vector },
  ]);
  return record.id;
}

async function vectorRows(store: Store, table: 'conclusion_vectors' | 'message_vectors'): Promise<number> {
  const driver = (store as unknown as { db: { get<T>(sql: string): Promise<T | undefined> } }).db;
  const count = async (name: string) => Number((await driver.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${name}`))?.n);
  if (table === 'conclusion_vectors' || DIALECT === 'postgres') return count(table);
  // SQLite keeps a message chunk's floats and its signs in two tables: they must agree
  const [floats, signs] = [await count('message_embeddings'), await count('message_embedding_signs')];
  expect(signs).toBe(floats);
  return floats;
}

describe(`vector index (${DIALECT})`, () => {
  it('returns a collection\'s conclusions nearest first by cosine distance, at most k', async () => {
    const store = await freshStore();
    const ws = await workspace(store);
    const ids = new Map<number, string>();
    for (const degrees of [80, 10, 45, 170, 30]) ids.set(degrees, await conclusion(store, ws, 'alice', 'bob', angle(degrees)));
    // scale does not matter to cosine distance
    const query = angle(18).map((x) => x * 7);
    const found = await store.vectors.nearestConclusions({ workspaceId: ws, observerId: 'alice', observedId: 'bob', vector: query, k: 3 });
    expect(found.map((n) => n.conclusionId)).toEqual([ids.get(10), ids.get(30), ids.get(45)]);
    for (const [i, degrees] of [10, 30, 45].entries()) expect(found[i].distance).toBeCloseTo(cosineDistance(query, angle(degrees)), 5);
    const all = await store.vectors.nearestConclusions({ workspaceId: ws, observerId: 'alice', observedId: 'bob', vector: query, k: 10 });
    expect(all.map((n) => n.conclusionId)).toEqual([10, 30, 45, 80, 170].map((d) => ids.get(d)));
  });

  it('never returns another collection or another workspace', async () => {
    const store = await freshStore();
    const ws = await workspace(store);
    const other = await workspace(store);
    const mine = await conclusion(store, ws, 'alice', 'bob', angle(60));
    // closer to the query, but in other collections: (bob, alice), (alice, carol), (carol, bob), and another workspace
    await conclusion(store, ws, 'bob', 'alice', angle(0));
    await conclusion(store, ws, 'alice', 'carol', angle(0));
    await conclusion(store, ws, 'carol', 'bob', angle(0));
    await conclusion(store, other, 'alice', 'bob', angle(0));
    const found = await store.vectors.nearestConclusions({ workspaceId: ws, observerId: 'alice', observedId: 'bob', vector: angle(0), k: 10 });
    expect(found.map((n) => n.conclusionId)).toEqual([mine]);
    const none = await store.vectors.nearestConclusions({ workspaceId: uniqueId('nowhere'), observerId: 'alice', observedId: 'bob', vector: angle(0), k: 10 });
    expect(none).toEqual([]);
  });

  it('leaves out conclusions beyond maxDistance, of another level or session, and excluded ids', async () => {
    const store = await freshStore();
    const ws = await workspace(store);
    const near = await conclusion(store, ws, 'alice', 'bob', angle(5), { sessionId: 's1' });
    const mid = await conclusion(store, ws, 'alice', 'bob', angle(40), { sessionId: 's2' });
    const far = await conclusion(store, ws, 'alice', 'bob', angle(100));
    const deductive = await conclusion(store, ws, 'alice', 'bob', angle(1), { level: 'deductive' });
    const base = { workspaceId: ws, observerId: 'alice', observedId: 'bob', vector: angle(0), k: 10 };
    // cos 40° = 0.766: distance 0.234; cos 100° < 0: distance 1.17
    const within = await store.vectors.nearestConclusions({ ...base, maxDistance: 0.3 });
    expect(within.map((n) => n.conclusionId)).toEqual([deductive, near, mid]);
    expect((await store.vectors.nearestConclusions({ ...base, maxDistance: 0.01 })).map((n) => n.conclusionId)).toEqual([deductive, near]);
    expect((await store.vectors.nearestConclusions({ ...base, levels: ['explicit'] })).map((n) => n.conclusionId)).toEqual([near, mid, far]);
    expect((await store.vectors.nearestConclusions({ ...base, levels: ['deductive'] })).map((n) => n.conclusionId)).toEqual([deductive]);
    expect((await store.vectors.nearestConclusions({ ...base, levels: ['inductive', 'deductive'] })).map((n) => n.conclusionId)).toEqual([deductive]);
    expect(await store.vectors.nearestConclusions({ ...base, levels: [] })).toEqual([]);
    // the levels are applied during the search: k counts only the conclusions of those levels
    expect((await store.vectors.nearestConclusions({ ...base, k: 1, levels: ['explicit', 'inductive'] })).map((n) => n.conclusionId)).toEqual([near]);
    expect((await store.vectors.nearestConclusions({ ...base, sessionId: 's2' })).map((n) => n.conclusionId)).toEqual([mid]);
    expect((await store.vectors.nearestConclusions({ ...base, sessionId: null })).map((n) => n.conclusionId)).toEqual([deductive, far]);
    // excluded ids do not use up k
    const excluded = await store.vectors.nearestConclusions({ ...base, k: 2, excludeIds: [deductive, near] });
    expect(excluded.map((n) => n.conclusionId)).toEqual([mid, far]);
  });

  it('forgets the vectors of soft-deleted, replaced and purged conclusions', async () => {
    const store = await freshStore();
    const ws = await workspace(store);
    const a = await conclusion(store, ws, 'alice', 'bob', angle(0));
    const b = await conclusion(store, ws, 'alice', 'bob', angle(10));
    const c = await conclusion(store, ws, 'carol', 'carol', angle(20));
    const base = { workspaceId: ws, observerId: 'alice', observedId: 'bob', vector: angle(0), k: 10 };
    expect(await vectorRows(store, 'conclusion_vectors')).toBe(3);

    expect(await store.memory.softDeleteConclusion(ws, a, NOW)).toBe(true);
    expect((await store.vectors.nearestConclusions(base)).map((n) => n.conclusionId)).toEqual([b]);
    expect(await vectorRows(store, 'conclusion_vectors')).toBe(2);
    // a vector for a deleted conclusion is not stored
    await store.vectors.putConclusions([{ conclusionId: a, workspaceId: ws, observerId: 'alice', observedId: 'bob', level: 'explicit', sessionId: null, vector: angle(0) }]);
    expect(await vectorRows(store, 'conclusion_vectors')).toBe(2);

    const replacement: ConclusionRecord = { ...(await store.memory.findConclusion(ws, b))!, id: uniqueId('r'), content: 'richer' };
    const stored = await store.memory.replaceConclusion(ws, b, replacement, NOW);
    expect(stored?.timesDerived).toBe(2);
    expect(await store.vectors.nearestConclusions(base)).toEqual([]);
    expect(await vectorRows(store, 'conclusion_vectors')).toBe(1);

    // the peer's deletion cascades to its conclusions and their vectors
    expect(await store.workspaces.delete(ws)).toBe(true);
    expect(await vectorRows(store, 'conclusion_vectors')).toBe(0);
    expect(await store.vectors.nearestConclusions({ ...base, observerId: 'carol', observedId: 'carol' })).toEqual([]);
    expect(c).toBeTruthy();
  });

  it('fixes the vector size with the first vector and refuses another size after', async () => {
    const store = await freshStore();
    const ws = await workspace(store);
    expect(await store.vectors.dimensions()).toBeUndefined();
    await expect(store.vectors.checkDimensions(1536)).resolves.toBeUndefined();
    expect(await store.vectors.nearestConclusions({ workspaceId: ws, observerId: 'alice', observedId: 'bob', vector: angle(0), k: 5 })).toEqual([]);

    await conclusion(store, ws, 'alice', 'bob', angle(0, 6));
    expect(await store.vectors.dimensions()).toBe(6);
    await expect(store.vectors.checkDimensions(6)).resolves.toBeUndefined();

    const mismatch = await store.vectors.checkDimensions(1536).then(() => undefined, (error: unknown) => error);
    expect(mismatch).toBeInstanceOf(VectorSizeError);
    expect((mismatch as Error).message).toContain('EMBEDDING_VECTOR_DIMENSIONS is 1536');
    expect((mismatch as Error).message).toContain('6 dimensions');
    expect((mismatch as Error).message).toContain('engram reembed');

    const id = await store.memory.recentConclusions({ workspaceId: ws, observerId: 'alice', observedId: 'bob' }, 1);
    const wrongSize = store.vectors.putConclusions([
      { conclusionId: id[0].id, workspaceId: ws, observerId: 'alice', observedId: 'bob', level: 'explicit', sessionId: null, vector: angle(0, 5) },
    ]);
    await expect(wrongSize).rejects.toBeInstanceOf(VectorSizeError);
    expect(await vectorRows(store, 'conclusion_vectors')).toBe(1);
    await expect(store.vectors.putConclusions([
      { conclusionId: id[0].id, workspaceId: ws, observerId: 'alice', observedId: 'bob', level: 'explicit', sessionId: null, vector: [1, 2, Number.NaN, 0, 0, 0] },
    ])).rejects.toThrow(RangeError);
  });

  it('clear drops every vector and the size, so vectors of a new size can be stored', async () => {
    const store = await freshStore();
    const ws = await workspace(store);
    const first = await conclusion(store, ws, 'alice', 'bob', angle(0));
    await store.messages.insert([{ id: uniqueId('m'), workspaceId: ws, sessionId: 's1', peerId: 'alice', content: 'hi', metadata: {}, tokenCount: 1, createdAt: NOW }]);
    expect(await store.vectors.dimensions()).toBe(4);

    await store.transaction((tx) => tx.vectors.clear());
    expect(await store.vectors.dimensions()).toBeUndefined();
    await expect(store.vectors.checkDimensions(8)).resolves.toBeUndefined();
    expect(await store.vectors.nearestConclusions({ workspaceId: ws, observerId: 'alice', observedId: 'bob', vector: angle(0), k: 5 })).toEqual([]);
    expect(await store.vectors.nearestMessages({ workspaceId: ws, vector: angle(0), k: 5 })).toEqual([]);

    // the conclusion itself stays; it gets a vector of the new size
    await store.vectors.putConclusions([{ conclusionId: first, workspaceId: ws, observerId: 'alice', observedId: 'bob', level: 'explicit', sessionId: null, vector: angle(0, 8) }]);
    expect(await store.vectors.dimensions()).toBe(8);
    const found = await store.vectors.nearestConclusions({ workspaceId: ws, observerId: 'alice', observedId: 'bob', vector: angle(30, 8), k: 5 });
    expect(found.map((n) => n.conclusionId)).toEqual([first]);
    expect(found[0].distance).toBeCloseTo(cosineDistance(angle(30, 8), angle(0, 8)), 5);
  });

  it('searches message chunks by session, workspace and sender, each message once', async () => {
    const store = await freshStore();
    const ws = await workspace(store);
    const other = await workspace(store);
    const message = async (w: string, session: string, peer: string, chunks: number[][]) => {
      const id = uniqueId('m');
      await store.messages.insert([{ id, workspaceId: w, sessionId: session, peerId: peer, content: 'text', metadata: {}, tokenCount: 1, createdAt: NOW }]);
      await store.vectors.putMessageChunks(chunks.map((vector, chunk) => ({ messageId: id, chunk, workspaceId: w, sessionId: session, peerId: peer, vector })));
      return id;
    };
    const m1 = await message(ws, 's1', 'alice', [angle(50), angle(5)]);
    const m2 = await message(ws, 's1', 'bob', [angle(20)]);
    const m3 = await message(ws, 's2', 'alice', [angle(10)]);
    await message(other, 's1', 'alice', [angle(0)]);

    const session = await store.vectors.nearestMessages({ workspaceId: ws, sessionId: 's1', vector: angle(0), k: 10 });
    expect(session.map((n) => n.messageId)).toEqual([m1, m2]);
    expect(session[0].distance).toBeCloseTo(cosineDistance(angle(0), angle(5)), 5);
    const everywhere = await store.vectors.nearestMessages({ workspaceId: ws, vector: angle(0), k: 10 });
    expect(everywhere.map((n) => n.messageId)).toEqual([m1, m3, m2]);
    expect((await store.vectors.nearestMessages({ workspaceId: ws, vector: angle(0), k: 2 })).map((n) => n.messageId)).toEqual([m1, m3]);
    const sender = await store.vectors.nearestMessages({ workspaceId: ws, peerId: 'bob', vector: angle(0), k: 10 });
    expect(sender.map((n) => n.messageId)).toEqual([m2]);
    // a list of sessions is applied by the search itself: k counts only their messages
    expect((await store.vectors.nearestMessages({ workspaceId: ws, sessionIds: ['s2'], vector: angle(0), k: 1 })).map((n) => n.messageId)).toEqual([m3]);
    expect((await store.vectors.nearestMessages({ workspaceId: ws, sessionIds: ['s2', 's1'], vector: angle(0), k: 2 })).map((n) => n.messageId)).toEqual([m1, m3]);
    expect((await store.vectors.nearestMessages({ workspaceId: ws, sessionIds: ['s1', 'none'], peerId: 'bob', vector: angle(0), k: 5 })).map((n) => n.messageId)).toEqual([m2]);
    expect(await store.vectors.nearestMessages({ workspaceId: ws, sessionIds: [], vector: angle(0), k: 5 })).toEqual([]);
    // the sessions a peer is or was a member of: bob of s2 only, then of none (left s2, still counted)
    await store.sessions.saveMemberships(ws, 's2', [{ peerId: 'bob', configuration: {}, joinedAt: NOW, leftAt: null }]);
    expect((await store.vectors.nearestMessages({ workspaceId: ws, memberOf: 'bob', vector: angle(0), k: 1 })).map((n) => n.messageId)).toEqual([m3]);
    await store.sessions.markMembersLeft(ws, 's2', ['bob'], NOW);
    expect((await store.vectors.nearestMessages({ workspaceId: ws, memberOf: 'bob', vector: angle(0), k: 5 })).map((n) => n.messageId)).toEqual([m3]);
    expect(await store.vectors.nearestMessages({ workspaceId: ws, memberOf: 'carol', vector: angle(0), k: 5 })).toEqual([]);

    // replacing a chunk's vector keeps one row for it
    await store.vectors.putMessageChunks([{ messageId: m2, chunk: 0, workspaceId: ws, sessionId: 's1', peerId: 'bob', vector: angle(1) }]);
    expect((await store.vectors.nearestMessages({ workspaceId: ws, sessionId: 's1', vector: angle(0), k: 10 })).map((n) => n.messageId)).toEqual([m2, m1]);
    expect(await vectorRows(store, 'message_vectors')).toBe(5);

    // purging a session removes its messages' vectors
    expect(await store.sessions.deactivate(ws, 's1')).toBe(true);
    expect(await store.sessions.purgeInactive(ws, 's1')).toBe(true);
    expect(await vectorRows(store, 'message_vectors')).toBe(2);
    expect((await store.vectors.nearestMessages({ workspaceId: ws, vector: angle(0), k: 10 })).map((n) => n.messageId)).toEqual([m3]);
  });
});

describe.runIf(DIALECT === 'postgres')('the first vectors on PostgreSQL', () => {
  /** The table locks of the transaction storing a message's first vector, read inside it: `<table> <mode>`. */
  async function locksOfPut(store: Store, ws: string): Promise<string[]> {
    return store.transaction(async (tx) => {
      await tx.vectors.putMessageChunks([{ messageId: 'm1', chunk: 0, workspaceId: ws, sessionId: 's1', peerId: 'alice', vector: angle(0, 6) }]);
      const db = (tx as unknown as { db: { all<T>(sql: string): Promise<T[]> } }).db;
      const rows = await db.all<{ lock: string }>(
        "SELECT c.relname || ' ' || l.mode AS lock FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE l.pid = pg_backend_pid() AND c.relkind IN ('r', 'p') ORDER BY 1",
      );
      return rows.map((row) => row.lock);
    });
  }

  it('are given their size ahead (fixDimensions), so the transaction storing them locks no table against writers', async () => {
    // Typing the columns inside the put's transaction holds the vector tables in ACCESS EXCLUSIVE
    // mode to its commit while the put waits for the message rows: a purge that had deleted some
    // of them waited for the table (background-locks.test.ts, a deadlock).
    const strong = (locks: string[]) => locks.filter((lock) => !/ (AccessShareLock|RowShareLock|RowExclusiveLock)$/.test(lock));
    for (const ahead of [false, true]) {
      const store = await freshStore();
      const ws = await workspace(store);
      await store.messages.insert([{ id: 'm1', workspaceId: ws, sessionId: 's1', peerId: 'alice', content: 'text', metadata: {}, tokenCount: 1, createdAt: NOW }]);
      if (ahead) {
        await store.vectors.fixDimensions(6);
        expect(await store.vectors.dimensions()).toBe(6);
        await expect(store.vectors.fixDimensions(5)).rejects.toBeInstanceOf(VectorSizeError);
      }
      const locks = await locksOfPut(store, ws);
      if (ahead) expect(strong(locks)).toEqual([]);
      else expect(locks).toContain('message_vectors AccessExclusiveLock');
      expect(await vectorRows(store, 'message_vectors')).toBe(1);
    }
  });
});

describe(`vector writes in batches (${DIALECT})`, () => {
  it('store a batch larger than one statement takes, skip rows whose message or conclusion is gone, and keep the last of a row named twice', async () => {
    const store = await freshStore();
    const ws = await workspace(store);
    const ids = Array.from({ length: 250 }, (_, i) => `m${i}`);
    await store.messages.insert(ids.map((id) => ({ id, workspaceId: ws, sessionId: 's1', peerId: 'alice', content: 'text', metadata: {}, tokenCount: 1, createdAt: NOW })));
    // each message's chunk 0 points at its own angle; m7 is named again with another vector, last
    const rows = ids.map((id, i) => ({ messageId: id, chunk: 0, workspaceId: ws, sessionId: 's1', peerId: 'alice', vector: angle(i / 10) }));
    rows.push({ messageId: 'missing', chunk: 0, workspaceId: ws, sessionId: 's1', peerId: 'alice', vector: angle(3) });
    rows.push({ messageId: 'm7', chunk: 0, workspaceId: ws, sessionId: 's1', peerId: 'alice', vector: angle(90) });
    await store.transaction((tx) => tx.vectors.putMessageChunks(rows));
    expect(await vectorRows(store, 'message_vectors')).toBe(250);
    expect((await store.vectors.nearestMessages({ workspaceId: ws, vector: angle(90), k: 1 }))[0]).toMatchObject({ messageId: 'm7' });
    expect((await store.vectors.nearestMessages({ workspaceId: ws, vector: angle(24.9), k: 1 }))[0]).toMatchObject({ messageId: 'm249' });

    const records: ConclusionRecord[] = Array.from({ length: 150 }, (_, i) => ({
      id: `c${i}`, workspaceId: ws, observerId: 'bob', observedId: 'alice', sessionId: null, content: `fact ${i}`, level: 'explicit', sourceIds: null, timesDerived: 1, createdAt: NOW,
    }));
    await store.memory.insertConclusions(records);
    expect(await store.memory.softDeleteConclusion(ws, 'c3', NOW)).toBe(true);
    const vectors = records.map((r, i) => ({ conclusionId: r.id, workspaceId: ws, observerId: 'bob', observedId: 'alice', level: 'explicit' as const, sessionId: null, vector: angle(i / 10) }));
    vectors.push({ ...vectors[5], vector: angle(90) });
    await store.transaction((tx) => tx.vectors.putConclusions(vectors));
    // every live conclusion once, the deleted one not at all
    expect(await vectorRows(store, 'conclusion_vectors')).toBe(149);
    const nearest = await store.vectors.nearestConclusions({ workspaceId: ws, observerId: 'bob', observedId: 'alice', vector: angle(90), k: 2 });
    expect(nearest[0].conclusionId).toBe('c5');
    expect(nearest[0].distance).toBeCloseTo(0, 5);
  });
});

describe(`engram reembed (${DIALECT})`, () => {
  it('drops the vectors and the size, keeping conclusions; says what size there was', async () => {
    const store = await freshStore();
    expect(await clearVectors(store)).toBeUndefined();
    const ws = await workspace(store);
    const id = await conclusion(store, ws, 'alice', 'bob', angle(0, 6));
    expect(await clearVectors(store)).toBe(6);
    expect(await store.vectors.dimensions()).toBeUndefined();
    await expect(store.vectors.checkDimensions(1536)).resolves.toBeUndefined();
    expect((await store.memory.findConclusion(ws, id))?.id).toBe(id);
  });
});

describe.runIf(DIALECT === 'sqlite')('message vectors on SQLite: signs first, exact distances after', () => {
  /** A vector of `n` dimensions from a fixed seed, each coordinate in [-0.5, 0.5). */
  function seeded(seed: number, n: number): number[] {
    let s = seed;
    return Array.from({ length: n }, () => {
      s = (s * 1103515245 + 12345) & 0x7fffffff;
      return s / 0x7fffffff - 0.5;
    });
  }

  async function messageWithVector(store: Store, ws: string, session: string, peer: string, vector: number[]): Promise<string> {
    const id = uniqueId('m');
    await store.messages.insert([{ id, workspaceId: ws, sessionId: session, peerId: peer, content: 'text', metadata: {}, tokenCount: 1, createdAt: NOW }]);
    await store.vectors.putMessageChunks([{ messageId: id, chunk: 0, workspaceId: ws, sessionId: session, peerId: peer, vector }]);
    return id;
  }

  function driverOf(store: Store): SqlExecutor {
    return (store as unknown as { db: SqlExecutor }).db;
  }

  it('keep one sign bit per dimension, lowest first, as sqlite-vec quantizes', async () => {
    expect([...signBits([0.5, -1, 0, 2, 3, -0.1, 1e-9, -0, 7])]).toEqual([0b01011001, 0b1]);
    const store = await freshStore();
    for (const seed of [1, 2, 3]) {
      const vector = seeded(seed, 64);
      const row = await driverOf(store).get<{ bits: Buffer }>('SELECT vec_quantize_binary(?) AS bits', [Buffer.from(Float32Array.from(vector).buffer)]);
      expect(Buffer.compare(row!.bits, signBits(vector))).toBe(0);
    }
  });

  it('are exact in a partition of no more vectors than the candidates, approximate beyond', async () => {
    const store = await freshStore();
    const ws = await workspace(store);
    const n = 64;
    const query = seeded(999, n).map((x, i) => (i === 0 ? 4 : x * 0.01));
    // nearest of all by cosine (about 0.0001), but every sign but the first differs from the query's
    const opposite = query.map((x, i) => (i === 0 ? x : -x));
    const hidden = await messageWithVector(store, ws, 's1', 'alice', opposite);
    // near the query by both measures (about 0.0002), its signs agree
    const near = query.map((x, i) => (i === 0 ? x : x * 4));
    const close = await messageWithVector(store, ws, 's1', 'alice', near);
    const k = 5;
    const few = await store.vectors.nearestMessages({ workspaceId: ws, vector: query, k });
    expect(few.map((x) => x.messageId)).toEqual([hidden, close]);
    for (const found of few) expect(found.distance).toBeCloseTo(cosineDistance(query, found.messageId === hidden ? opposite : near), 6);

    // more vectors than the candidates of k: random ones, Hamming distance about n / 2 from the query
    const candidates = signCandidates(k * 4);
    for (let i = 0; i < candidates; i++) await messageWithVector(store, ws, i % 2 === 0 ? 's1' : 's2', 'bob', seeded(i + 1, n));
    const many = await store.vectors.nearestMessages({ workspaceId: ws, vector: query, k });
    expect(many).toHaveLength(k);
    // the one whose signs all differ is not among the candidates; what is returned is ordered by its exact distance
    expect(many.map((x) => x.messageId)).not.toContain(hidden);
    expect(many[0].messageId).toBe(close);
    for (let i = 1; i < many.length; i++) expect(many[i].distance).toBeGreaterThanOrEqual(many[i - 1].distance);
    // a session, or a sender, holding few enough is exact again
    expect((await store.vectors.nearestMessages({ workspaceId: ws, peerId: 'alice', vector: query, k })).map((x) => x.messageId)).toEqual([hidden, close]);
  });

  it('search a few sessions by their partitions, each keeping its own candidates; more by a scan of the workspace', async () => {
    const store = await freshStore();
    const extra = Array.from({ length: PARTITION_SEARCHES }, (_, i) => `x${i}`);
    const ws = await workspace(store, ['alice', 'bob'], ['s1', 's2', ...extra]);
    const n = 64;
    const query = seeded(999, n).map((x, i) => (i === 0 ? 4 : x * 0.01));
    const opposite = query.map((x, i) => (i === 0 ? x : -x));
    const hidden = await messageWithVector(store, ws, 's1', 'alice', opposite);
    const close = await messageWithVector(store, ws, 's1', 'alice', query.map((x, i) => (i === 0 ? x : x * 4)));
    // the two sessions hold more than one search's candidates between them, each of them fewer
    const k = 5;
    const each = signCandidates(k) / 2 + 20;
    for (let i = 0; i < 2 * each; i++) await messageWithVector(store, ws, i % 2 === 0 ? 's1' : 's2', 'bob', seeded(i + 1, n));
    await store.sessions.saveMemberships(ws, 's1', [{ peerId: 'alice', configuration: {}, joinedAt: NOW, leftAt: null }]);
    await store.sessions.saveMemberships(ws, 's2', [{ peerId: 'alice', configuration: {}, joinedAt: NOW, leftAt: null }]);

    const ids = (found: { messageId: string }[]) => found.map((x) => x.messageId);
    // exact: each session's partition is searched with its own candidates
    const listed = await store.vectors.nearestMessages({ workspaceId: ws, sessionIds: ['s1', 's2'], vector: query, k });
    expect(ids(listed).slice(0, 2)).toEqual([hidden, close]);
    expect(listed).toHaveLength(k);
    const member = await store.vectors.nearestMessages({ workspaceId: ws, memberOf: 'alice', vector: query, k });
    expect(ids(member).slice(0, 2)).toEqual([hidden, close]);
    // a list naming a session twice, or none that exists, or filtered by sender or membership too
    expect(ids(await store.vectors.nearestMessages({ workspaceId: ws, sessionIds: ['s2', 's1', 's1'], vector: query, k }))).toEqual(ids(listed));
    expect(await store.vectors.nearestMessages({ workspaceId: ws, sessionIds: ['nowhere'], vector: query, k })).toEqual([]);
    expect(ids(await store.vectors.nearestMessages({ workspaceId: ws, sessionIds: ['s1', 's2'], peerId: 'alice', vector: query, k }))).toEqual([hidden, close]);
    expect(await store.vectors.nearestMessages({ workspaceId: ws, sessionIds: ['s1', 's2'], memberOf: 'bob', vector: query, k })).toEqual([]);
    // more sessions than PARTITION_SEARCHES: the workspace's scan, whose candidates miss the vector with opposite signs
    const scanned = await store.vectors.nearestMessages({ workspaceId: ws, sessionIds: ['s1', 's2', ...extra], vector: query, k });
    expect(scanned).toHaveLength(k);
    expect(ids(scanned)).not.toContain(hidden);
    expect(ids(scanned)[0]).toBe(close);
  });

  it('delete a message chunks through the primary key and each sign by rowid, never scanning the vec0 table', async () => {
    const store = await freshStore();
    const ws = await workspace(store);
    await messageWithVector(store, ws, 's1', 'alice', angle(0));
    const plan = async (sql: string, params: unknown[]) => (await driverOf(store).all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params)).map((r) => r.detail).join('\n');
    expect(await plan(DELETE_MESSAGE_CHUNKS, [1, 1])).toMatch(/SEARCH message_embeddings USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)/);
    // sqlite-vec's plan string: 1 = full scan, 2 = point lookup by rowid, 3 = nearest neighbours
    expect(await plan(DELETE_CHUNK_SIGNS, [1])).toMatch(/VIRTUAL TABLE INDEX \d+:2/);
    // what a range on the vec0 table itself would do
    expect(await plan('DELETE FROM message_embedding_signs WHERE rowid BETWEEN ? AND ?', [1, 2])).toMatch(/VIRTUAL TABLE INDEX \d+:1/);
    const triggers = await driverOf(store).all<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name IN ('messages_vector_delete', 'message_embeddings_delete') ORDER BY name");
    expect(triggers.map((t) => t.sql)).toEqual([
      expect.stringContaining(DELETE_CHUNK_SIGNS.replace('?', 'OLD.rowid')),
      expect.stringContaining(DELETE_MESSAGE_CHUNKS.replaceAll('?', 'OLD.pk')),
    ]);
  });

  it('migration 0025 moves the chunks of the earlier layout (one vec0 table of floats) into the new tables', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'engram-vec-')), 'store.db');
    try {
      let database = await openDatabase(file);
      const ws = await workspace(database.store);
      const ids: string[] = [];
      const vectors = [angle(50), angle(5), angle(20), angle(10)];
      // the earlier layout, as 0009's code created it with the first vector
      const db = database.driver;
      await db.run("INSERT INTO store_settings (name, value) VALUES ('vector_dimensions', '4')");
      await db.run(`CREATE VIRTUAL TABLE message_vectors USING vec0(
        workspace_id TEXT PARTITION KEY, session_id TEXT PARTITION KEY, embedding float[4] distance_metric=cosine,
        peer_id TEXT, chunk_size=16)`);
      await db.run(`CREATE TRIGGER messages_vector_delete AFTER DELETE ON messages BEGIN
        DELETE FROM message_vectors WHERE rowid BETWEEN OLD.pk * 1024 AND OLD.pk * 1024 + 1023;
      END`);
      for (const [i, vector] of vectors.entries()) {
        const id = uniqueId('m');
        ids.push(id);
        const session = i < 3 ? 's1' : 's2';
        const peer = i === 2 ? 'bob' : 'alice';
        await database.store.messages.insert([{ id, workspaceId: ws, sessionId: session, peerId: peer, content: 'text', metadata: {}, tokenCount: 1, createdAt: NOW }]);
        const { pk } = (await db.get<{ pk: number }>('SELECT pk FROM messages WHERE id = ?', [id]))!;
        // the first message has two chunks
        for (const chunk of i === 0 ? [0, 1] : [0]) {
          await db.run('INSERT INTO message_vectors (rowid, workspace_id, session_id, peer_id, embedding) VALUES (?, ?, ?, ?, ?)', [
            BigInt(pk * 1024 + chunk),
            ws,
            session,
            peer,
            Buffer.from(Float32Array.from(chunk === 1 ? angle(1) : vector).buffer),
          ]);
        }
      }
      await db.run("DELETE FROM schema_migrations WHERE name = '0025_message_vector_signs'");
      await database.driver.close();

      database = await openDatabase(file);
      expect(database.migrations.filter((m) => m.applied).map((m) => m.name)).toEqual(['0025_message_vector_signs']);
      const left = await database.driver.get<{ n: number }>("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'message_vectors'");
      expect(left?.n).toBe(0);
      const store = database.store;
      expect(await vectorRows(store, 'message_vectors')).toBe(5);
      const found = await store.vectors.nearestMessages({ workspaceId: ws, vector: angle(0), k: 10 });
      // each message once, at its nearest chunk: the first one's second chunk (1 degree), then 5, 10 and 20 degrees
      expect(found.map((x) => x.messageId)).toEqual([ids[0], ids[1], ids[3], ids[2]]);
      expect(found[0].distance).toBeCloseTo(cosineDistance(angle(0), angle(1)), 5);
      expect((await store.vectors.nearestMessages({ workspaceId: ws, peerId: 'bob', vector: angle(0), k: 10 })).map((x) => x.messageId)).toEqual([ids[2]]);
      // the new trigger: a deleted session takes its chunks (floats and signs) with it
      expect(await store.sessions.deactivate(ws, 's1')).toBe(true);
      expect(await store.sessions.purgeInactive(ws, 's1')).toBe(true);
      expect(await vectorRows(store, 'message_vectors')).toBe(1);
      await database.driver.close();
    } finally {
      rmSync(dirname(file), { recursive: true, force: true });
    }
  });
});

describe.runIf(DIALECT === 'postgres')('message vectors on PostgreSQL: the sessions of a peer', () => {
  it('are passed to the search as a list, so a peer of few sessions is read through the session index, not the HNSW index', async () => {
    const database = await openFreshDatabase();
    opened.push(database);
    const { store, driver } = database;
    const ws = await workspace(store, ['alice', 'bob', 'carol'], []);
    // carol is a member of more sessions than are listed: hers stay a subquery
    const sessions = MEMBER_SESSIONS_LISTED + 100;
    const perSession = 5;
    await store.transaction(async (tx) => {
      for (let s = 0; s < sessions; s++) {
        await tx.sessions.createIfAbsent(ws, { id: `s${s}`, metadata: {}, configuration: {} }, NOW);
        await tx.sessions.saveMemberships(ws, `s${s}`, [{ peerId: 'carol', configuration: {}, joinedAt: NOW, leftAt: null }]);
      }
      const rows = Array.from({ length: sessions * perSession }, (_, i) => ({
        id: `m${i}`, workspaceId: ws, sessionId: `s${i % sessions}`, peerId: 'alice', content: 'text', metadata: {}, tokenCount: 1, createdAt: NOW,
      }));
      await tx.messages.insert(rows);
    });
    for (const s of ['s3', 's40', 's77']) await store.sessions.saveMemberships(ws, s, [{ peerId: 'bob', configuration: {}, joinedAt: NOW, leftAt: null }]);
    // the first vector fixes the size; the rest in one statement
    await store.vectors.putMessageChunks([{ messageId: 'm0', chunk: 0, workspaceId: ws, sessionId: 's0', peerId: 'alice', vector: angle(0, 8) }]);
    await driver.run(
      `INSERT INTO message_vectors (message_pk, chunk, workspace_id, session_id, peer_id, embedding)
       SELECT m.pk, 0, m.workspace_id, m.session_id, m.peer_id, ('[' || (m.pk % 7) || ',1,' || (m.pk % 5) || ',0,0,0,0,' || (m.pk % 3) || ']')::vector
       FROM messages m WHERE m.workspace_id = ? AND m.id <> 'm0'`,
      [ws],
    );
    // sealed into a part with its HNSW index (5,500 vectors, past the seal's 5,000)
    const sealed = await store.vectors.upkeep!();
    expect(sealed).toMatchObject({ kind: 'sealed', part: { rows: sessions * perSession } });
    await driver.run('ANALYZE');

    const { executor, issued } = recordingExecutor(driver);
    const index = new PostgresVectorIndex(executor);
    const searchOf = async (peer: string) => {
      issued.length = 0;
      const found = await index.nearestMessages({ workspaceId: ws, memberOf: peer, vector: angle(30, 8), k: 10 });
      const statement = issued.find(({ sql }) => sql.includes('message_vectors v'));
      expect(statement).toBeDefined();
      return { found, statement: statement! };
    };

    const bob = await searchOf('bob');
    expect(bob.found).toHaveLength(10);
    const inSessions = await driver.all<{ id: string }>("SELECT id FROM messages WHERE workspace_id = ? AND session_id IN ('s3', 's40', 's77')", [ws]);
    const allowed = new Set(inSessions.map((row) => row.id));
    for (const n of bob.found) expect(allowed.has(n.messageId)).toBe(true);
    const plan = (await driver.all<{ 'QUERY PLAN': string }>(`EXPLAIN ${bob.statement.sql}`, bob.statement.params)).map((row) => row['QUERY PLAN']).join('\n');
    expect(plan).toMatch(/message_vectors_\w+_session/);
    expect(plan).not.toMatch(/_hnsw/);

    // every session is carol's: her search is the workspace's nearest
    const carol = await searchOf('carol');
    expect(carol.statement.sql).toMatch(/session_peers/);
    const everywhere = await index.nearestMessages({ workspaceId: ws, vector: angle(30, 8), k: 10 });
    expect(carol.found.map((n) => n.distance)).toEqual(everywhere.map((n) => n.distance));
    expect(await index.nearestMessages({ workspaceId: ws, memberOf: 'nobody', vector: angle(30, 8), k: 10 })).toEqual([]);
  });
});

describe.runIf(DIALECT === 'postgres')('conclusion vectors on PostgreSQL: a large collection', () => {
  it('is searched exactly, its nearest joined to their conclusions by key, never by reading every conclusion of the store', async () => {
    const database = await openFreshDatabase();
    opened.push(database);
    const { store, driver } = database;
    const observed = Array.from({ length: 40 }, (_, i) => `p${i}`);
    const ws = await workspace(store, ['me', ...observed], []);
    // one collection of 3,000 among 11,000 conclusions
    const records: ConclusionRecord[] = [];
    for (let i = 0; i < 11_000; i++) {
      records.push({
        id: `c${i}`, workspaceId: ws, observerId: 'me', observedId: i < 3_000 ? 'p0' : observed[1 + (i % 39)], sessionId: null,
        content: `fact ${i}`, level: i % 2 === 0 ? 'explicit' : 'deductive', sourceIds: null, timesDerived: 1, createdAt: NOW,
      });
    }
    await store.memory.insertConclusions(records);
    await store.vectors.putConclusions([{ conclusionId: 'c0', workspaceId: ws, observerId: 'me', observedId: 'p0', level: 'explicit', sessionId: null, vector: angle(0, 8) }]);
    await driver.run(
      `INSERT INTO conclusion_vectors (conclusion_pk, workspace_id, observer_id, observed_id, level, session_id, embedding)
       SELECT c.pk, c.workspace_id, c.observer_id, c.observed_id, c.level, c.session_id, ('[' || (c.pk % 7) || ',1,' || (c.pk % 5) || ',0,0,0,0,' || (c.pk % 3) || ']')::vector
       FROM conclusions c WHERE c.workspace_id = ? AND c.id <> 'c0'`,
      [ws],
    );
    await driver.run('ANALYZE');

    const { executor, issued } = recordingExecutor(driver);
    const index = new PostgresVectorIndex(executor);
    const query = { workspaceId: ws, observerId: 'me', observedId: 'p0', vector: angle(30, 8), k: 10 };
    for (const extra of [{}, { levels: ['explicit'] as ConclusionLevel[] }, { excludeIds: ['c0', 'c7'] }]) {
      issued.length = 0;
      const found = await index.nearestConclusions({ ...query, ...extra });
      expect(found).toHaveLength(10);
      for (const n of found) {
        const row = Number(n.conclusionId.slice(1));
        expect(row).toBeLessThan(3_000);
        if ('levels' in extra) expect(row % 2).toBe(0);
        if ('excludeIds' in extra) expect(extra.excludeIds).not.toContain(n.conclusionId);
      }
      // exact, ties by pk (the vectors here repeat: many ties)
      const exact = await driver.all<{ id: string }>(
        `SELECT c.id FROM conclusion_vectors v JOIN conclusions c ON c.pk = v.conclusion_pk
         WHERE v.workspace_id = ? AND v.observer_id = 'me' AND v.observed_id = 'p0' AND v.level = ANY (?::text[]) AND NOT c.id = ANY (?::text[])
         ORDER BY (v.embedding <=> ?::vector) + 0, c.pk LIMIT 10`,
        [ws, 'levels' in extra ? extra.levels : ['explicit', 'deductive'], 'excludeIds' in extra ? extra.excludeIds : [], `[${angle(30, 8).join(',')}]`],
      );
      expect(found.map((n) => n.conclusionId)).toEqual(exact.map((row) => row.id));
      const search = issued.find(({ sql }) => sql.includes('conclusion_vectors v'));
      const plan = (await driver.all<{ 'QUERY PLAN': string }>(`EXPLAIN ${search!.sql}`, search!.params)).map((row) => row['QUERY PLAN']).join('\n');
      expect(plan).not.toMatch(/Seq Scan on conclusions c\b/);
      expect(plan).toMatch(/Index Scan using conclusions_pkey on conclusions c\b/);
    }
  });
});
