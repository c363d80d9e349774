import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlExecutor } from '../../src/storage/sql/driver.js';
import { DIALECTS } from '../../src/storage/sql/dialects.js';
import { SqlMemoryStore } from '../../src/storage/sql/memory-store.js';
import { SqlMessageStore } from '../../src/storage/sql/message-store.js';
import type { ConclusionRecord, FilterNode, MessageRecord } from '../../src/storage/store.js';
import { openFreshDatabase } from '../support/fresh-database.js';
import { DIALECT } from '../support/test-app.js';

/*
 * Reads of a collection that must not cost more as the collection grows. The reads of rows by id
 * after a vector search (the nearest conclusions of a collection; the
 * nearest messages of a filtered search) look each id up by its unique index. Without the join
 * order fixed, SQLite's planner walked the whole scope instead (every conclusion of the pair,
 * every message of the workspace, session or sender) and checked each against the ids: 2 ms
 * for 10 ids in a collection of 10,000 conclusions, seconds for a workspace of a million
 * messages. The answers are checked too: the ids of another scope are left out, the order of the
 * ids asked is kept. The most reinforced conclusions (a representation with a search query) come
 * in the order of an index instead of a sort of the whole collection.
 */

const PER_SCOPE = 1_500;

describe(`reads by id after a vector search (${DIALECT})`, () => {
  let database: Awaited<ReturnType<typeof openFreshDatabase>>;
  const issued: { sql: string; params: readonly unknown[] }[] = [];
  let spy: SqlExecutor;

  beforeAll(async () => {
    database = await openFreshDatabase();
    const { store, driver } = database;
    const now = new Date(Date.UTC(2026, 0, 1));
    await store.workspaces.createIfAbsent({ id: 'w', metadata: {}, configuration: {} }, now);
    await store.peers.ensure('w', ['alice', 'bob'], now);
    for (const session of ['s1', 's2']) await store.sessions.createIfAbsent('w', { id: session, metadata: {}, configuration: {} }, now);
    const at = (i: number) => new Date(now.getTime() + i * 1000);
    const conclusions: ConclusionRecord[] = [];
    const messages: MessageRecord[] = [];
    for (let i = 0; i < PER_SCOPE * 2; i++) {
      const [observer, observed] = i % 2 === 0 ? ['alice', 'bob'] : ['bob', 'alice'];
      conclusions.push({ id: `c${i}`, workspaceId: 'w', observerId: observer, observedId: observed, sessionId: null, content: `fact ${i}`, level: 'explicit', sourceIds: null, timesDerived: 1, createdAt: at(i) });
      messages.push({ id: `m${i}`, workspaceId: 'w', sessionId: i % 2 === 0 ? 's1' : 's2', peerId: observer, content: `message ${i}`, metadata: { n: i }, tokenCount: 2, createdAt: at(i) });
    }
    await store.transaction(async (tx) => {
      await tx.memory.insertConclusions(conclusions);
      await tx.messages.insert(messages);
    });
    // PostgreSQL plans from statistics: give it the ones autovacuum would have gathered
    if (DIALECT === 'postgres') await driver.run('ANALYZE');
    spy = {
      dialect: driver.dialect,
      all: (sql, params = []) => (issued.push({ sql, params }), driver.all(sql, params)),
      get: (sql, params = []) => (issued.push({ sql, params }), driver.get(sql, params)),
      run: (sql, params = []) => (issued.push({ sql, params }), driver.run(sql, params)),
    };
  });
  afterAll(() => database.close());

  /** The plan of the one statement `read` issued, as lines of text. */
  async function planOf(read: () => Promise<unknown>): Promise<string[]> {
    issued.length = 0;
    await read();
    expect(issued).toHaveLength(1);
    const [{ sql, params }] = issued;
    if (DIALECT === 'postgres') {
      const rows = await database.driver.all<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params);
      return rows.map((row) => row['QUERY PLAN']);
    }
    const rows = await database.driver.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params);
    return rows.map((row) => row.detail);
  }

  /** The plan reads `table` (alias `alias`) by its unique id index and in no other way. */
  function expectReadById(plan: string[], table: string, alias: string): void {
    const text = plan.join('\n');
    if (DIALECT === 'postgres') {
      // an index scan or a bitmap of the id index (PostgreSQL's choice by the table's size)
      const indexes = [...text.matchAll(/(?:Index Scan using|Index Only Scan using|Bitmap Index Scan on) (\w+)/g)].map((m) => m[1]);
      expect(indexes).toEqual([`${table}_id_key`]);
      expect(text).not.toMatch(new RegExp(`Seq Scan on ${table}\\b`));
    } else {
      const reads = plan.filter((line) => new RegExp(`^(SCAN|SEARCH) ${alias}\\b`).test(line));
      expect(reads).toEqual([`SEARCH ${alias} USING INDEX sqlite_autoindex_${table}_1 (id=?)`]);
    }
  }

  it('conclusions of a collection: each id through the unique index, the pair checked on the row', async () => {
    const memory = new SqlMemoryStore(spy);
    const scope = { workspaceId: 'w', observerId: 'alice', observedId: 'bob' };
    // c1 and c3 are bob's about alice, c99999 does not exist
    const ids = ['c40', 'c1', 'c2', 'c99999', 'c3', 'c2998'];
    const filter: FilterNode = { kind: 'compare', column: 'observer', op: '=', value: { type: 'text', value: 'alice' } };
    for (const f of [null, filter]) {
      const found = await memory.conclusionsByIds(scope, ids, f);
      expect(found.map((c) => c.id)).toEqual(['c40', 'c2', 'c2998']);
      expectReadById(await planOf(() => memory.conclusionsByIds(scope, ids, f)), 'conclusions', 'c');
    }
  });

  it('the most reinforced conclusions of a collection: read in the order of an index, not sorted', async () => {
    const memory = new SqlMemoryStore(spy);
    const scope = { workspaceId: 'w', observerId: 'alice', observedId: 'bob' };
    const found = await memory.mostDerivedConclusions(scope, 3, ['c2998']);
    // every conclusion was derived once: the newest first, c2998 left out
    expect(found.map((c) => c.id)).toEqual(['c2996', 'c2994', 'c2992']);
    const plan = await planOf(() => memory.mostDerivedConclusions(scope, 3, ['c2998']));
    const text = plan.join('\n');
    if (DIALECT === 'postgres') {
      expect(text).toMatch(/Index Scan Backward using conclusions_pair_derived on conclusions c\b/);
      expect(text).not.toMatch(/\bSort\b/);
    } else {
      expect(plan.filter((line) => /^(SCAN|SEARCH) c\b/.test(line))).toEqual(['SEARCH c USING INDEX conclusions_pair_derived (workspace_id=? AND observer_id=? AND observed_id=?)']);
      expect(text).not.toMatch(/TEMP B-TREE/);
    }
  });

  it('messages kept by a filtered vector search: each id through the unique index, in every scope', async () => {
    const messages = new SqlMessageStore(spy, DIALECTS[spy.dialect]);
    const ids = ['m7', 'm2', 'm4', 'm99999', 'm2999', 'm10'];
    const filter: FilterNode = { kind: 'compare', column: 'peer_id', op: '=', value: { type: 'text', value: 'alice' } };
    const cases: { scope: { sessionId?: string; peerId?: string }; filter: FilterNode | null; kept: string[] }[] = [
      { scope: {}, filter, kept: ['m2', 'm4', 'm10'] },
      { scope: { sessionId: 's2' }, filter: null, kept: ['m7', 'm2999'] },
      { scope: { peerId: 'alice' }, filter: null, kept: ['m2', 'm4', 'm10'] },
      { scope: { sessionId: 's1' }, filter: { kind: 'compare', column: 'peer_id', op: '=', value: { type: 'text', value: 'bob' } }, kept: [] },
    ];
    for (const { scope, filter: f, kept } of cases) {
      const search = { workspaceId: 'w', ...scope, filter: f };
      const found = await messages.filterIds(search, ids);
      expect([...found].sort()).toEqual([...kept].sort());
      expectReadById(await planOf(() => messages.filterIds(search, ids)), 'messages', 'm');
    }
  });
});
