import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { DOCUMENT_FILTER, PEER_FILTER } from '../../src/domain/filters/filter-schemas.js';
import { parseFilters, CURRENT_RULES } from '../../src/domain/filters/filters.js';
import type { SqlExecutor } from '../../src/storage/sql/driver.js';
import { DIALECTS } from '../../src/storage/sql/dialects.js';
import { SEEK_FROM_ROWS } from '../../src/storage/sql/list-page.js';
import { SqlMemoryStore } from '../../src/storage/sql/memory-store.js';
import { SqlMessageStore } from '../../src/storage/sql/message-store.js';
import { SqlPeerStore } from '../../src/storage/sql/peer-store.js';
import { SeekPoints } from '../../src/storage/sql/seek-points.js';
import { SqlSessionStore } from '../../src/storage/sql/session-store.js';
import { SqlV1Store } from '../../src/storage/sql/v1-store.js';
import type { Page } from '../../src/storage/store.js';
import { planLines, type IssuedStatement } from '../support/recording-executor.js';
import { DIALECT, TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

/*
 * Deep pages of the peers, a workspace's and a peer's sessions, a session's messages, conclusions
 * and in v1 a user's sessions and metamessages start after the last row
 * of an earlier page read at the same data version (seek-points.ts). Every page is compared
 * with the same page read by offset alone (a store without points), and the statements say
 * whether a page was read from a point: its OFFSET is then counted from the point.
 */

const SIZE = 100;
const ROWS = 1_150;
const PAGES = Math.ceil(ROWS / SIZE);

let database: Database;
let workspaceId: string;
const MEMBER = 'p0000';
const SESSION = 's-long';

/** An executor that records each statement and its parameters, and may run `after` once a matching statement has run. */
function recording(db: SqlExecutor) {
  const statements: { sql: string; params: readonly unknown[] }[] = [];
  let after: { when: RegExp; run: () => Promise<void> } | undefined;
  const executor: SqlExecutor = {
    dialect: db.dialect,
    async all<T>(sql: string, params: readonly unknown[] = []) {
      statements.push({ sql, params });
      const rows = await db.all<T>(sql, params);
      const hook = after;
      if (hook !== undefined && hook.when.test(sql)) {
        after = undefined;
        await hook.run();
      }
      return rows;
    },
    get: (sql, params) => db.get(sql, params),
    run: (sql, params) => db.run(sql, params),
  };
  return {
    executor,
    statements,
    afterStatement: (when: RegExp, run: () => Promise<void>) => {
      after = { when, run };
    },
  };
}

/** A page statement reading from a point: its order columns compared with the point's key. */
const FROM_POINT = /seek_key_0\b.* (<|>) (\?|\()/s;
const BY_OFFSET = /seek_key_0\b/;

function pageStatements(statements: { sql: string }[]): string[] {
  return statements.map((s) => s.sql).filter((sql) => BY_OFFSET.test(sql));
}

const ids = (page: Page<{ id: string }>) => page.items.map((item) => item.id);

/**
 * Versions read before and after each change: `step(change)` runs it and records which of the
 * versions `read` returns moved.
 */
async function versionSteps(read: () => Promise<unknown[]>) {
  const steps: boolean[][] = [];
  let last = await read();
  const step = async (change: () => Promise<unknown>) => {
    await change();
    const now = await read();
    steps.push(now.map((version, index) => version !== last[index]));
    last = now;
  };
  return { step, steps, last: () => last };
}

/** A v1 metamessage of the member (its app and user v1 ids are not stored with it). */
const metamessage = (sessionId: string | null) => ({
  id: uniqueId('mm'),
  workspaceId,
  peerId: MEMBER,
  appV1Id: '',
  userV1Id: '',
  label: 'note',
  content: 'remember this',
  sessionId,
  sessionV1Id: null,
  messageId: null,
  metadata: {},
  createdAt: new Date('2026-11-01T10:00:00.000Z'),
});

beforeAll(async () => {
  database = await openDatabase(TEST_DATABASE_URL);
  workspaceId = uniqueId('ws');
  const store = database.store;
  const at = new Date('2026-11-01T10:00:00.000Z');
  await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, at);
  // one instant for every peer and session: the order's tie-break (pk) decides, as it must
  const peers = Array.from({ length: ROWS }, (_, i) => `p${String(i).padStart(4, '0')}`);
  await store.transaction(async (tx) => {
    for (let i = 0; i < peers.length; i += 200) await tx.peers.ensure(workspaceId, peers.slice(i, i + 200), at);
    for (let i = 0; i < ROWS; i++) {
      const sessionId = `s${String(i).padStart(4, '0')}`;
      await tx.sessions.createIfAbsent(workspaceId, { id: sessionId, metadata: {}, configuration: {} }, at);
      await tx.sessions.saveMemberships(workspaceId, sessionId, [{ peerId: MEMBER, configuration: {}, joinedAt: at, leftAt: null }]);
    }
    await tx.sessions.createIfAbsent(workspaceId, { id: SESSION, metadata: {}, configuration: {} }, at);
    const messages = Array.from({ length: ROWS }, (_, i) => ({
      id: uniqueId('msg'),
      workspaceId,
      sessionId: SESSION,
      peerId: MEMBER,
      content: `message ${i}`,
      metadata: {},
      tokenCount: 2,
      createdAt: at,
    }));
    for (let i = 0; i < messages.length; i += 200) await tx.messages.insert(messages.slice(i, i + 200));
    // the member's conclusions about itself, and a few of another collection among them
    const conclusions = Array.from({ length: ROWS }, (_, i) => ({
      id: uniqueId('c'),
      workspaceId,
      observerId: MEMBER,
      observedId: i % 10 === 3 ? 'p0001' : MEMBER,
      sessionId: SESSION,
      content: `conclusion ${i}`,
      level: 'explicit' as const,
      sourceIds: null,
      timesDerived: 1,
      createdAt: at,
    }));
    await tx.memory.insertConclusions(conclusions);
    // the member's v1 metamessages, some linked to the session
    for (let i = 0; i < ROWS; i++) await tx.v1.insertMetamessage(metamessage(i % 3 === 0 ? SESSION : null));
  });
  if (DIALECT === 'postgres') {
    // times with microseconds, which a JavaScript Date would lose on the way back
    await database.driver.run(`UPDATE peers SET created_at = created_at + (pk % 7) * interval '1 microsecond' WHERE workspace_id = ?`, [workspaceId]);
    // statistics that know this workspace's rows: the plans below are read with them, not with
    // whatever autovacuum last saw of the worker's database (with 2 peers estimated for the
    // workspace, PostgreSQL filtered the key instead of starting the index scan at it). The
    // sample takes every row of a table up to 3,000,000 rather than 30,000, so that other test
    // files' rows in the worker's database cannot sample this workspace's out of the estimates
    // (two of these plan tests failed once more in a whole-suite run after a plain ANALYZE; the
    // cause was not reproduced alone, with 150,000 peers of other workspaces beside these)
    await database.driver.transaction(async (tx) => {
      await tx.run('SET LOCAL default_statistics_target = 10000');
      await tx.run('ANALYZE');
    });
  }
});
afterAll(() => database.driver.close());

interface ListCase {
  name: string;
  /** The list read through `db` with `points` (none: offset alone). */
  read: (db: SqlExecutor, points: SeekPoints | undefined, page: number, reverse: boolean) => Promise<Page<{ id: string }>>;
  /** A write that changes the list's data version and its rows. */
  write: () => Promise<void>;
}

const d = () => DIALECTS[DIALECT];
/** The filter the SDK sends for one observer's conclusions about one peer. */
const collection = (observer: string, observed: string) => parseFilters(database.store, { observer_id: observer, observed_id: observed }, DOCUMENT_FILTER, CURRENT_RULES);
const addConclusion = (observer: string, observed: string) =>
  database.store.memory.insertConclusions([
    { id: uniqueId('c'), workspaceId, observerId: observer, observedId: observed, sessionId: null, content: 'late', level: 'explicit', sourceIds: null, timesDerived: 1, createdAt: new Date('2026-11-01T10:00:00.000Z') },
  ]);
const LISTS: ListCase[] = [
  {
    name: "a session's messages",
    read: (db, points, page, reverse) => new SqlMessageStore(db, d(), points).list(workspaceId, SESSION, { filter: null, page, size: SIZE, reverse }),
    write: async () => {
      const message = { id: uniqueId('msg'), workspaceId, sessionId: SESSION, peerId: MEMBER, content: 'late', metadata: {}, tokenCount: 1, createdAt: new Date() };
      await database.store.messages.insert([message]);
    },
  },
  {
    name: 'the peers of a workspace',
    read: (db, points, page, reverse) => new SqlPeerStore(db, d(), points).list(workspaceId, { filter: null, page, size: SIZE, reverse }),
    write: () => database.store.peers.ensure(workspaceId, [uniqueId('late')], new Date('2026-11-01T10:00:00.000Z')),
  },
  {
    name: "a peer's sessions",
    read: (db, points, page, reverse) =>
      new SqlSessionStore(db, d(), points).ofPeer(workspaceId, MEMBER, { filter: null, page, size: SIZE, reverse, order: 'created-then-insertion' }),
    write: async () => {
      const sessionId = uniqueId('late');
      await database.store.sessions.createIfAbsent(workspaceId, { id: sessionId, metadata: {}, configuration: {} }, new Date('2026-11-01T10:00:00.000Z'));
      await database.store.sessions.saveMemberships(workspaceId, sessionId, [{ peerId: MEMBER, configuration: {}, joinedAt: new Date(), leftAt: null }]);
    },
  },
  {
    name: 'the sessions of a workspace',
    read: (db, points, page, reverse) =>
      new SqlSessionStore(db, d(), points).list(workspaceId, { filter: null, page, size: SIZE, reverse, order: 'created-then-insertion' }),
    write: async () => {
      await database.store.sessions.createIfAbsent(workspaceId, { id: uniqueId('late'), metadata: {}, configuration: {} }, new Date('2026-11-01T10:00:00.000Z'));
    },
  },
  {
    name: 'the conclusions of a workspace',
    read: (db, points, page, reverse) => new SqlMemoryStore(db, undefined, points).listConclusions(workspaceId, { filter: null, page, size: SIZE, reverse }),
    write: () => addConclusion(MEMBER, 'p0001'),
  },
  {
    name: 'the conclusions of a collection',
    read: (db, points, page, reverse) =>
      new SqlMemoryStore(db, undefined, points).listConclusions(workspaceId, { filter: collection(MEMBER, MEMBER), page, size: SIZE, reverse }),
    write: () => addConclusion(MEMBER, MEMBER),
  },
  {
    name: "a session's messages in v1",
    read: (db, points, page, reverse) => new SqlV1Store(db, points).listMessages(workspaceId, SESSION, { filter: null, page, size: SIZE, reverse }),
    write: async () => {
      const message = { id: uniqueId('msg'), workspaceId, sessionId: SESSION, peerId: MEMBER, content: 'late', metadata: {}, tokenCount: 1, createdAt: new Date() };
      await database.store.messages.insert([message]);
    },
  },
  ...[false, true].map(
    (activeOnly): ListCase => ({
      name: `a user's sessions in v1${activeOnly ? ', the active ones' : ''}`,
      read: async (db, points, page, reverse) => {
        const sessions = await new SqlV1Store(db, points).listSessions(workspaceId, MEMBER, activeOnly, { filter: null, page, size: SIZE, reverse });
        return { ...sessions, items: sessions.items.map((session) => ({ id: session.v1Id })) };
      },
      write: async () => {
        const sessionId = uniqueId('late');
        await database.store.sessions.createIfAbsent(workspaceId, { id: sessionId, metadata: {}, configuration: {} }, new Date('2026-11-01T10:00:00.000Z'));
        await database.store.sessions.saveMemberships(workspaceId, sessionId, [{ peerId: MEMBER, configuration: {}, joinedAt: new Date(), leftAt: null }]);
      },
    }),
  ),
  {
    name: "a user's metamessages in v1",
    read: (db, points, page, reverse) => new SqlV1Store(db, points).listMetamessages(workspaceId, MEMBER, {}, { filter: null, page, size: SIZE, reverse }),
    write: () => database.store.v1.insertMetamessage(metamessage(null)),
  },
  {
    name: 'the users of an app in v1',
    read: async (db, points, page, reverse) => {
      const users = await new SqlV1Store(db, points).listUsers(workspaceId, ['p0003'], { filter: null, page, size: SIZE, reverse });
      return { ...users, items: users.items.map((user) => ({ id: user.v1Id })) };
    },
    write: () => database.store.peers.ensure(workspaceId, [uniqueId('late')], new Date('2026-11-01T10:00:00.000Z')),
  },
];

describe.each(LISTS)('deep pages of $name', ({ read, write }) => {
  it.each([false, true])('read page after page (reverse: %s) are the pages read by offset, from a point after the first deep one', async (reverse) => {
    const { executor, statements } = recording(database.driver);
    const points = new SeekPoints();
    const firstDeep = Math.floor(SEEK_FROM_ROWS / SIZE) + 1;
    let rowsRead = 0;
    for (let page = 1; page <= PAGES + 1; page++) {
      const before = statements.length;
      const seen = await read(executor, points, page, reverse);
      const readBefore = rowsRead;
      rowsRead += seen.items.length;
      expect(ids(seen), `page ${page}`).toEqual(ids(await read(database.driver, undefined, page, reverse)));
      const pageSql = pageStatements(statements.slice(before));
      if (page < firstDeep) expect(pageSql).toEqual([]);
      else if (page === firstDeep) expect(pageSql.filter((sql) => FROM_POINT.test(sql))).toEqual([]);
      else {
        expect(pageSql).toHaveLength(1);
        expect(pageSql[0]).toMatch(FROM_POINT);
        // the previous page ended where this one starts: nothing to step over (past the end, the
        // rows between the last row and the page's place)
        const statement = statements.slice(before).find((s) => FROM_POINT.test(s.sql))!;
        expect(statement.params.at(-1)).toBe((page - 1) * SIZE - readBefore);
      }
    }
  });

  it('a page past several unread ones steps over those only, from the nearest point before it', async () => {
    const { executor, statements } = recording(database.driver);
    const points = new SeekPoints();
    await read(executor, points, 7, false);
    const before = statements.length;
    expect(ids(await read(executor, points, 10, false))).toEqual(ids(await read(database.driver, undefined, 10, false)));
    const statement = statements.slice(before).find((s) => FROM_POINT.test(s.sql));
    expect(statement?.params.at(-1)).toBe(2 * SIZE);
    // a page before every point is read by offset
    const earlier = statements.length;
    expect(ids(await read(executor, points, 6, false))).toEqual(ids(await read(database.driver, undefined, 6, false)));
    expect(pageStatements(statements.slice(earlier)).filter((sql) => FROM_POINT.test(sql))).toEqual([]);
  });

  it('after a write, the points of the old version are not used', async () => {
    const { executor, statements } = recording(database.driver);
    const points = new SeekPoints();
    await read(executor, points, 8, true);
    await write();
    const before = statements.length;
    expect(ids(await read(executor, points, 9, true))).toEqual(ids(await read(database.driver, undefined, 9, true)));
    expect(pageStatements(statements.slice(before)).filter((sql) => FROM_POINT.test(sql))).toEqual([]);
  });

  it('a write between the page and its second version read sends the page back to be read by offset', async () => {
    const { executor, statements, afterStatement } = recording(database.driver);
    const points = new SeekPoints();
    await read(executor, points, 6, true);
    afterStatement(FROM_POINT, write);
    const before = statements.length;
    const seen = await read(executor, points, 7, true);
    // the page as it is after the write (the reverse order puts the new row first)
    expect(ids(seen)).toEqual(ids(await read(database.driver, undefined, 7, true)));
    const sql = statements.slice(before).map((s) => s.sql);
    expect(sql.some((s) => FROM_POINT.test(s))).toBe(true);
    expect(sql.at(-1)).not.toMatch(BY_OFFSET);
    expect(sql.at(-1)).toMatch(/OFFSET \?$/);
  });
});

/**
 * A statement's plan; on PostgreSQL with sequential scans and sorts priced out, so the plan shows
 * whether the index can start at the key, whatever the statistics say of this workspace's share
 * of the worker's database (with a Seq Scan and a Sort chosen at this size, two of these tests
 * failed in whole-suite runs, not alone). A key the index cannot take still shows as a Filter,
 * and a list no index serves still as a Seq Scan.
 */
async function indexPlanLines(statement: IssuedStatement): Promise<string[]> {
  if (DIALECT !== 'postgres') return planLines(database.driver, statement);
  return database.driver.transaction(async (tx) => {
    await tx.run('SET LOCAL enable_seqscan = off');
    await tx.run('SET LOCAL enable_sort = off');
    return planLines(tx, statement);
  });
}

describe.each(LISTS)('the plan of a page from a point of $name', ({ read }) => {
  it.each([false, true])('starts at the key in the order index (reverse: %s)', async (reverse) => {
    const { executor, statements } = recording(database.driver);
    const points = new SeekPoints();
    await read(executor, points, 7, reverse);
    await read(executor, points, 8, reverse);
    const statement = statements.find((s) => FROM_POINT.test(s.sql))!;
    const plan = await indexPlanLines(statement);
    if (DIALECT === 'sqlite') {
      expect(plan.filter((line) => /TEMP B-TREE|^SCAN/.test(line))).toEqual([]);
      expect(plan.some((line) => /^SEARCH \w+ USING (COVERING )?INDEX \w+ \(.*[<>]/.test(line))).toBe(true);
    } else {
      // the key bounds the index scan of the list's table; PostgreSQL may still sort what it
      // bounds when it expects few rows past the key (its estimate of a row comparison reads the
      // first column only, and every peer here shares one instant), and may read a table joined
      // in for its columns whole at this size (~1,150 rows)
      const keyLine = plan.findIndex((line) => /(Index Cond|Recheck Cond): .*(ROW\(.*\) [<>] ROW\(|\b(session_)?pk [<>] )/.test(line));
      expect(keyLine, plan.join('\n')).toBeGreaterThan(0);
      const scanned = plan
        .slice(0, keyLine)
        .reverse()
        .map((line) => /(?<!Bitmap Index )Scan (?:Backward )?(?:using \S+ )?on (\w+)/.exec(line)?.[1])
        .find((table) => table !== undefined);
      expect(scanned, plan.join('\n')).toBeDefined();
      expect(plan.join('\n')).not.toMatch(new RegExp(`Seq Scan on ${scanned}\\b`));
    }
  });
});

describe('lists that keep no points', () => {
  it("a peer's sessions in creation order alone (no unique key to start after) are read by offset", async () => {
    const { executor, statements } = recording(database.driver);
    const points = new SeekPoints();
    for (const page of [7, 8, 9]) {
      const store = new SqlSessionStore(executor, d(), points);
      await store.ofPeer(workspaceId, MEMBER, { filter: null, page, size: SIZE, reverse: false, order: 'created' });
    }
    expect(pageStatements(statements)).toEqual([]);
  });

  it('a filtered list is read by offset', async () => {
    const { executor, statements } = recording(database.driver);
    const points = new SeekPoints();
    const store = new SqlPeerStore(executor, d(), points);
    const filter = parseFilters(database.store, { created_at: { gte: '2000-01-01T00:00:00Z' } }, PEER_FILTER, CURRENT_RULES);
    for (const page of [7, 8]) await store.list(workspaceId, { filter, page, size: SIZE, reverse: false });
    expect(pageStatements(statements)).toEqual([]);
  });

  it('the stores of a transaction keep none', async () => {
    const seen: string[] = [];
    await database.store.transaction(async (tx) => {
      for (const page of [7, 8]) seen.push(...ids(await tx.messages.list(workspaceId, SESSION, { filter: null, page, size: SIZE, reverse: false })));
    });
    const expected = [7, 8].map(async (page) => ids(await readByOffset(LISTS[0], page)));
    expect(seen).toEqual((await Promise.all(expected)).flat());
    expect((database.store.messages as unknown as { seekPoints?: SeekPoints }).seekPoints).toBeInstanceOf(SeekPoints);
    await database.store.transaction(async (tx) => {
      expect((tx.messages as unknown as { seekPoints?: SeekPoints }).seekPoints).toBeUndefined();
    });
  });
});

/** A list's page read by offset alone, in insertion order. */
function readByOffset(list: ListCase, page: number): Promise<Page<{ id: string }>> {
  return list.read(database.driver, undefined, page, false);
}

describe("the version of a workspace's active sessions", () => {
  it('moves when a session joins or leaves the list, not when a session changes in place', async () => {
    const ws = uniqueId('ws');
    const at = new Date('2026-11-01T10:00:00.000Z');
    const store = database.store;
    await store.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, at);
    const sessions = new SqlSessionStore(database.driver, d());
    const versions: (string | undefined)[] = [await sessions.activeVersion(ws)];
    const step = async (change: () => Promise<unknown>) => {
      await change();
      versions.push(await sessions.activeVersion(ws));
    };
    await step(() => store.sessions.createIfAbsent(ws, { id: 'a', metadata: {}, configuration: {} }, at));
    await step(() => store.sessions.createIfAbsent(ws, { id: 'b', metadata: {}, configuration: {} }, at));
    await step(() => store.sessions.update(ws, 'a', { metadata: { topic: 'tea' } }));
    await step(() => store.sessions.deactivate(ws, 'a'));
    await step(() => store.sessions.purgeInactive(ws, 'a'));
    // one in and one out: as many as before, yet another list
    await step(async () => {
      await store.sessions.createIfAbsent(ws, { id: 'c', metadata: {}, configuration: {} }, at);
      await database.driver.run('DELETE FROM sessions WHERE workspace_id = ? AND id = ?', [ws, 'b']);
    });
    const moved = versions.slice(1).map((version, index) => version !== versions[index]);
    // created, created, metadata (no), deactivated, an inactive one purged (no), one created and one deleted
    expect(moved).toEqual([true, true, false, true, false, true]);
    expect(versions.every((version) => version !== undefined)).toBe(true);
    expect(await sessions.activeVersion(uniqueId('absent'))).toBeUndefined();
  });
});

describe('the version of a conclusions list', () => {
  it('moves when a conclusion joins or leaves the list, in its scope only, not when one is reinforced', async () => {
    const ws = uniqueId('ws');
    const at = new Date('2026-11-01T10:00:00.000Z');
    const store = database.store;
    await store.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, at);
    await store.peers.ensure(ws, ['a', 'b'], at);
    const memory = new SqlMemoryStore(database.driver);
    const scopes = [{}, { observerId: 'a', observedId: 'a' }, { observerId: 'a', observedId: 'b' }, { observedId: 'b' }];
    const read = () => Promise.all(scopes.map((scope) => memory.conclusionsVersion(ws, scope)));
    const { step, steps, last } = await versionSteps(read);
    const conclusion = (id: string, observedId: string) => ({
      id, workspaceId: ws, observerId: 'a', observedId, sessionId: null, content: id, level: 'explicit' as const, sourceIds: null, timesDerived: 1, createdAt: at,
    });
    await step(() => store.memory.insertConclusions([conclusion('c1', 'a')]));
    await step(() => store.memory.insertConclusions([conclusion('c2', 'b')]));
    await step(() => store.memory.reinforceConclusion(ws, 'c1'));
    await step(() => store.memory.softDeleteConclusion(ws, 'c2', at));
    await step(() => database.driver.run('DELETE FROM conclusions WHERE workspace_id = ? AND id = ?', [ws, 'c2']));
    // one in and one out: as many as before, yet other rows
    await step(async () => {
      await store.memory.insertConclusions([conclusion('c3', 'a')]);
      await database.driver.run('DELETE FROM conclusions WHERE workspace_id = ? AND id = ?', [ws, 'c1']);
    });
    // scopes: the workspace, a about a, a about b, anyone about b
    expect(steps).toEqual([
      [true, true, false, false],
      [true, false, true, true],
      [false, false, false, false],
      [true, false, true, true],
      // already out of the list: deleting it moves nothing
      [false, false, false, false],
      [true, true, false, false],
    ]);
    expect(last().every((version) => version !== undefined)).toBe(true);
    expect(await memory.conclusionsVersion(uniqueId('absent'), {})).toBeUndefined();
  });
});

describe("the version of a v1 user's metamessages", () => {
  it('moves when one is added, removed or given to another user, not when its label or link changes; a selection keeps no points', async () => {
    const ws = uniqueId('ws');
    const at = new Date('2026-11-01T10:00:00.000Z');
    const store = database.store;
    await store.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, at);
    await store.peers.ensure(ws, ['alice', 'bob'], at);
    const version = async (peer: string) =>
      (await database.driver.get<{ v: number | string }>('SELECT metamessages_version AS v FROM peers WHERE workspace_id = ? AND id = ?', [ws, peer]))?.v;
    const { step, steps } = await versionSteps(() => Promise.all([version('alice'), version('bob')]));
    const record = (id: string) => ({ ...metamessage(null), id, workspaceId: ws, peerId: 'alice' });
    await step(() => store.v1.insertMetamessage(record('m1')));
    await step(() => store.v1.insertMetamessage(record('m2')));
    await step(() => store.v1.updateMetamessage('m1', { label: 'other', metadata: { k: 1 } }));
    await step(() => database.driver.run("UPDATE metamessages SET peer_id = 'bob' WHERE id = 'm2'"));
    await step(() => database.driver.run("DELETE FROM metamessages WHERE id = 'm1'"));
    expect(steps).toEqual([
      [true, false],
      [true, false],
      [false, false],
      [true, true],
      [true, false],
    ]);

    // a page of one label's metamessages is read by offset: a label changed in place moves the
    // metamessage out of that list without moving the version
    const { executor, statements } = recording(database.driver);
    const points = new SeekPoints();
    for (const page of [7, 8, 9]) await new SqlV1Store(executor, points).listMetamessages(workspaceId, MEMBER, { label: 'note' }, { filter: null, page, size: SIZE, reverse: false });
    expect(pageStatements(statements)).toEqual([]);
  });
});
