import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveConclusions, SEMANTIC_DUPLICATE_DISTANCE, cosineDistance, type ConclusionDraft } from '../../../src/domain/memory/deduplicate.js';
import { SqlStore } from '../../../src/storage/sql/sql-store.js';
import type { ConclusionRecord } from '../../../src/storage/store.js';
import { openFreshDatabase } from '../../support/fresh-database.js';
import { recordingExecutor } from '../../support/recording-executor.js';

/*
 * Storing a batch of new conclusions: written together (a statement for each hundred conclusions
 * and one for each hundred vectors), not two statements each, while a near duplicate later in the
 * batch still finds the one before it. Counted by the statements the store sends, on both
 * databases.
 */

const unit = (values: number[]) => {
  const norm = Math.hypot(...values);
  return values.map((v) => v / norm);
};
/** A direction of its own for each i (far from every other), and one a little off it. */
const axis = (i: number) => unit(Array.from({ length: 64 }, (_, j) => (j === i ? 1 : 0)));
const nearAxis = (i: number) => unit(Array.from({ length: 64 }, (_, j) => (j === i ? 1 : j === (i + 1) % 64 ? 0.05 : 0)));

describe('saveConclusions', () => {
  let database: Awaited<ReturnType<typeof openFreshDatabase>>;
  let serial = 0;
  beforeAll(async () => {
    database = await openFreshDatabase();
  });
  afterAll(() => database.close());

  async function workspace() {
    const { executor, issued } = recordingExecutor(database.driver);
    const store = new SqlStore(executor, database.driver);
    const ws = `save-${++serial}`;
    const now = new Date();
    await store.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, now);
    await store.peers.ensure(ws, ['alice'], now);
    issued.length = 0;
    const draft = (content: string, vector: number[] | undefined): ConclusionDraft => ({
      record: {
        id: `${ws}-${content.replace(/\W+/g, '-')}`,
        workspaceId: ws,
        observerId: 'alice',
        observedId: 'alice',
        sessionId: null,
        content,
        level: 'explicit',
        createdAt: now,
        validFrom: now,
        sourceIds: null,
        timesDerived: 1,
      } as ConclusionRecord,
      ...(vector === undefined ? {} : { vector }),
    });
    const writes = (table: string) => issued.filter((s) => new RegExp(`^\\s*INSERT INTO ${table}\\b`).test(s.sql)).length;
    return { store, ws, now, draft, writes };
  }

  it('the test vectors: near ones within the duplicate distance, others far', () => {
    expect(cosineDistance(axis(3), nearAxis(3))!).toBeLessThan(SEMANTIC_DUPLICATE_DISTANCE);
    expect(cosineDistance(axis(3), axis(4))!).toBeGreaterThan(SEMANTIC_DUPLICATE_DISTANCE);
    expect(cosineDistance([0, 0], [1, 0])).toBeUndefined();
  });

  it('writes 40 new conclusions and their vectors in one statement each, with semantic deduplication on', async () => {
    const { store, ws, now, draft, writes } = await workspace();
    const drafts = Array.from({ length: 40 }, (_, i) => draft(`fact number ${i}`, axis(i)));
    const saved = await saveConclusions(store, drafts, { semantic: true, now });
    expect(saved.map((s) => s.outcome)).toEqual(drafts.map(() => 'created'));
    expect(writes('conclusions')).toBe(1);
    expect(writes('conclusion_vectors')).toBe(1);
    // all stored, each with its vector, in the batch's order
    const listed = await store.memory.listConclusions(ws, { filter: null, page: 1, size: 100, reverse: true });
    expect(listed.items.map((c) => c.content)).toEqual(drafts.map((d) => d.record.content));
    for (const i of [0, 17, 39]) {
      const [nearest] = await store.vectors.nearestConclusions({ workspaceId: ws, observerId: 'alice', observedId: 'alice', vector: axis(i), k: 1 });
      expect(nearest.conclusionId).toBe(drafts[i].record.id);
    }
  });

  it('a near duplicate later in the batch merges with the new one before it: a richer text replaces it, a poorer one reinforces it', async () => {
    const { store, ws, now, draft } = await workspace();
    const saved = await saveConclusions(
      store,
      [
        draft('alice likes tea', axis(1)),
        draft('alice keeps bees', axis(2)),
        draft('alice likes green tea from Japan', nearAxis(1)),
        draft('alice bees', nearAxis(2)),
        draft('alice rows boats', axis(5)),
      ],
      { semantic: true, now },
    );
    expect(saved.map((s) => s.outcome)).toEqual(['created', 'created', 'replaced', 'reinforced', 'created']);
    expect(saved[3].record.id).toBe(saved[1].record.id);
    expect(saved[3].record.timesDerived).toBe(2);
    expect(saved[2].record.timesDerived).toBe(2);
    const live = await store.memory.listConclusions(ws, { filter: null, page: 1, size: 100, reverse: true });
    expect(live.items.map((c) => [c.content, c.timesDerived])).toEqual([
      ['alice keeps bees', 2],
      ['alice likes green tea from Japan', 2],
      ['alice rows boats', 1],
    ]);
    // the replaced one's vector went with it: the nearest to its direction is the one that replaced it
    const [nearest] = await store.vectors.nearestConclusions({ workspaceId: ws, observerId: 'alice', observedId: 'alice', vector: axis(1), k: 1 });
    expect(nearest.conclusionId).toBe(saved[2].record.id);
  });

  it('without semantic deduplication near duplicates are stored side by side, in one statement', async () => {
    const { store, now, draft, writes } = await workspace();
    const saved = await saveConclusions(store, [draft('alice likes tea', axis(1)), draft('alice likes green tea from Japan', nearAxis(1)), draft('no vector here', undefined)], { semantic: false, now });
    expect(saved.map((s) => s.outcome)).toEqual(['created', 'created', 'created']);
    expect(writes('conclusions')).toBe(1);
    expect(writes('conclusion_vectors')).toBe(1);
  });
});
