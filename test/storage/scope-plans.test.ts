import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlExecutor } from '../../src/storage/sql/driver.js';
import { DIALECTS } from '../../src/storage/sql/dialects.js';
import { SqlMemoryStore } from '../../src/storage/sql/memory-store.js';
import { SqlMessageStore } from '../../src/storage/sql/message-store.js';
import { SqlReasoningStore } from '../../src/storage/sql/reasoning-store.js';
import { SqlSessionStore } from '../../src/storage/sql/session-store.js';
import { SqlV1Store } from '../../src/storage/sql/v1-store.js';
import type { ConclusionRecord, FilterNode, JsonObject, MessageRecord, SessionOrder } from '../../src/storage/store.js';
import { migrate } from '../../src/storage/migrate.js';
import { openFreshDatabase, openUnmigratedDriver } from '../support/fresh-database.js';
import { planLines, recordingExecutor, type IssuedStatement } from '../support/recording-executor.js';
import { DIALECT } from '../support/test-app.js';

/*
 * Reads of a scope that must not cost more as the scope grows. The reads of rows by id after a
 * vector search (the nearest conclusions of a collection; the nearest messages of a filtered
 * search) look each id up by its unique index. Without the join order fixed, SQLite's planner
 * walked the whole scope instead (every conclusion of the pair, every message of the workspace,
 * session or sender) and checked each against the ids: 2 ms for 10 ids in a collection of 10,000
 * conclusions, seconds for a workspace of a million messages. The answers are checked too: the
 * ids of another scope are left out, the order of the ids asked is kept. The most reinforced
 * conclusions (a representation with a search query) come in the order of an index instead of a
 * sort of the whole collection, and so do the pages of a peer's sessions (migration 0021: each
 * membership carries its session's creation time and pk), whose total is kept on the peer by
 * triggers (migration 0023). Exact repeats of a conclusion's text are looked up through an index
 * on the folded text (migration 0022). In v1, a user's sessions are read from its memberships
 * (they walked every session of the app), an app's users come in pk order through an index
 * (migration 0024; every page sorted all of them), and a user's metamessages through the user's
 * index (on PostgreSQL, a user holding most of the app's older ones walked the primary key). A session's messages in order, and a session's
 * or a sender's search, come through their own index even when they hold most of the workspace's
 * messages (PostgreSQL walked the primary key past the others' messages: session-messages.ts).
 */

const PER_SCOPE = 1_500;

/** Session i's id: the ids sort in the reverse of the creation order. */
const sessionId = (i: number) => `z-${String(PER_SCOPE - i).padStart(5, '0')}`;

