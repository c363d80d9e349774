import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { createDomainContext, within } from '../../src/domain/context.js';
import { searchMessages } from '../../src/domain/messages/search.js';
import { migrate } from '../../src/storage/migrate.js';
import { openFreshDatabase } from '../support/fresh-database.js';
import { SqlStore } from '../../src/storage/sql/sql-store.js';
import { SqliteDriver } from '../../src/storage/sqlite/sqlite-driver.js';
import type { SqlExecutor } from '../../src/storage/sql/driver.js';
import { DIALECTS } from '../../src/storage/sql/dialects.js';
import { SqlMessageStore } from '../../src/storage/sql/message-store.js';
import type { FilterNode } from '../../src/storage/filter.js';
import type { MessageRecord, MessageSearch, Store } from '../../src/storage/store.js';
import { planLines, recordingExecutor } from '../support/recording-executor.js';
import { DIALECT, TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';
import { CURRENT_RULES } from '../../src/domain/filters/filters.js';

let counter = 0;

/** `peersExist`: the peers are there already (a store on an old schema, whose peer store reads columns it lacks). */
async function addMessages(store: Store, workspaceId: string, sessionId: string, messages: [peer: string, content: string][], peersExist = false) {
  const now = new Date();
  await store.transaction(async (tx) => {
    await tx.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
    await tx.sessions.createIfAbsent(workspaceId, { id: sessionId, metadata: {}, configuration: {} }, now);
    if (!peersExist) await tx.peers.ensure(workspaceId, [...new Set(messages.map(([peer]) => peer))], now);
    const rows: MessageRecord[] = messages.map(([peerId, content]) => ({
      id: `msg-${++counter}-${uniqueId('m')}`,
      workspaceId,
      sessionId,
      peerId,
      content,
      metadata: {},
      tokenCount: 0,
      createdAt: now,
    }));
    await tx.messages.insert(rows);
  });
}

const search = (store: Store, query: Partial<MessageSearch> & { workspaceId: string; terms: string[] }) =>
  store.messages.searchCandidates({ filter: null, candidates: 100, ...query });

describe('full-text search candidates', () => {
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase(TEST_DATABASE_URL);
  });
  afterAll(() => database.driver.close());

  it('are the newest messages holding every word, at most `candidates`', async () => {
    const ws = uniqueId();
    await addMessages(database.store, ws, 's', [
      ['alice', 'tea at noon'],
      ['bob', 'no tea today'],
      ['alice', 'coffee at noon'],
      ['bob', 'tea, then more tea at noon'],
    ]);
    const found = await search(database.store, { workspaceId: ws, terms: ['tea'] });
    expect(found.map((c) => c.content)).toEqual(['tea, then more tea at noon', 'no tea today', 'tea at noon']);
    expect(found.every((c) => typeof c.id === 'string')).toBe(true);
    const two = await search(database.store, { workspaceId: ws, terms: ['noon', 'TEA'] });
    expect(two.map((c) => c.content)).toEqual(['tea, then more tea at noon', 'tea at noon']);
    const bounded = await search(database.store, { workspaceId: ws, terms: ['tea'], candidates: 2 });
    expect(bounded.map((c) => c.content)).toEqual(['tea, then more tea at noon', 'no tea today']);
  });

  it('keep to the workspace, session and sender, also between workspaces with the same ids', async () => {
    const [one, two] = [uniqueId(), uniqueId()];
    await addMessages(database.store, one, 'shared', [['alice', 'sailing one'], ['bob', 'sailing one bob']]);
    await addMessages(database.store, one, 'other', [['alice', 'sailing one other']]);
    await addMessages(database.store, two, 'shared', [['alice', 'sailing two']]);
    const contents = async (query: Partial<MessageSearch> & { workspaceId: string }) =>
      (await search(database.store, { terms: ['sailing'], ...query })).map((c) => c.content).sort();
    expect(await contents({ workspaceId: one })).toEqual(['sailing one', 'sailing one bob', 'sailing one other']);
    expect(await contents({ workspaceId: two })).toEqual(['sailing two']);
    expect(await contents({ workspaceId: one, sessionId: 'shared' })).toEqual(['sailing one', 'sailing one bob']);
    expect(await contents({ workspaceId: two, sessionId: 'shared' })).toEqual(['sailing two']);
    expect(await contents({ workspaceId: one, peerId: 'alice' })).toEqual(['sailing one', 'sailing one other']);
    expect(await contents({ workspaceId: one, sessionId: 'shared', peerId: 'alice' })).toEqual(['sailing one']);
    expect(await contents({ workspaceId: two, peerId: 'bob' })).toEqual([]);
  });

  it('answer a search filtered to sessions as the search scoped to each, whatever form the filter takes', async () => {
    const ws = uniqueId();
    // the word in every session, the newest in the sessions not asked for
    for (const session of ['a', 'b', 'c', 'd']) {
      await addMessages(database.store, ws, session, [['alice', `canoe ${session} one`], ['bob', `canoe ${session} two, canoe again`]]);
    }
    await addMessages(database.store, ws, 'e', [['alice', 'canoe e, newest of all']]);
    const ctx = createDomainContext(database.store, { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 3 });
    const ids = async (scope: { sessionId?: string }, filters: Record<string, unknown> | null, query = 'canoe') =>
      (await searchMessages(ctx, { workspaceId: ws, ...scope }, { query, filters, limit: 10, rules: CURRENT_RULES })).map((m) => `${m.sessionId}:${m.content}`);
    const inB = await ids({ sessionId: 'b' }, null);
    expect(inB).toHaveLength(2);
    expect(inB.every((m) => m.startsWith('b:'))).toBe(true);
    expect(await ids({}, { session_id: 'b' })).toEqual(inB);
    expect(await ids({}, { session_id: { in: ['b'] } })).toEqual(inB);
    // a form the search cannot read sessions from: the filter alone, the same answer
    expect(await ids({}, { AND: [{ session_id: 'b' }] })).toEqual(inB);
    const inBandD = await ids({}, { session_id: { in: ['b', 'd'] } });
    expect(inBandD.map((m) => m[0]).sort()).toEqual(['b', 'b', 'd', 'd']);
    expect(await ids({}, { OR: [{ session_id: 'b' }, { session_id: 'd' }] })).toEqual(inBandD);
    // two terms ("again" is a stop word), weighted by their matches
    const twoTerms = await ids({}, { session_id: { in: ['b', 'd'] } }, 'canoe two');
    expect(twoTerms.slice(0, 2).map((m) => m.includes('two'))).toEqual([true, true]);
    expect(twoTerms).toEqual(await ids({}, { OR: [{ session_id: 'd' }, { session_id: 'b' }] }, 'canoe two'));
    // with another condition beside it, and none of the sessions' messages left by it
    expect(await ids({}, { session_id: 'b', peer_id: 'bob' })).toEqual(inB.filter((m) => m.includes('two')));
    expect((await ids({}, { session_id: { in: ['b', 'd'] }, peer_id: 'bob' }, 'canoe two')).sort()).toEqual(inBandD.filter((m) => m.includes('two')).sort());
    expect(await ids({}, { session_id: { in: [] } })).toEqual([]);
    expect(await ids({}, { session_id: { in: ['nowhere'] } })).toEqual([]);
  });

  it.runIf(DIALECT === 'sqlite')('narrow the index to the sessions a filter names (SQLite: their scope tokens)', async () => {
    const ws = uniqueId();
    await addMessages(database.store, ws, 'a', [['alice', 'paddle a']]);
    await addMessages(database.store, ws, 'b', [['alice', 'paddle b']]);
    await addMessages(database.store, ws, 'c', [['alice', 'paddle c']]);
    const contents = async (withinSessions: string[]) =>
      (await search(database.store, { workspaceId: ws, terms: ['paddle'], withinSessions })).map((c) => c.content).sort();
    // without the filter the tokens show alone: the index walks those sessions only
    expect(await contents(['a', 'c'])).toEqual(['paddle a', 'paddle c']);
    expect(await contents(['b'])).toEqual(['paddle b']);
    // more sessions than the index is given: left to the filter
    expect(await contents(Array.from({ length: 101 }, (_, i) => `s${i}`))).toEqual(['paddle a', 'paddle b', 'paddle c']);
  });

  it('run in their turn on SQLite (src/domain/turns.ts), at once on PostgreSQL', async () => {
    const ws = uniqueId();
    await addMessages(database.store, ws, 's', [['alice', 'kayak at dawn']]);
    const ctx = createDomainContext(database.store, { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 3 });
    let openTurn!: () => void;
    const held = ctx.turns.run(() => new Promise<void>((resolve) => (openTurn = resolve)));
    let answered: string[] | undefined;
    const searched = searchMessages(ctx, { workspaceId: ws }, { query: 'kayak', filters: null, limit: 10, rules: CURRENT_RULES }).then(
      (found) => (answered = found.map((m) => m.content)),
    );
    if (DIALECT === 'sqlite') {
      // SQLite answers without waiting on I/O: the passes of the loop are time enough
      for (let pass = 0; pass < 20; pass++) await new Promise((resolve) => setImmediate(resolve));
      expect(answered).toBeUndefined();
    } else {
      // answered while the turn is still held (were it waiting, the test would time out)
      expect(await searched).toEqual(['kayak at dawn']);
    }
    openTurn();
    await held;
    expect(await searched).toEqual(['kayak at dawn']);
    // in a transaction no turn is taken: the turn's holder may be waiting for the transaction
    const inside = await database.store.transaction(async (tx) => {
      const txCtx = within(ctx, tx);
      return ctx.turns.run(() => searchMessages(txCtx, { workspaceId: ws }, { query: 'kayak', filters: null, limit: 10, rules: CURRENT_RULES }));
    });
    expect(inside.map((m) => m.content)).toEqual(['kayak at dawn']);
  });

  it('match the words literally, whatever FTS syntax they hold', async () => {
    const ws = uniqueId();
    await addMessages(database.store, ws, 's', [['alice', 'NEAR the AND gate, OR not']]);
    for (const terms of [['NEAR'], ['AND'], ['OR', 'not'], ['gate"'], ['content'], ['search_scope']]) {
      const found = await search(database.store, { workspaceId: ws, terms });
      expect(found.length, terms.join(' ')).toBe(['content', 'search_scope'].includes(terms[0]) ? 0 : 1);
    }
  });

  it('hand back each candidate\'s id and text exactly as stored, newest first, whatever characters the text holds', async () => {
    const ws = uniqueId();
    const other = uniqueId();
    // text SQLite's JSON arrays must escape or could take for JSON: quotes, backslashes, control
    // characters, a JSON document, characters beyond ASCII and beyond the basic plane
    const texts = [
      'zither "quoted" and \\backslashed\\ \\u0041',
      'zither\ttab\nnew line\r\u0001\u001f\u007f',
      '{"zither": [1, 2, {"a": null}]}',
      '["zither", 1]',
      'zither 42',
      'Zither ünïcödé 中文 😀 \u2028\u2029',
      'zither' + ' long'.repeat(5_000),
    ];
    await addMessages(database.store, ws, 's', texts.map((text) => ['alice', text]));
    await addMessages(database.store, other, 's', [['bob', 'zither of another workspace']]);
    const found = await search(database.store, { workspaceId: ws, terms: ['zither'] });
    expect(found.map((c) => c.content)).toEqual([...texts].reverse());
    expect(found.map((c) => c.seq)).toEqual([...found.map((c) => c.seq)].sort((a, b) => b - a));
    const stored = await database.store.messages.bySeqs(ws, found.map((c) => c.seq));
    const byId = new Map(stored.map((m) => [m.id, m.content]));
    for (const candidate of found) expect(byId.get(candidate.id)).toBe(candidate.content);
    // read again by seq, with a seq of another workspace among them: that one is left out
    const [theirs] = await search(database.store, { workspaceId: other, terms: ['zither'] });
    const contents = await database.store.messages.searchContents(ws, [theirs.seq, ...found.map((c) => c.seq)]);
    expect(contents.map((c) => c.content).sort()).toEqual([...texts].sort());
    expect(new Set(contents.map((c) => `${c.seq} ${c.id}`))).toEqual(new Set(found.map((c) => `${c.seq} ${c.id}`)));
    expect(await database.store.messages.searchContents(other, found.map((c) => c.seq))).toEqual([]);
  });
});

