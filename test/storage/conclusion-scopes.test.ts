import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlExecutor } from '../../src/storage/sql/driver.js';
import { SqlMemoryStore } from '../../src/storage/sql/memory-store.js';
import type { ConclusionRecord, ConclusionScope, FilterNode } from '../../src/storage/store.js';
import { openFreshDatabase } from '../support/fresh-database.js';
import { planLines, recordingExecutor, type IssuedStatement } from '../support/recording-executor.js';
import { DIALECT } from '../support/test-app.js';

/*
 * Conclusions narrowed by session, by observed peer or by ids, newest first (migration 0032):
 * a session's context with `limit_to_session` and a representation of a session or of an
 * allowlist of sessions read the collection's newest conclusions of those sessions; lists are
 * filtered by session, observed peer or ids. Each walked the collection's or the workspace's
 * whole index checking every row. Now each reads through an index in order (one per session
 * for a short allowlist, merged), and the answers are checked against the fixture.
 */

const SESSIONS = 20;
const PER_PAIR = 2_000;
const session = (k: number) => `s${String(k).padStart(2, '0')}`;
const text = (value: string) => ({ type: 'text', value }) as const;
const equal = (column: string, value: string): FilterNode => ({ kind: 'compare', column, op: '=', value: text(value) });

describe(`conclusions of sessions, observed peers and ids (${DIALECT})`, () => {
  let database: Awaited<ReturnType<typeof openFreshDatabase>>;
  let issued: IssuedStatement[] = [];
  let spy: SqlExecutor;
  /** Every live conclusion of workspace w, newest first. */
  let live: ConclusionRecord[] = [];

  beforeAll(async () => {
    database = await openFreshDatabase();
    const { store, driver } = database;
    const now = new Date(Date.UTC(2026, 0, 1));
    const at = (i: number) => new Date(now.getTime() + i * 1000);
    const rows: ConclusionRecord[] = [];
    const record = (i: number, observerId: string, observedId: string, sessionId: string | null, extra: Partial<ConclusionRecord> = {}): ConclusionRecord => ({
      id: `c${i}`,
      workspaceId: 'w',
      observerId,
      observedId,
      sessionId,
      content: `fact ${i}`,
      level: 'explicit',
      sourceIds: null,
      timesDerived: 1,
      createdAt: at(i),
      ...extra,
    });
    for (let i = 0; i < PER_PAIR; i++) {
      // alice's about bob a session after another; bob's about alice spread over all of them
      rows.push(record(2 * i, 'alice', 'bob', session(Math.floor(i / (PER_PAIR / SESSIONS)))));
      rows.push(record(2 * i + 1, 'bob', 'alice', session(i % SESSIONS)));
    }
    for (let i = 0; i < 100; i++) rows.push(record(2 * PER_PAIR + i, 'alice', 'carol', null));
    // the newest of alice's: a deduction stored in s03 from s03 and s07, and a deleted one in s03
    rows.push(record(9_000, 'alice', 'bob', session(3), { level: 'deductive', sourceIds: ['c6', 'c1500'], sourceSessionIds: [session(3), session(7)] }));
    rows.push(record(9_001, 'alice', 'bob', session(3)));
    await store.workspaces.createIfAbsent({ id: 'w', metadata: {}, configuration: {} }, now);
    await store.workspaces.createIfAbsent({ id: 'other', metadata: {}, configuration: {} }, now);
    await store.transaction(async (tx) => {
      for (const ws of ['w', 'other']) {
        await tx.peers.ensure(ws, ['alice', 'bob', 'carol'], now);
        for (let k = 0; k < SESSIONS; k++) await tx.sessions.createIfAbsent(ws, { id: session(k), metadata: {}, configuration: {} }, now);
      }
      await tx.memory.insertConclusions(rows);
      // the same ids' peers and sessions in another workspace
      await tx.memory.insertConclusions(rows.slice(0, 50).map((row) => ({ ...row, id: `o${row.id}`, workspaceId: 'other' })));
    });
    await driver.run("UPDATE conclusions SET deleted_at = created_at WHERE id = 'c9001'");
    live = rows.filter((row) => row.id !== 'c9001').sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    // PostgreSQL plans from statistics: give it the ones autovacuum would have gathered
    if (DIALECT === 'postgres') await driver.run('ANALYZE');
    ({ executor: spy, issued } = recordingExecutor(driver));
  });
  afterAll(() => database.close());

  /** The plans of the statements `read` issued, each as one text. */
  async function plansOf(read: () => Promise<unknown>): Promise<string[]> {
    issued.length = 0;
    await read();
    const plans: string[] = [];
    for (const statement of issued) plans.push((await planLines(database.driver, statement)).join('\n'));
    return plans;
  }

  /** The plan reads conclusions through `index` alone (`times` reads of it), in its order. */
  function expectOrderedBy(plan: string, index: string, times = 1): void {
    if (DIALECT === 'postgres') {
      const indexes = [...plan.matchAll(/(?:Index Scan(?: Backward)? using|Index Only Scan(?: Backward)? using|Bitmap Index Scan on) (\w+)/g)].map((m) => m[1]);
      // the merged allowlist reads the rows it picked by pk
      expect(indexes.filter((name) => name !== 'conclusions_pkey' || times === 1)).toEqual(Array(times).fill(index));
      expect(plan).not.toMatch(/Seq Scan on conclusions\b/);
      if (times === 1) expect(plan).not.toMatch(/\bSort\b/);
    } else {
      const reads = plan.split('\n').filter((line) => /^(SCAN|SEARCH) c\b/.test(line));
      expect(reads.filter((line) => line.startsWith(`SEARCH c USING INDEX ${index} `))).toHaveLength(times);
      // the merged allowlist reads the rows it picked by pk
      expect(reads.filter((line) => !line.startsWith(`SEARCH c USING INDEX ${index} `)).every((line) => /USING INTEGER PRIMARY KEY/.test(line))).toBe(true);
      if (times === 1) expect(plan).not.toMatch(/TEMP B-TREE/);
    }
  }

  const alice: ConclusionScope = { workspaceId: 'w', observerId: 'alice', observedId: 'bob' };
  /** The newest `n` live conclusions of alice's about bob an allowlist shows. */
  const newestShown = (allowed: string[], n: number) =>
    live
      .filter((c) => c.observerId === 'alice' && c.observedId === 'bob' && allowed.includes(c.sessionId!) && (c.sourceSessionIds ?? []).every((s) => allowed.includes(s)))
      .slice(0, n)
      .map((c) => c.id);

  it('a collection\'s newest of one session: through the collection\'s index of that session', async () => {
    const memory = new SqlMemoryStore(spy);
    const found = await memory.recentConclusions({ ...alice, sessionIds: [session(3)] }, 5);
    // the deduction draws on s07 too, and the newest is deleted
    expect(found.map((c) => c.id)).toEqual(newestShown([session(3)], 5));
    expect(found.map((c) => c.id)).toEqual(['c798', 'c796', 'c794', 'c792', 'c790']);
    const plans = await plansOf(() => memory.recentConclusions({ ...alice, sessionIds: [session(3)] }, 5));
    expect(plans).toHaveLength(1);
    expectOrderedBy(plans[0], 'conclusions_pair_session_created');
  });

  it('a collection\'s newest of a short allowlist: each session through that index, merged; a long one still answers', async () => {
    const memory = new SqlMemoryStore(spy);
    for (const allowed of [[session(3), session(7)], [session(7), session(3), session(3)], [session(3), session(5), session(12)], [session(0), session(19)]]) {
      const found = await memory.recentConclusions({ ...alice, sessionIds: allowed }, 4);
      expect(found.map((c) => c.id), allowed.join()).toEqual(newestShown(allowed, 4));
    }
    expect((await memory.recentConclusions({ ...alice, sessionIds: [session(3), session(7)] }, 2)).map((c) => c.id)).toEqual(['c9000', 'c1598']);
    const plans = await plansOf(() => memory.recentConclusions({ ...alice, sessionIds: [session(3), session(5), session(12)] }, 4));
    expect(plans).toHaveLength(1);
    expectOrderedBy(plans[0], 'conclusions_pair_session_created', 3);
    // more sessions than are merged: one read of the collection, the same answer
    const many = Array.from({ length: 17 }, (_, k) => session(k + 1));
    expect((await memory.recentConclusions({ ...alice, sessionIds: many }, 6)).map((c) => c.id)).toEqual(newestShown(many, 6));
    expect((await memory.recentConclusions({ ...alice, sessionIds: [] }, 6)).map((c) => c.id)).toEqual([]);
    // a long list of older sessions (the walk's worst case), and one without s07, where the
    // deduction drawn from s03 and s07 is not shown
    const older = Array.from({ length: 17 }, (_, k) => session(k)).filter((id) => id !== session(7));
    for (const allowed of [older, [...older.slice(0, 5), session(7), ...older.slice(5)], [...many, 'no-such-session']]) {
      expect((await memory.recentConclusions({ ...alice, sessionIds: allowed }, 7)).map((c) => c.id), allowed.join()).toEqual(newestShown(allowed, 7));
    }
  });

  it('lists filtered by session, by observed peer, by a collection\'s session: pages in the order of their index', async () => {
    const memory = new SqlMemoryStore(spy);
    const cases: [FilterNode, (c: ConclusionRecord) => boolean, string][] = [
      [equal('session_id', session(3)), (c) => c.sessionId === session(3), 'conclusions_session'],
      [equal('observed_id', 'carol'), (c) => c.observedId === 'carol', 'conclusions_observed'],
      [
        { kind: 'and', items: [equal('observer_id', 'alice'), equal('observed_id', 'bob'), equal('session_id', session(3))] },
        (c) => c.observerId === 'alice' && c.observedId === 'bob' && c.sessionId === session(3),
        'conclusions_pair_session_created',
      ],
    ];
    for (const [filter, keep, index] of cases) {
      const expected = live.filter(keep);
      const query = { filter, page: 2, size: 10, reverse: false };
      const page = await memory.listConclusions('w', query);
      expect(page.items.map((c) => c.id), index).toEqual(expected.slice(10, 20).map((c) => c.id));
      expect(page.total, index).toBe(expected.length);
      const oldest = await memory.listConclusions('w', { ...query, page: 1, reverse: true });
      expect(oldest.items.map((c) => c.id), index).toEqual([...expected].reverse().slice(0, 10).map((c) => c.id));
      const [pageRead] = await plansOf(() => memory.listConclusions('w', query));
      expectOrderedBy(pageRead, index);
    }
  });

  it('lists filtered by an observer or an observed peer alone: totals from the kept counts, deleted ones left out', async () => {
    const memory = new SqlMemoryStore(spy);
    const cases: [FilterNode, (c: ConclusionRecord) => boolean][] = [
      // alice's about bob and about carol, one of them deleted
      [equal('observer_id', 'alice'), (c) => c.observerId === 'alice'],
      [equal('observer', 'bob'), (c) => c.observerId === 'bob'],
      [equal('observed_id', 'bob'), (c) => c.observedId === 'bob'],
      [{ kind: 'and', items: [equal('observed', 'alice')] }, (c) => c.observedId === 'alice'],
      [equal('observer_id', 'carol'), (c) => c.observerId === 'carol'],
    ];
    for (const [filter, keep] of cases) {
      const expected = live.filter(keep);
      const label = JSON.stringify(filter);
      issued.length = 0;
      const page = await memory.listConclusions('w', { filter, page: 3, size: 7, reverse: false });
      expect(page.items.map((c) => c.id), label).toEqual(expected.slice(14, 21).map((c) => c.id));
      expect(page.total, label).toBe(expected.length);
      // the total is read from conclusion_counts, not counted among the conclusions
      expect(issued.map((statement) => statement.sql).filter((sql) => /COUNT\(/i.test(sql)), label).toEqual([]);
      expect(issued.some((statement) => /FROM conclusion_counts/.test(statement.sql)), label).toBe(true);
    }
    // an observer named twice (no match), or beside another key: counted among the matches
    const counted: [FilterNode, (c: ConclusionRecord) => boolean][] = [
      [{ kind: 'and', items: [equal('observer_id', 'alice'), equal('observer', 'bob')] }, () => false],
      [{ kind: 'and', items: [equal('observer_id', 'alice'), equal('session_id', session(3))] }, (c) => c.observerId === 'alice' && c.sessionId === session(3)],
    ];
    for (const [filter, keep] of counted) {
      const expected = live.filter(keep);
      const page = await memory.listConclusions('w', { filter, page: 2, size: 5, reverse: false });
      expect(page.total).toBe(expected.length);
      expect(page.items.map((c) => c.id)).toEqual(expected.slice(5, 10).map((c) => c.id));
    }
  });

  it('a list filtered by ids: each id through the unique index, the rest of the filter applied, newest first', async () => {
    const memory = new SqlMemoryStore(spy);
    // c9001 is deleted, oc2 is another workspace's, c404404 does not exist, c2 is named twice
    const ids = ['c2', 'c9001', 'c4050', 'c1', 'oc2', 'c404404', 'c3999', 'c9000', 'c2'];
    const listed = { kind: 'in', column: 'id', values: ids.map(text), orNull: false } as const;
    const byAlice: FilterNode = { kind: 'and', items: [equal('observer', 'alice'), listed] };
    const one: FilterNode = equal('id', 'c4050');
    for (const [filter, expected] of [
      [listed, ['c9000', 'c4050', 'c3999', 'c2', 'c1']],
      [byAlice, ['c9000', 'c4050', 'c2']],
      [one, ['c4050']],
    ] as const) {
      const all = await memory.listConclusions('w', { filter, page: 1, size: 10, reverse: false });
      expect(all.items.map((c) => c.id)).toEqual(expected);
      expect(all.total).toBe(expected.length);
      const second = await memory.listConclusions('w', { filter, page: 2, size: 2, reverse: true });
      expect(second.items.map((c) => c.id)).toEqual([...expected].reverse().slice(2, 4));
      expect(second.total).toBe(expected.length);
      for (const plan of await plansOf(() => memory.listConclusions('w', { filter, page: 2, size: 2, reverse: false }))) {
        if (DIALECT === 'postgres') {
          expect([...plan.matchAll(/(?:Index Scan using|Index Only Scan using|Bitmap Index Scan on) (\w+)/g)].map((m) => m[1])).toEqual(['conclusions_id_key']);
          expect(plan).not.toMatch(/Seq Scan on conclusions\b/);
        } else {
          expect(plan.split('\n').filter((line) => /^(SCAN|SEARCH) c\b/.test(line))).toEqual(['SEARCH c USING INDEX sqlite_autoindex_conclusions_1 (id=?)']);
        }
      }
    }
  });
});
