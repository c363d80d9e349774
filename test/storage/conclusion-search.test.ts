import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { migrate } from '../../src/storage/migrate.js';
import { SqlStore } from '../../src/storage/sql/sql-store.js';
import { SqliteDriver } from '../../src/storage/sqlite/sqlite-driver.js';
import { rankConclusionsByText, type ConclusionTextSearch } from '../../src/domain/memory/conclusion-search.js';
import type { ConclusionRecord, Store } from '../../src/storage/store.js';
import { DIALECT, TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

let counter = 0;

/** Stores conclusions of one collection, the first the oldest. */
/** `peersExist`: the peers are there already (a store on an old schema, whose peer store reads columns it lacks). */
async function addConclusions(store: Store, workspaceId: string, observerId: string, observedId: string, contents: string[], peersExist = false) {
  const now = Date.now();
  await store.transaction(async (tx) => {
    await tx.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, new Date(now));
    if (!peersExist) await tx.peers.ensure(workspaceId, [...new Set([observerId, observedId])], new Date(now));
    const rows: ConclusionRecord[] = contents.map((content, i) => ({
      id: `c${++counter}-${uniqueId('c')}`.slice(0, 21),
      workspaceId,
      observerId,
      observedId,
      sessionId: null,
      content,
      level: 'explicit',
      sourceIds: null,
      timesDerived: 1,
      createdAt: new Date(now + i),
    }));
    await tx.memory.insertConclusions(rows);
  });
}

const search = async (store: Store, query: Omit<ConclusionTextSearch, 'filter' | 'limit' | 'query'> & Partial<ConclusionTextSearch> & { terms: string[] }) =>
  (await rankConclusionsByText(store, { filter: null, limit: 10, query: query.terms.join(' '), ...query })).map((c) => c.content);

describe('full-text search of a collection', () => {
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase(TEST_DATABASE_URL);
  });
  afterAll(async () => {
    await database?.driver.close();
  });

  it('finds the collection’s matches alone, best first, though others hold more', async () => {
    const ws = uniqueId();
    const other = uniqueId();
    await addConclusions(database.store, ws, 'alice', 'bob', ['bob paddles a kayak', 'bob kayak kayak', 'bob bakes bread']);
    // the same observer about another peer, another observer about bob, bob about himself, and
    // the same peer ids in another workspace: each with more matches than the collection
    for (const [w, observer, observed] of [
      [ws, 'alice', 'carol'],
      [ws, 'carol', 'bob'],
      [ws, 'bob', 'bob'],
      [other, 'alice', 'bob'],
    ]) {
      await addConclusions(database.store, w, observer, observed, Array.from({ length: 12 }, (_, i) => `kayak number ${i} of ${observer}`));
    }
    const collection = { workspaceId: ws, observerId: 'alice', observedId: 'bob' };
    // the word twice in as many words ranks first
    expect(await search(database.store, { ...collection, terms: ['kayak'] })).toEqual(['bob kayak kayak', 'bob paddles a kayak']);
    expect(await search(database.store, { ...collection, terms: ['kayak'], limit: 1 })).toEqual(['bob kayak kayak']);
    expect((await search(database.store, { ...collection, terms: ['bread', 'paddles'] })).sort()).toEqual(['bob bakes bread', 'bob paddles a kayak']);
    expect(await search(database.store, { ...collection, terms: ['number'] })).toEqual([]);
    expect(await search(database.store, { ...collection, observedId: 'nobody', terms: ['kayak'] })).toEqual([]);
    // another collection's own search still finds all of its matches
    expect(await search(database.store, { workspaceId: other, observerId: 'alice', observedId: 'bob', terms: ['kayak'], limit: 20 })).toHaveLength(12);
  });

  it('takes ids of any characters', async () => {
    const ws = `${uniqueId()} ✓ "x"`;
    for (const [observer, observed] of [
      ['a x', 'b'],
      ['a', 'x b'],
      ['ä"', 'OR'],
    ]) {
      await addConclusions(database.store, ws, observer, observed, [`walrus of ${observer} about ${observed}`]);
    }
    for (const [observer, observed] of [
      ['a x', 'b'],
      ['a', 'x b'],
      ['ä"', 'OR'],
    ]) {
      expect(await search(database.store, { workspaceId: ws, observerId: observer, observedId: observed, terms: ['walrus'] })).toEqual([`walrus of ${observer} about ${observed}`]);
    }
  });
});