describe('a term\'s matches', () => {
  const matches = (store: Pick<Store, 'messages'>, query: Partial<MessageSearch> & { workspaceId: string; terms: string[] }) =>
    store.messages.searchMatches({ filter: null, candidates: 3, ...query });

  it('keep to the workspace when another holds more and newer matches', async () => {
    const database = await openFreshDatabase();
    try {
      const { store, driver } = database;
      await addMessages(store, 'mine', 's', [['alice', 'otter one'], ['alice', 'otter two'], ['alice', 'heron']]);
      const mine = (await driver.all<{ pk: number | string }>("SELECT pk FROM messages WHERE workspace_id = 'mine' AND content LIKE 'otter%' ORDER BY pk DESC")).map((r) => Number(r.pk));
      expect(await matches(store, { workspaceId: 'mine', terms: ['otter'] })).toEqual(mine);
      await addMessages(store, 'theirs', 's', [['alice', 'otter a'], ['alice', 'otter b'], ['alice', 'otter c']]);
      expect(await matches(store, { workspaceId: 'mine', terms: ['otter'] })).toEqual(mine);
      expect(await matches(store, { workspaceId: 'mine', terms: ['otter'], sessionId: 's' })).toEqual(mine);
      expect(await matches(store, { workspaceId: 'mine', terms: ['otter'], peerId: 'alice' })).toEqual(mine);
      expect(await matches(store, { workspaceId: 'theirs', terms: ['heron'] })).toEqual([]);
    } finally {
      await database.close();
    }
  });

  it('are the same read from the index alone as read with each message\'s row', async () => {
    const database = await openFreshDatabase();
    try {
      const { store } = database;
      for (const session of ['a', 'b', 'c']) {
        await addMessages(store, 'w', session, [['alice', `lark ${session}`], ['bob', `lark and wren ${session}`], ['bob', `wren ${session}`]]);
      }
      // the dialect without its index-only reading: every match's row read and checked
      const withRows = new SqlMessageStore(database.driver, { ...DIALECTS[DIALECT], messageSearch: (s) => ({ ...DIALECTS[DIALECT].messageSearch(s), keys: undefined }) });
      const sessions: FilterNode = { kind: 'in', column: 'session_id', values: ['a', 'c'].map((value) => ({ type: 'text', value })), orNull: false };
      const searches: (Partial<MessageSearch> & { workspaceId: string; terms: string[] })[] = [
        { workspaceId: 'w', terms: ['lark'], candidates: 10 },
        { workspaceId: 'w', terms: ['wren'], candidates: 2 },
        { workspaceId: 'w', terms: ['wren'], sessionId: 'b' },
        { workspaceId: 'w', terms: ['lark'], peerId: 'bob' },
        { workspaceId: 'w', terms: ['lark'], filter: sessions, withinSessions: ['a', 'c'], filterIsWithinSessions: true, candidates: 10 },
        { workspaceId: 'w', terms: ['nowhere'] },
      ];
      for (const search of searches) {
        expect(await matches(store, search), JSON.stringify(search)).toEqual(await matches({ messages: withRows }, search));
      }
      expect(await matches(store, searches[4])).toHaveLength(4);
    } finally {
      await database.close();
    }
  });
});

