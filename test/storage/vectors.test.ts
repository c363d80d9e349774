/*
 * The vector index behind the store (storage/vector-index.ts), the same cases on each dialect:
 * sqlite-vec on SQLite, pgvector on PostgreSQL. Each test opens a database of its own, since the
 * vector size is fixed per store. Expected distances are computed here (1 - cosine similarity).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { VectorSizeError, type ConclusionLevel, type ConclusionRecord, type Store } from '../../src/storage/store.js';
import { clearVectors } from '../../src/cli/commands/reembed.js';
import { openFreshDatabase } from '../support/fresh-database.js';
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

function cosineDistance(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return 1 - dot / Math.sqrt(na * nb);
}

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
  const row = await driver.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`);
  return Number(row?.n);
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