describe(`reads of a scope (${DIALECT})`, () => {
  let database: Awaited<ReturnType<typeof openFreshDatabase>>;
  let issued: IssuedStatement[] = [];
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
      // alice is a member of every session, bob of every third; three sessions per creation time,
      // created in the order of their numbers; the ids sort otherwise (z-1499 first)
      for (let i = 0; i < PER_SCOPE; i++) {
        const id = sessionId(i);
        await tx.sessions.createIfAbsent('w', { id, metadata: { n: i }, configuration: {} }, at(Math.floor(i / 3)));
        const members = i % 3 === 0 ? ['alice', 'bob'] : ['alice'];
        await tx.sessions.saveMemberships('w', id, members.map((peerId) => ({ peerId, configuration: {}, joinedAt: now, leftAt: null })));
      }
    });
    // PostgreSQL plans from statistics: give it the ones autovacuum would have gathered
    if (DIALECT === 'postgres') await driver.run('ANALYZE');
    ({ executor: spy, issued } = recordingExecutor(driver));
  });
  afterAll(() => database.close());

  /** The plans of the statements `read` issued, each as lines of text. */
  async function plansOf(read: () => Promise<unknown>): Promise<string[][]> {
    issued.length = 0;
    await read();
    const plans: string[][] = [];
    for (const statement of issued) plans.push(await planLines(database.driver, statement));
    return plans;
  }

  /** The plan of the one statement `read` issued. */
  async function planOf(read: () => Promise<unknown>): Promise<string[]> {
    const plans = await plansOf(read);
    expect(plans).toHaveLength(1);
    return plans[0];
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

  it('a peer\'s sessions: a page read in order through the memberships\' index, the total kept on the peer', async () => {
    const sessions = new SqlSessionStore(spy, DIALECTS[spy.dialect]);
    const query = (page: number, reverse: boolean, order: SessionOrder = 'created-then-insertion') => ({ filter: null, page, size: 50, reverse, order });
    const numbers = (items: { metadata: JsonObject }[]) => items.map((session) => session.metadata.n);
    const range = (from: number, to: number) => Array.from({ length: Math.abs(to - from) + 1 }, (_, k) => (from <= to ? from + k : from - k));

    const second = await sessions.ofPeer('w', 'alice', query(2, false));
    expect(numbers(second.items)).toEqual(range(50, 99));
    expect(second.total).toBe(PER_SCOPE);
    expect(numbers((await sessions.ofPeer('w', 'alice', query(1, true))).items)).toEqual(range(PER_SCOPE - 1, PER_SCOPE - 50));
    const bob = await sessions.ofPeer('w', 'bob', query(1, false));
    expect(numbers(bob.items)).toEqual(range(0, 49).map((k) => 3 * k));
    expect(bob.total).toBe(PER_SCOPE / 3);
    // v2 orders by creation time alone: three sessions share each time, in no set order
    const v2 = numbers((await sessions.ofPeer('w', 'alice', query(3, false, 'created'))).items) as number[];
    expect(v2.map((n) => Math.floor(n / 3))).toEqual(range(100, 149).map((k) => Math.floor(k / 3)));
    // a filter still narrows (and is counted through the join)
    const filtered = await sessions.ofPeer('w', 'alice', { ...query(1, false), filter: { kind: 'compare', column: 'id', op: '=', value: { type: 'text', value: sessionId(7) } } });
    expect(numbers(filtered.items)).toEqual([7]);
    expect(filtered.total).toBe(1);

    const [page, count] = await plansOf(() => sessions.ofPeer('w', 'alice', query(2, false)));
    expect(count).toBeDefined();
    // the total is the peer's own row (its count kept by triggers), not a count of memberships
    expect(count.join('\n')).not.toMatch(/session_peers|sessions/);
    if (DIALECT === 'postgres') {
      expect(page.join('\n')).toMatch(/Index Scan using session_peers_peer_order on session_peers m\b/);
      expect(page.join('\n')).not.toMatch(/\bSort\b/);
      expect(count.join('\n')).toMatch(/(Index Scan using \w+|Bitmap Heap Scan) on peers\b/);
    } else {
      expect(page.filter((line) => /^(SCAN|SEARCH) m\b/.test(line))).toEqual(['SEARCH m USING INDEX session_peers_peer_order (workspace_id=? AND peer_id=?)']);
      expect(page.join('\n')).not.toMatch(/TEMP B-TREE/);
      expect(count).toEqual([expect.stringMatching(/^SEARCH peers USING INDEX \w+ \(workspace_id=\? AND id=\?\)$/)]);
    }
  });

  it('a peer\'s session count follows memberships added, upserted, moved, removed and cascaded', async () => {
    const { store, driver } = database;
    const counted = async () => {
      const rows = await driver.all<{ id: string; kept: number | string; actual: number | string }>(
        `SELECT p.id, p.session_count AS kept, (SELECT COUNT(*) FROM session_peers m WHERE m.workspace_id = p.workspace_id AND m.peer_id = p.id) AS actual
         FROM peers p WHERE p.workspace_id = 'w' ORDER BY p.id`,
      );
      return rows.map((row) => [row.id, Number(row.kept), Number(row.actual)]);
    };
    expect(await counted()).toEqual([
      ['alice', PER_SCOPE, PER_SCOPE],
      ['bob', PER_SCOPE / 3, PER_SCOPE / 3],
    ]);
    const member = (peerId: string) => ({ peerId, configuration: {}, joinedAt: new Date(), leftAt: null });
    await store.peers.ensure('w', ['carol'], new Date());
    await store.sessions.createIfAbsent('w', { id: 'extra', metadata: {}, configuration: {} }, new Date());
    await store.sessions.saveMemberships('w', 'extra', [member('carol'), member('bob')]);
    // saved again (an upsert): counted once
    await store.sessions.saveMemberships('w', 'extra', [member('carol')]);
    // moved to another peer past the API, and removed
    await driver.run(`UPDATE session_peers SET peer_id = 'alice' WHERE workspace_id = 'w' AND session_id = 'extra' AND peer_id = 'bob'`);
    await driver.run(`DELETE FROM session_peers WHERE workspace_id = 'w' AND session_id = ? AND peer_id = 'alice'`, [sessionId(1)]);
    expect(await counted()).toEqual([
      ['alice', PER_SCOPE, PER_SCOPE],
      ['bob', PER_SCOPE / 3, PER_SCOPE / 3],
      ['carol', 1, 1],
    ]);
    // a session deleted takes its memberships with it
    await driver.run(`DELETE FROM sessions WHERE workspace_id = 'w' AND id = 'extra'`);
    expect(await counted()).toEqual([
      ['alice', PER_SCOPE - 1, PER_SCOPE - 1],
      ['bob', PER_SCOPE / 3, PER_SCOPE / 3],
      ['carol', 0, 0],
    ]);
  });

  it('a collection\'s list: the page through the pair\'s indexes, not the one holding the text, and its total from the kept counts', async () => {
    const memory = new SqlMemoryStore(spy);
    const pair: FilterNode = {
      kind: 'and',
      items: [
        { kind: 'compare', column: 'observer_id', op: '=', value: { type: 'text', value: 'alice' } },
        { kind: 'compare', column: 'observed_id', op: '=', value: { type: 'text', value: 'bob' } },
      ],
    };
    const query = { filter: pair, page: 2, size: 50, reverse: false };
    // newest first
    const page = await memory.listConclusions('w', query);
    expect(page.total).toBe(PER_SCOPE);
    expect(page.items.map((c) => c.id)).toEqual(Array.from({ length: 50 }, (_, k) => `c${2998 - 2 * (50 + k)}`));
    const plans = await plansOf(() => memory.listConclusions('w', query));
    expect(plans).toHaveLength(2);
    const [pageRead, totalRead] = plans.map((plan) => plan.join('\n'));
    expect(pageRead).toMatch(/conclusions_pair_(created|derived)/);
    expect(pageRead).not.toMatch(/conclusions_content_key|TEMP B-TREE|\bSort\b/);
    // the collection's count rows (migration 0029), one per level: the conclusions are not read
    // (on PostgreSQL this test's few count rows are read by a scan, as they should be)
    expect(totalRead).toMatch(/conclusion_counts/);
    expect(totalRead).not.toMatch(/\bconclusions\b|conclusions_/);
  });

  it('exact repeats of a conclusion\'s text: the candidates through the index on the folded text, not the whole collection', async () => {
    const reasoning = new SqlReasoningStore(spy);
    const scope = { workspaceId: 'w', observerId: 'alice', observedId: 'bob', level: 'explicit', sessionId: null };
    // c41 is bob's about alice; "fact 99999" is no conclusion
    const asked = ['  FACT 40 ', 'fact 41', 'fact 99999', 'Fact 2998'];
    const found = await reasoning.liveConclusionsByContent(scope, asked);
    expect([...found].sort()).toEqual([
      ['fact 2998', 'c2998'],
      ['fact 40', 'c40'],
    ]);
    expect((await reasoning.liveConclusionsByContent({ ...scope, level: 'deductive' }, asked)).size).toBe(0);
    expect((await reasoning.liveConclusionsByContent({ ...scope, sessionId: 's1' }, asked)).size).toBe(0);
    const plan = (await planOf(() => reasoning.liveConclusionsByContent(scope, asked))).join('\n');
    if (DIALECT === 'postgres') {
      expect(plan).toMatch(/Index Scan using conclusions_content_key on conclusions\b|Bitmap Index Scan on conclusions_content_key\b/);
      expect(plan).not.toMatch(/conclusions_pair_created|Seq Scan on conclusions/);
    } else {
      expect(plan).toMatch(/^SEARCH conclusions USING INDEX conclusions_content_key \(workspace_id=\? AND level=\? AND observer_id=\? AND observed_id=\? AND session_id=\? AND <expr>=\?\)$/m);
    }
  });

  it('v1: an app\'s users in insertion order through an index, and a user\'s sessions from its memberships, not every session of the app', async () => {
    const { store } = database;
    const now = new Date(Date.UTC(2026, 0, 2));
    await store.workspaces.createIfAbsent({ id: 'app', metadata: {}, configuration: {} }, now);
    const users = Array.from({ length: PER_SCOPE }, (_, i) => `u${String(i).padStart(4, '0')}`);
    // the last 500 names first, then the 500 before them, ...: insertion order is not the names' order
    const inserted: string[] = [];
    for (let start = PER_SCOPE; start > 0; start -= 500) inserted.push(...users.slice(start - 500, start));
    for (let start = 0; start < PER_SCOPE; start += 500) await store.peers.ensure('app', inserted.slice(start, start + 500), now);
    await store.transaction(async (tx) => {
      // u0007 is a member of every 20th of 600 sessions
      for (let i = 0; i < 600; i++) {
        const id = `a${String(i).padStart(3, '0')}`;
        await tx.sessions.createIfAbsent('app', { id, metadata: {}, configuration: {} }, new Date(now.getTime() + i));
        await tx.sessions.saveMemberships('app', id, [{ peerId: i % 20 === 0 ? 'u0007' : 'u0008', configuration: {}, joinedAt: now, leftAt: null }]);
      }
    });
    if (DIALECT === 'postgres') await database.driver.run('ANALYZE');
    const v1 = new SqlV1Store(spy);
    const page = (n: number) => ({ filter: null, page: n, size: 50, reverse: false });

    const listed = await v1.listUsers('app', [], page(2));
    expect(listed.total).toBe(PER_SCOPE);
    expect(listed.items.map((u) => u.name)).toEqual(inserted.slice(50, 100));
    const [usersPage] = await plansOf(() => v1.listUsers('app', [], page(2)));
    const sessions = await v1.listSessions('app', 'u0007', false, page(1));
    expect(sessions.total).toBe(30);
    expect(sessions.items.map((session) => session.id)).toEqual(Array.from({ length: 30 }, (_, k) => `a${String(20 * k).padStart(3, '0')}`));
    const [sessionsPage] = await plansOf(() => v1.listSessions('app', 'u0007', true, page(1)));
    if (DIALECT === 'postgres') {
      // in pk order without a sort (here, where the app holds most peers, PostgreSQL walks the
      // primary key; with many apps, the new index)
      expect(usersPage.join('\n')).toMatch(/Index Scan using (peers_workspace_pk|peers_pkey) on peers p\b/);
      expect(usersPage.join('\n')).not.toMatch(/\bSort\b/);
      // the user's memberships first, then each session by its key
      expect(sessionsPage.join('\n')).toMatch(/(Scan using|Bitmap Heap Scan on) \w*\s*session_peers sp\b|Scan using \w+ on session_peers sp\b/);
      expect(sessionsPage.join('\n')).toMatch(/Index Scan using sessions_workspace_id_id_key on sessions s\b/);
      expect(sessionsPage.join('\n')).not.toMatch(/Seq Scan on sessions\b/);
    } else {
      expect(usersPage.filter((line) => /^(SCAN|SEARCH) p\b/.test(line))).toEqual(['SEARCH p USING INDEX peers_workspace_pk (workspace_id=?)']);
      expect(usersPage.join('\n')).not.toMatch(/TEMP B-TREE/);
      expect(sessionsPage.filter((line) => /^(SCAN|SEARCH) (s|sp)\b/.test(line))).toEqual([
        expect.stringMatching(/^SEARCH sp USING COVERING INDEX session_peers_peer\w* \(workspace_id=\? AND peer_id=\?\)$/),
        expect.stringMatching(/^SEARCH s USING INDEX sqlite_autoindex_sessions_1 \(workspace_id=\? AND id=\?\)$/),
      ]);
    }
  });

  it('v1: a user\'s metamessages through the user\'s index, also when the user holds most of the app\'s older ones', async () => {
    const { store, driver } = database;
    const now = new Date(Date.UTC(2026, 0, 4));
    await store.workspaces.createIfAbsent({ id: 'meta', metadata: {}, configuration: {} }, now);
    await store.peers.ensure('meta', ['old-user', 'new-user'], now);
    await driver.run("UPDATE workspaces SET v1_id = 'app-v1' WHERE id = 'meta'");
    await driver.run("UPDATE peers SET v1_id = 'user-' || id WHERE workspace_id = 'meta'");
    await store.sessions.createIfAbsent('meta', { id: 'talk', metadata: {}, configuration: {} }, now);
    await driver.run("UPDATE sessions SET v1_id = 'talk-v1' WHERE workspace_id = 'meta' AND id = 'talk'");
    // 3,000 of old-user's, then 2,000 of new-user's: walked along the primary key, old-user's
    // newest page passes all of new-user's, new-user's first page all of old-user's
    const sizes = { 'old-user': 3_000, 'new-user': 2_000 };
    const v1 = new SqlV1Store(spy);
    await store.transaction(async (tx) => {
      for (const [user, size] of Object.entries(sizes)) {
        for (let i = 0; i < size; i++) {
          await tx.v1.insertMetamessage({
            id: `${user}-${i}`, workspaceId: 'meta', peerId: user, appV1Id: 'app-v1', userV1Id: `user-${user}`, label: i % 2 === 0 ? 'even' : 'odd', content: `note ${i}`,
            sessionId: i % 10 === 0 ? 'talk' : null, sessionV1Id: null, messageId: null, metadata: {}, createdAt: now,
          });
        }
      }
    });
    if (DIALECT === 'postgres') await driver.run('ANALYZE');
    const ids = (user: string, from: number, to: number, step = 1) =>
      Array.from({ length: Math.floor(Math.abs(to - from) / step) + 1 }, (_, k) => `${user}-${from <= to ? from + k * step : from - k * step}`);
    const page = (n: number, reverse: boolean) => ({ filter: null, page: n, size: 50, reverse });
    const reads: [string, () => Promise<{ items: { id: string; userV1Id: string; appV1Id: string }[]; total: number }>, string[], number][] = [
      ['newest first', () => v1.listMetamessages('meta', 'old-user', {}, page(1, true)), ids('old-user', 2999, 2950), 3_000],
      ['oldest first', () => v1.listMetamessages('meta', 'new-user', {}, page(2, false)), ids('new-user', 50, 99), 2_000],
      ['by label', () => v1.listMetamessages('meta', 'old-user', { label: 'odd' }, page(1, true)), ids('old-user', 2999, 2901, 2), 1_500],
      ['by session', () => v1.listMetamessages('meta', 'new-user', { sessionV1Id: 'talk-v1' }, page(1, false)), ids('new-user', 0, 490, 10), 200],
    ];
    for (const [name, read, expected, total] of reads) {
      const listed = await read();
      expect(listed.items.map((m) => m.id), name).toEqual(expected);
      expect(listed.total, name).toBe(total);
      expect(new Set(listed.items.map((m) => `${m.appV1Id} ${m.userV1Id}`)), name).toEqual(new Set([`app-v1 user-${expected[0].replace(/-\d+$/, '')}`]));
      const rowsRead = (await plansOf(read)).find((plan) => !/COUNT|Aggregate/.test(plan.join('\n')))!.join('\n');
      // a filter by session may read the session's metamessages instead (its own index)
      const index = name === 'by session' ? '(metamessages_peer|metamessages_session)' : 'metamessages_peer';
      if (DIALECT === 'postgres') {
        expect(rowsRead, name).toMatch(new RegExp(`(Index Scan (Backward )?using|Bitmap Index Scan on) ${index} `));
        expect(rowsRead, name).not.toMatch(/metamessages_pkey/);
        if (name !== 'by session') expect(rowsRead, name).not.toMatch(/\bSort\b/);
      } else {
        expect(rowsRead, name).toMatch(new RegExp(`SEARCH mm USING INDEX ${index} \\(workspace_id=\\? AND (peer|session)_id=\\?\\)`));
        expect(rowsRead, name).not.toMatch(/TEMP B-TREE/);
      }
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

  it("a search's candidates by their keys: conclusions and messages through the primary key, never by reading the table", async () => {
    // as plain `IN (SELECT ...)` PostgreSQL took the keys for 100 rows and read a table of up to
    // some 15,000 rows whole (keyIn in sql/dialect.ts)
    const memory = new SqlMemoryStore(spy);
    const messages = new SqlMessageStore(spy, DIALECTS[spy.dialect]);
    const pksOf = async (table: string, ids: string[]) => {
      const rows = await database.driver.all<{ pk: number | string; id: string }>(`SELECT pk, id FROM ${table} WHERE id IN (${ids.map(() => '?').join(', ')})`, ids);
      const byId = new Map(rows.map((row) => [row.id, Number(row.pk)]));
      return ids.map((id) => byId.get(id)!);
    };
    const conclusionPks = await pksOf('conclusions', ['c40', 'c1', 'c2998']);
    const messagePks = await pksOf('messages', ['m7', 'm2', 'm2999']);
    // 987,654,321 is the key of no row; asked for another workspace, the rows are left out (checked on the rows read)
    const asked = [...conclusionPks, 987_654_321];
    expect((await memory.conclusionsByPks('w', asked)).map((found) => found.conclusion.id)).toEqual(['c40', 'c1', 'c2998']);
    expect((await memory.conclusionContents('w', asked)).map((found) => found.content).sort()).toEqual(['fact 1', 'fact 2998', 'fact 40']);
    expect(await memory.conclusionsByPks('elsewhere', asked)).toEqual([]);
    expect((await messages.searchContents('w', [...messagePks, 987_654_321])).map((found) => found.id).sort()).toEqual(['m2', 'm2999', 'm7']);
    for (const [read, table, alias] of [
      [() => memory.conclusionsByPks('w', asked), 'conclusions', 'c'],
      [() => memory.conclusionContents('w', asked), 'conclusions', 'c'],
      [() => messages.searchContents('w', messagePks), 'messages', 'm'],
    ] as const) {
      const text = (await planOf(read)).join('\n');
      if (DIALECT === 'postgres') {
        expect(text).toMatch(new RegExp(`Index Scan using ${table}_pkey on ${table} ${alias}\\b`));
        expect(text).not.toMatch(new RegExp(`Seq Scan on ${table}\\b`));
      } else {
        expect(text).toMatch(new RegExp(`SEARCH ${alias} USING INTEGER PRIMARY KEY \\(rowid=\\?\\)`));
        expect(text).not.toMatch(new RegExp(`SCAN ${alias}\\b`));
      }
    }
  });

  it('a session\'s messages in order, and a session\'s or a sender\'s search, through their own index, also when they hold most of the workspace\'s messages', async () => {
    // 'old' holds 3,000 messages, all older than 'new''s 2,000. Written as session_id = ?,
    // PostgreSQL expected the session's rows soon along the primary key and walked it (for
    // 'old' newest first, past all of 'new''s; for 'new' oldest first, past all of 'old''s)
    const { store, driver } = database;
    const now = new Date(Date.UTC(2026, 0, 3));
    await store.workspaces.createIfAbsent({ id: 'skew', metadata: {}, configuration: {} }, now);
    await store.peers.ensure('skew', ['alice', 'bob'], now);
    const sizes = { old: 3_000, new: 2_000 };
    await store.transaction(async (tx) => {
      for (const [session, size] of Object.entries(sizes)) {
        await tx.sessions.createIfAbsent('skew', { id: session, metadata: {}, configuration: {} }, now);
        const rows = Array.from({ length: size }, (_, i): MessageRecord => ({
          id: `${session}-${i}`, workspaceId: 'skew', sessionId: session, peerId: session === 'old' ? 'alice' : 'bob', content: `said ${i}`, metadata: {}, tokenCount: 2, createdAt: now,
        }));
        await tx.messages.insert(rows);
      }
    });
    if (DIALECT === 'postgres') await driver.run('ANALYZE');
    const pkOf = async (id: string) => Number((await driver.get<{ pk: number | string }>('SELECT pk FROM messages WHERE id = ?', [id]))!.pk);
    const ids = (session: string, from: number, to: number) => Array.from({ length: Math.abs(to - from) + 1 }, (_, k) => `${session}-${from <= to ? from + k : from - k}`);

    const d = DIALECTS[spy.dialect];
    const messages = new SqlMessageStore(spy, d);
    const reasoning = new SqlReasoningStore(spy);
    const v1 = new SqlV1Store(spy);
    const page = (n: number, reverse: boolean) => ({ filter: null, page: n, size: 50, reverse });
    const reads: [string, () => Promise<string[]>][] = [
      ['v3 page, newest first', async () => (await messages.list('skew', 'old', page(1, true))).items.map((m) => m.id)],
      ['v3 page, oldest first', async () => (await messages.list('skew', 'new', page(2, false))).items.map((m) => m.id)],
      ['recent', async () => (await messages.recent('skew', 'old', 5)).map((m) => m.id)],
      ['recent before', async () => (await messages.recent('skew', 'old', 3, await pkOf('old-100'))).map((m) => m.id)],
      ['message before', async () => [(await reasoning.messageBefore('skew', 'new', await pkOf('new-7')))!.id]],
      ['messages up to', async () => (await reasoning.messagesUpTo('skew', 'old', 'old-2999', 4)).map((m) => m.id)],
      ['v1 page, newest first', async () => (await v1.listMessages('skew', 'old', page(1, true))).items.map((m) => m.id)],
      ['messages after (engram derive)', async () => (await reasoning.messagesAfter({ workspaceId: 'skew', sessionId: 'new' }, 0, 3)).map((m) => m.id)],
    ];
    const expected: Record<string, string[]> = {
      'v3 page, newest first': ids('old', 2999, 2950),
      'v3 page, oldest first': ids('new', 50, 99),
      recent: ids('old', 2999, 2995),
      'recent before': ids('old', 99, 97),
      'message before': ['new-6'],
      'messages up to': ids('old', 2996, 2999),
      'v1 page, newest first': ids('old', 2999, 2950),
      'messages after (engram derive)': ids('new', 0, 2),
    };
    for (const [name, read] of reads) {
      expect(await read(), name).toEqual(expected[name]);
      // the page's total is the session's counter (v3) or a count (v1): only the rows' read is checked
      const plans = await plansOf(read);
      const rowsRead = plans.find((plan) => /messages m\b|SEARCH m\b|SCAN m\b/.test(plan.join('\n')) && !/COUNT|Aggregate/.test(plan.join('\n')))!;
      const text = rowsRead.join('\n');
      if (DIALECT === 'postgres') {
        expect(text, name).toMatch(/Index Scan (Backward )?using messages_session_seq on messages m\b/);
        expect(text, name).not.toMatch(/messages_pkey|\bSort\b/);
      } else {
        // the session by `=`, so a bound on pk positions the search (Dialect.orderedWithin)
        const bound = name === 'messages after (engram derive)' ? ' AND pk>?' : ['recent before', 'message before', 'messages up to'].includes(name) ? ' AND pk<?' : '';
        expect(rowsRead.filter((line) => /^(SCAN|SEARCH) m\b/.test(line)), name).toEqual([
          `SEARCH m USING INDEX messages_session_seq (workspace_id=? AND session_id=?${bound})`,
        ]);
        expect(text, name).not.toMatch(/TEMP B-TREE/);
      }
    }

    // a search of a word in every message, in the session and of its sender (alice sent all of
    // 'old'): the newest 100 of 'old', through the session's and the sender's index (on
    // SQLite, FTS5's own scope tokens)
    const newest = await Promise.all(ids('old', 2999, 2900).map(pkOf));
    for (const [scope, index] of [[{ sessionId: 'old' }, 'messages_session_seq'], [{ peerId: 'alice' }, 'messages_peer']] as const) {
      const search = { workspaceId: 'skew', ...scope, terms: ['said'], filter: null, candidates: 100 };
      expect(await messages.searchMatches(search), index).toEqual(newest);
      if (DIALECT === 'postgres') {
        const text = (await planOf(() => messages.searchMatches(search))).join('\n');
        // newest first along the index (or, for many of the scope's rows, those rows sorted)
        expect(text, index).toMatch(new RegExp(`(Index Scan Backward using|Bitmap Index Scan on) ${index}\\b`));
        expect(text, index).not.toMatch(/messages_pkey/);
      }
    }
  });
  it("a workspace's search through the workspace's own index, also behind newer messages of another workspace", async () => {
    // 'ws-old' holds 3,000 messages, all older than the 2,000 of 'ws-new', and a word in every
    // one of them. On PostgreSQL the planner walked the primary key backwards past all of
    // 'ws-new''s rows before the first of 'ws-old''s (99 to 109 ms with 150,000 of them)
    const { store, driver } = database;
    const now = new Date(Date.UTC(2026, 0, 4));
    for (const [workspace, size] of [['ws-old', 3_000], ['ws-new', 2_000]] as const) {
      await store.workspaces.createIfAbsent({ id: workspace, metadata: {}, configuration: {} }, now);
      await store.peers.ensure(workspace, ['carol'], now);
      await store.transaction(async (tx) => {
        await tx.sessions.createIfAbsent(workspace, { id: 'talk', metadata: {}, configuration: {} }, now);
        const rows = Array.from({ length: size }, (_, i): MessageRecord => ({
          id: `${workspace}-${i}`, workspaceId: workspace, sessionId: 'talk', peerId: 'carol', content: `spoke ${i}`, metadata: {}, tokenCount: 2, createdAt: now,
        }));
        await tx.messages.insert(rows);
      });
    }
    // the messages' statistics only: other tables' are left as the other tests' plans expect them
    if (DIALECT === 'postgres') await driver.run('ANALYZE messages');
    const messages = new SqlMessageStore(spy, DIALECTS[spy.dialect]);
    const search = { workspaceId: 'ws-old', terms: ['spoke'], filter: null, candidates: 100 };
    const newest = await Promise.all(
      Array.from({ length: 100 }, async (_, k) => Number((await driver.get<{ pk: number | string }>('SELECT pk FROM messages WHERE id = ?', [`ws-old-${2999 - k}`]))!.pk)),
    );
    expect(await messages.searchMatches(search)).toEqual(newest);
    expect((await messages.searchCandidates(search)).map((c) => c.id)).toEqual(Array.from({ length: 100 }, (_, k) => `ws-old-${2999 - k}`));
    if (DIALECT === 'postgres') {
      for (const read of [() => messages.searchMatches(search), () => messages.searchCandidates(search)]) {
        const text = (await planOf(read)).join('\n');
        expect(text).toMatch(/(Index Scan Backward using|Bitmap Index Scan on) messages_workspace_seq\b/);
        expect(text).not.toMatch(/messages_pkey/);
      }
    }
  });
});

describe(`memberships written before migrations 0021 and 0023 (${DIALECT})`, () => {
  it('get their sessions\' creation time and pk and are counted on their peer, and list in order with the ones written after', async () => {
    const driver = await openUnmigratedDriver();
    try {
      await migrate(driver, { through: '0020_conclusions_most_derived' });
      const at = (seconds: number) => (DIALECT === 'postgres' ? new Date(Date.UTC(2026, 0, 1, 0, 0, seconds)) : Date.UTC(2026, 0, 1, 0, 0, seconds) * 1000);
      await driver.run('INSERT INTO workspaces (id, created_at) VALUES (?, ?)', ['w', at(0)]);
      await driver.run('INSERT INTO peers (workspace_id, id, created_at) VALUES (?, ?, ?)', ['w', 'alice', at(0)]);
      // created in the order b, c, a; c and a at the same time
      for (const [id, second] of [['b', 1], ['c', 2], ['a', 2]] as const) {
        await driver.run('INSERT INTO sessions (workspace_id, id, created_at) VALUES (?, ?, ?)', ['w', id, at(second)]);
        await driver.run('INSERT INTO session_peers (workspace_id, session_id, peer_id, joined_at) VALUES (?, ?, ?, ?)', ['w', id, 'alice', at(second)]);
      }
      await migrate(driver);
      const rows = await driver.all<{ session_id: string; session_pk: number | string; pk: number | string; same: number | boolean }>(
        `SELECT m.session_id, m.session_pk, s.pk, m.session_created_at = s.created_at AS same
         FROM session_peers m JOIN sessions s ON s.workspace_id = m.workspace_id AND s.id = m.session_id ORDER BY m.session_id`,
      );
      expect(rows.map((row) => [row.session_id, Number(row.session_pk) === Number(row.pk), Boolean(row.same)])).toEqual([
        ['a', true, true],
        ['b', true, true],
        ['c', true, true],
      ]);
      // one more after the migration, through the store; then the list in creation order
      const sessions = new SqlSessionStore(driver, DIALECTS[driver.dialect]);
      await sessions.createIfAbsent('w', { id: 'd', metadata: {}, configuration: {} }, new Date(Date.UTC(2026, 0, 1, 0, 0, 3)));
      await sessions.saveMemberships('w', 'd', [{ peerId: 'alice', configuration: {}, joinedAt: new Date(), leftAt: null }]);
      const page = await sessions.ofPeer('w', 'alice', { filter: null, page: 1, size: 10, reverse: false, order: 'created-then-insertion' });
      expect(page.items.map((s) => s.id)).toEqual(['b', 'c', 'a', 'd']);
      expect(page.total).toBe(4);
    } finally {
      await driver.discard();
    }
  });
});