describe('a small workspace\'s search beside a large one', () => {
  it('finds its own matches, narrowed on SQLite to its sessions when the word is common in the database', async () => {
    const database = await openFreshDatabase();
    try {
      const { store, driver } = database;
      await addMessages(store, 'small', 'a', [['alice', 'falcon a'], ['alice', 'rare kestrel']]);
      await addMessages(store, 'small', 'b', [['bob', 'falcon b']]);
      await addMessages(store, 'empty', 'a', []);
      for (let i = 0; i < 4; i++) await addMessages(store, 'large', `s${i}`, Array.from({ length: 8 }, (_, k): [string, string] => ['carol', `falcon ${i} ${k}`]));
      const pks = async (workspace: string, like: string) =>
        (await driver.all<{ pk: number | string }>('SELECT pk FROM messages WHERE workspace_id = ? AND content LIKE ? ORDER BY pk DESC', [workspace, like])).map((r) => Number(r.pk));
      const { executor, issued } = recordingExecutor(driver);
      const messages = new SqlMessageStore(executor, DIALECTS[DIALECT]);
      const matchText = () => issued.filter((s) => s.sql.includes('MATCH')).map((s) => String(s.params[0]));

      const ask = { workspaceId: 'small', terms: ['falcon'], filter: null, candidates: 3 };
      expect(await messages.searchMatches(ask)).toEqual(await pks('small', 'falcon%'));
      expect((await messages.searchCandidates(ask)).map((c) => c.content).sort()).toEqual(['falcon a', 'falcon b']);
      // with the terms of the sessions that hold the workspace's messages, on SQLite
      if (DIALECT === 'sqlite') expect(matchText().filter((text) => text.includes('search_scope'))).toHaveLength(2);
      issued.length = 0;
      // a word in few messages of the database: walked as it is
      expect(await messages.searchMatches({ ...ask, terms: ['kestrel'] })).toEqual(await pks('small', 'rare%'));
      expect(matchText().some((text) => text.includes('search_scope'))).toBe(false);
      // the large workspace is not narrowed; a workspace without messages finds nothing
      expect(await messages.searchMatches({ ...ask, workspaceId: 'large', candidates: 100 })).toEqual(await pks('large', 'falcon%'));
      expect(matchText().some((text) => text.includes('search_scope'))).toBe(false);
      expect(await messages.searchMatches({ ...ask, workspaceId: 'empty' })).toEqual([]);
      expect(await messages.searchCandidates({ ...ask, workspaceId: 'nowhere' })).toEqual([]);
    } finally {
      await database.close();
    }
  });
});