describe.runIf(DIALECT === 'sqlite')('the SQLite conclusion index', () => {
  it('is rebuilt with the collections by migration 0031, kept in step by the triggers, and searched by them', async () => {
    const driver = new SqliteDriver(':memory:');
    try {
      await migrate(driver, { through: '0030_session_job_counters' });
      const store = SqlStore.over(driver);
      // rows of that schema written as its statements wrote them (today's store writes columns of later migrations)
      await store.workspaces.createIfAbsent({ id: 'ws', metadata: {}, configuration: {} }, new Date());
      for (const peer of ['alice', 'bob']) {
        await driver.run("INSERT INTO peers (workspace_id, id, metadata, configuration, created_at) VALUES ('ws', ?, '{}', '{}', 0)", [peer]);
      }
      const old = [
        ['alice', 'otter before'],
        ['alice', 'otter moved'],
        ['bob', 'otter of his own'],
      ];
      for (const [i, [observer, content]] of old.entries()) {
        await driver.run("INSERT INTO conclusions (id, workspace_id, observer_id, observed_id, content, created_at) VALUES (?, 'ws', ?, 'bob', ?, ?)", [`old-${i}`, observer, content, Date.now() + i]);
      }
      const steps = await migrate(driver);
      expect(steps.filter((step) => step.applied).map((step) => step.name)).toContain('0031_conclusion_search_scope');
      await addConclusions(store, 'ws', 'alice', 'bob', ['otter after', 'otter gone']);
      const alice = { workspaceId: 'ws', observerId: 'alice', observedId: 'bob' };
      expect((await search(store, { ...alice, terms: ['otter'] })).sort()).toEqual(['otter after', 'otter before', 'otter gone', 'otter moved']);
      await driver.run("UPDATE conclusions SET content = 'otter renamed' WHERE content = 'otter moved'");
      await driver.run("DELETE FROM conclusions WHERE content = 'otter gone'");
      expect((await search(store, { ...alice, terms: ['otter'] })).sort()).toEqual(['otter after', 'otter before', 'otter renamed']);
      expect(await search(store, { workspaceId: 'ws', observerId: 'bob', observedId: 'bob', terms: ['otter'] })).toEqual(['otter of his own']);
      // compares the index with the conclusions table; throws when they differ
      await expect(driver.run("INSERT INTO conclusions_fts (conclusions_fts, rank) VALUES ('integrity-check', 1)")).resolves.toBeDefined();

      // the match itself holds the collection: an entry indexed under bob's own collection is
      // not found by alice's search, though its row is alice's
      const row = await driver.get<{ pk: number; content: string; search_scope: string }>("SELECT pk, content, search_scope FROM conclusions WHERE content = 'otter after'");
      const bobs = (await driver.get<{ search_scope: string }>("SELECT search_scope FROM conclusions WHERE observer_id = 'bob'"))!.search_scope;
      await driver.run("INSERT INTO conclusions_fts (conclusions_fts, rowid, content, search_scope) VALUES ('delete', ?, ?, ?)", [row!.pk, row!.content, row!.search_scope]);
      await driver.run('INSERT INTO conclusions_fts (rowid, content, search_scope) VALUES (?, ?, ?)', [row!.pk, row!.content, bobs]);
      // (the words' index, which searches collections larger than READ_WHOLE_COLLECTION)
      const matched = await store.memory.conclusionMatches({ ...alice, term: { word: 'otter' }, filter: null, limit: 10 });
      expect((await store.memory.conclusionContents('ws', matched)).map((c) => c.content).sort()).toEqual(['otter before', 'otter renamed']);
    } finally {
      await driver.close();
    }
  });
});