describe.runIf(DIALECT === 'sqlite')('a term\'s matches on SQLite', () => {
  /** The plans of the statements a term's matches read, and what they found. */
  async function matchPlans(executor: SqlExecutor, search: Partial<MessageSearch> & { workspaceId: string; terms: string[] }, between?: () => Promise<void>) {
    const { executor: spy, issued } = recordingExecutor(executor);
    const checked: SqlExecutor = {
      ...spy,
      // a write between the check for other workspaces and the read of the index
      get: async <T>(sql: string, params?: readonly unknown[]) => {
        const row = await spy.get<T>(sql, params);
        if (sql.includes(' AS others') && between !== undefined) await between();
        return row;
      },
    };
    const found = await new SqlMessageStore(checked, DIALECTS.sqlite).searchMatches({ filter: null, candidates: 10, ...search });
    const plans = await Promise.all(issued.filter((s) => s.sql.includes('MATCH')).map((s) => planLines(executor, s)));
    return { found, plans: plans.map((lines) => lines.join(' | ')) };
  }

  it('are read from the index alone in a workspace alone in its database, and in a session or sender anywhere', async () => {
    const database = await openDatabase(':memory:');
    try {
      const { store, driver } = database;
      await addMessages(store, 'only', 's1', [['alice', 'puffin here'], ['bob', 'puffin there']]);
      const alone = await matchPlans(driver, { workspaceId: 'only', terms: ['puffin'] });
      expect(alone.found).toHaveLength(2);
      expect(alone.plans).toHaveLength(1);
      expect(alone.plans[0]).not.toMatch(/SEARCH m /);

      // a second workspace: its search reads the rows again, a session's still does not
      await addMessages(store, 'second', 's1', [['alice', 'puffin elsewhere']]);
      const beside = await matchPlans(driver, { workspaceId: 'only', terms: ['puffin'] });
      expect(beside.found).toEqual(alone.found);
      expect(beside.plans).toHaveLength(1);
      expect(beside.plans[0]).toMatch(/SEARCH m USING INTEGER PRIMARY KEY/);
      const session = await matchPlans(driver, { workspaceId: 'only', terms: ['puffin'], sessionId: 's1' });
      expect(session.found).toEqual(alone.found);
      expect(session.plans).toEqual([expect.not.stringMatching(/SEARCH m /)]);
      // a filter beyond the sessions the index holds needs the rows
      const filtered = await matchPlans(driver, { workspaceId: 'only', terms: ['puffin'], peerPerspective: 'alice' });
      expect(filtered.plans[0]).toMatch(/SEARCH m /);
    } finally {
      await database.driver.close();
    }
  });

  it('never hold a message another workspace got between the check and the read', async () => {
    const database = await openDatabase(':memory:');
    try {
      const { store, driver } = database;
      await addMessages(store, 'only', 's1', [['alice', 'gannet one'], ['alice', 'gannet two']]);
      const own = (await matchPlans(driver, { workspaceId: 'only', terms: ['gannet'] })).found;
      let added = false;
      const raced = await matchPlans(driver, { workspaceId: 'only', terms: ['gannet'] }, async () => {
        if (added) return;
        added = true;
        await addMessages(store, 'newcomer', 's1', [['alice', 'gannet newer'], ['alice', 'gannet newest']]);
      });
      expect(added).toBe(true);
      expect(raced.found).toEqual(own);
      // the index read found nothing (its bound), and the rows were read
      expect(raced.plans).toHaveLength(2);
    } finally {
      await database.driver.close();
    }
  });

  it("of a workspace of many sessions among larger others are kept to its keys in the index's walk when the word is common", async () => {
    const database = await openDatabase(':memory:');
    try {
      const { store, driver } = database;
      // 20 sessions (more than the index's session tokens narrow to), 60 messages, some of them
      // older and some newer than the other workspace's 900
      const own = async (from: number) => {
        for (let s = from; s < from + 10; s++) {
          await addMessages(store, 'small', `s${s}`, [['alice', `falcon ${s}`], ['bob', s === 3 ? 'kestrel once' : `plain ${s}`], ['alice', `falcon again ${s}`]]);
        }
      };
      await own(0);
      for (let i = 0; i < 9; i++) await addMessages(store, 'large', `l${i}`, Array.from({ length: 100 }, (_, k): [string, string] => ['carol', `falcon ${i} ${k} kestrel`]));
      await own(10);
      const pks = async (workspace: string, like: string, limit: number) =>
        (await driver.all<{ pk: number | string }>('SELECT pk FROM messages WHERE workspace_id = ? AND content LIKE ? ORDER BY pk DESC LIMIT ?', [workspace, like, limit])).map((r) =>
          Number(r.pk),
        );
      const keysOf = (plans: string[]) => plans.filter((plan) => /LIST SUBQUERY/.test(plan));

      // a common word (900 matches of another workspace): its keys, read from the index alone
      const common = await matchPlans(driver, { workspaceId: 'small', terms: ['falcon'], candidates: 25 });
      expect(common.found).toEqual(await pks('small', 'falcon%', 25));
      expect(keysOf(common.plans)).toHaveLength(1);
      expect(common.plans.at(-1)).not.toMatch(/SEARCH m /);
      // every match of the workspace (fewer than the candidates), older ones behind the others'
      const all = await matchPlans(driver, { workspaceId: 'small', terms: ['falcon'], candidates: 100 });
      expect(all.found).toEqual(await pks('small', 'falcon%', 100));
      expect(all.found).toHaveLength(40);
      // with a condition on the rows: the rows of its own matches only
      const byAlice: FilterNode = { kind: 'in', column: 'peer_id', values: [{ type: 'text', value: 'alice' }], orNull: false };
      const seen = await matchPlans(driver, { workspaceId: 'small', terms: ['falcon'], candidates: 100, filter: byAlice });
      expect(seen.found).toEqual(all.found);
      expect(keysOf(seen.plans)).toHaveLength(1);
      expect(seen.plans.at(-1)).toMatch(/SEARCH m /);
      const candidates = await new SqlMessageStore(driver, DIALECTS.sqlite).searchCandidates({ workspaceId: 'small', terms: ['falcon'], filter: null, candidates: 100 });
      expect(candidates.map((c) => c.content).sort()).toEqual(
        (await driver.all<{ content: string }>("SELECT content FROM messages WHERE workspace_id = 'small' AND content LIKE 'falcon%'")).map((r) => r.content).sort(),
      );

      // the large workspace, and a word found in few messages of the database, are walked as before
      const large = await matchPlans(driver, { workspaceId: 'large', terms: ['falcon'], candidates: 100 });
      expect(large.found).toEqual(await pks('large', 'falcon%', 100));
      expect(keysOf(large.plans)).toEqual([]);
      await addMessages(store, 'small', 's20', [['bob', 'merlin here']]);
      const rare = await matchPlans(driver, { workspaceId: 'small', terms: ['merlin'], candidates: 10 });
      expect(rare.found).toEqual(await pks('small', 'merlin%', 10));
      expect(keysOf(rare.plans)).toEqual([]);
      // kestrel: once in the workspace, 900 times in the other
      const once = await matchPlans(driver, { workspaceId: 'small', terms: ['kestrel'], candidates: 10 });
      expect(once.found).toEqual(await pks('small', 'kestrel%', 10));
      expect(once.found).toHaveLength(1);
      expect(keysOf(once.plans)).toHaveLength(1);
    } finally {
      await database.driver.close();
    }
  });
});

describe.runIf(DIALECT === 'sqlite')('the SQLite search index', () => {
  it('finds, in a workspace alone in its database, what it finds beside others', async () => {
    const database = await openDatabase(':memory:');
    try {
      await addMessages(database.store, 'only', 's1', [['alice', 'kayak trip'], ['bob', 'kayak repair']]);
      await addMessages(database.store, 'only', 's2', [['alice', 'kayak sale']]);
      const kayak = { workspaceId: 'only', terms: ['kayak'] };
      expect(await search(database.store, kayak)).toHaveLength(3);
      expect(await search(database.store, { ...kayak, sessionId: 's1' })).toHaveLength(2);
      await addMessages(database.store, 'second', 's1', [['alice', 'kayak elsewhere']]);
      expect((await search(database.store, kayak)).map((c) => c.content).sort()).toEqual(['kayak repair', 'kayak sale', 'kayak trip']);
    } finally {
      await database.driver.close();
    }
  });

  it('is rebuilt with the scopes by migration 0007, and kept in step with deletes', async () => {
    const driver = new SqliteDriver(':memory:');
    try {
      await migrate(driver, { through: '0006_peer_list_version' });
      const store = SqlStore.over(driver);
      await store.workspaces.createIfAbsent({ id: 'ws', metadata: {}, configuration: {} }, new Date());
      for (const peer of ['alice', 'bob']) {
        await driver.run("INSERT INTO peers (workspace_id, id, metadata, configuration, created_at) VALUES ('ws', ?, '{}', '{}', 0)", [peer]);
      }
      await addMessages(store, 'ws', 'before', [['alice', 'glacier walk'], ['bob', 'glacier photo']], true);
      const steps = await migrate(driver);
      expect(steps.filter((step) => step.applied).map((step) => step.name)).toContain('0007_search_scope');
      await addMessages(store, 'ws', 'after', [['alice', 'glacier melt']]);
      expect(await search(store, { workspaceId: 'ws', terms: ['glacier'], sessionId: 'before' })).toHaveLength(2);
      expect(await search(store, { workspaceId: 'ws', terms: ['glacier'], peerId: 'alice' })).toHaveLength(2);
      await driver.run("DELETE FROM messages WHERE content = 'glacier photo'");
      expect(await search(store, { workspaceId: 'ws', terms: ['glacier'] })).toHaveLength(2);
      // compares the index with the messages table; throws when they differ
      await expect(driver.run("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")).resolves.toBeDefined();
    } finally {
      await driver.close();
    }
  });
});
