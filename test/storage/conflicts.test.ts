import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { purgeDeletedSession } from '../../src/domain/follow-ups.js';
import { CONFLICT_ATTEMPTS } from '../../src/storage/postgres/postgres-driver.js';
import { RowVanishedError } from '../../src/storage/sql/driver.js';
import { StoreUnavailableError } from '../../src/storage/store.js';
import { buildTestApp, DIALECT, TEST_DATABASE_URL, uniqueId, type TestApi } from '../support/test-app.js';
import { makeApp, makeScope, makeSession, makeUser } from '../http/v1/fixtures.js';

/*
 * Concurrent writers on one database. On PostgreSQL, transactions that take the same rows in
 * opposite orders deadlock: the server ends one of them after a second (deadlock_timeout). The
 * store keeps one order (the workspace row before peer rows) where its own triggers would take
 * both, and the driver runs work that a conflict ended again (postgres-driver.ts).
 */

describe('concurrent writes to a workspace, its peers and their sessions', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await buildTestApp({ METRICS_ENABLED: 'true' });
  });
  afterAll(() => api.close());

  it('adding new peers to sessions while their members change: all succeed, none waits on a deadlock', async () => {
    const app = await makeApp(api);
    const ws = app.name;
    const member = await makeUser(api, app.id, 'member');
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 'shared' })).status).toBe(201);
    const before = api.database.driver.conflicts.retried;
    const rounds = 25;
    const statuses: number[] = [];
    for (let i = 0; i < rounds; i++) {
      // each new peer is inserted (the workspace row's peer count) before the member's
      // membership (the member's row); each member update takes the member's row
      const responses = await Promise.all([
        api.post(`/v3/workspaces/${ws}/sessions/shared/peers`, { [`new-${i}`]: {}, member: {} }),
        api.put(`/v3/workspaces/${ws}/peers/member`, { metadata: { v3: i } }),
        api.post(`/v3/workspaces/${ws}/sessions`, { id: `own-${i}`, peers: { [`other-${i}`]: {}, member: {} } }),
        api.put(`/v1/apps/${app.id}/users/${member.id}`, { metadata: { v1: i } }),
      ]);
      for (const response of responses) statuses.push(response.status);
    }
    expect(statuses.filter((status) => status >= 300)).toEqual([]);
    // nothing was ended and run again: the writers took the rows in one order
    expect(api.database.driver.conflicts.retried - before).toBe(0);

    const shared = await api.get(`/v3/workspaces/${ws}/sessions/shared/peers?size=100`);
    expect(shared.body.items.map((peer: { id: string }) => peer.id).sort()).toEqual(
      ['member', ...Array.from({ length: rounds }, (_, i) => `new-${i}`)].sort(),
    );
    const sessions = await api.post(`/v3/workspaces/${ws}/peers/member/sessions?size=100`);
    expect(sessions.body.total).toBe(rounds + 1);
    const peers = await api.post(`/v3/workspaces/${ws}/peers/list?size=100`);
    expect(peers.body.total).toBe(1 + 2 * rounds);
    // the member's metadata is the last write of one of the two generations
    const last = await api.post(`/v3/workspaces/${ws}/peers`, { id: 'member' });
    expect([{ v3: rounds - 1 }, { v1: rounds - 1 }]).toContainEqual(last.body.metadata);
  }, 60_000);

  it('writes while their workspace is deleted: none fails with a 5xx; each lands before the delete or after it', async () => {
    const before = { ...api.database.driver.conflicts };
    const statuses = new Map<string, Set<number>>();
    for (let i = 0; i < 20; i++) {
      const ws = uniqueId('doomed');
      expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', peers: { p: {} } })).status).toBe(201);
      const writes = {
        'new peer': api.post(`/v3/workspaces/${ws}/peers`, { id: `n${i}` }),
        'new session': api.post(`/v3/workspaces/${ws}/sessions`, { id: `s${i}`, peers: { [`q${i}`]: {} } }),
        message: api.post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages: [{ peer_id: `m${i}`, content: 'hi' }] }),
        'peer update': api.put(`/v3/workspaces/${ws}/peers/p`, { metadata: { i } }),
        'peer card': api.put(`/v3/workspaces/${ws}/peers/p/card`, { peer_card: ['IDENTITY: p'] }),
        'workspace delete': api.delete(`/v2/workspaces/${ws}`),
      };
      for (const [name, pending] of Object.entries(writes)) {
        const { status, text } = await pending;
        expect(status, `${name}: ${text}`).toBeLessThan(500);
        statuses.set(name, (statuses.get(name) ?? new Set()).add(status));
      }
    }
    // a write after the delete creates the workspace anew (as one sent after it would);
    // a message into the deleted session finds it gone
    expect(Object.fromEntries([...statuses].map(([name, seen]) => [name, [...seen].sort()]))).toMatchObject({
      'new peer': [201],
      'new session': [201],
      'peer update': [200],
      'peer card': [200],
      'workspace delete': [200],
    });
    expect([...statuses.get('message')!].every((status) => status === 201 || status === 404)).toBe(true);
    expect(api.database.driver.conflicts.failed - before.failed).toBe(0);
  }, 60_000);

  it('a workspace delete racing session deletes and purges, new members and peer updates: none waits on a deadlock', async () => {
    const before = api.database.driver.conflicts.retried;
    for (let i = 0; i < 15; i++) {
      const ws = uniqueId('doomed');
      // sessions without messages: the delete's first steps lock none of them
      for (const id of ['a', 'b', 'c']) expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id, peers: { p: {}, q: {} } })).status).toBe(201);
      // a deleted session of many messages whose purge (the job's, in batches) runs meanwhile
      const messages = Array.from({ length: 100 }, (_, n) => ({ peer_id: 'p', content: `note ${n}` }));
      for (let sent = 0; sent < 600; sent += 100) expect((await api.post(`/v3/workspaces/${ws}/sessions/gone/messages`, { messages })).status).toBe(201);
      expect((await api.delete(`/v3/workspaces/${ws}/sessions/gone`)).status).toBe(202);
      const purge = purgeDeletedSession(api.database.store, ws, 'gone');
      const responses = await Promise.all([
        api.delete(`/v3/workspaces/${ws}/sessions/a`),
        api.delete(`/v2/workspaces/${ws}/sessions/b`),
        api.post(`/v3/workspaces/${ws}/sessions/c/peers`, { [`r${i}`]: {}, p: {} }),
        api.put(`/v3/workspaces/${ws}/peers/q`, { metadata: { i } }),
        api.delete(`/v2/workspaces/${ws}`),
        api.put(`/v3/workspaces/${ws}/sessions/c`, { metadata: { i } }),
      ]);
      for (const response of responses) expect(response.status, response.text).toBeLessThan(500);
      expect(['purged', 'absent']).toContain(await purge);
    }
    // a deadlock is found after PostgreSQL's deadlock_timeout (a second) and its victim run again
    expect(api.database.driver.conflicts.retried - before).toBe(0);
  }, 60_000);

  it('v1 writes into a session while it is purged: none fails with a 5xx, none is left behind', async () => {
    const scope = await makeScope(api);
    const ws = scope.app.name;
    for (let i = 0; i < 30; i++) {
      const session = await makeSession(api, scope);
      const id = (await api.database.driver.get<{ id: string }>('SELECT id FROM sessions WHERE v1_id = ?', [session.id]))!.id;
      // deleted through v1 (inactive, where v1 still takes messages), then purged as a v3 delete's job does
      expect((await api.delete(`${scope.base}/sessions/${session.id}`)).status).toBe(200);
      const writes = [
        api.post(`${scope.base}/sessions/${session.id}/messages`, { content: 'late', is_user: true }),
        api.post(`${scope.base}/metamessages`, { metamessage_type: 'note', content: 'late', session_id: session.id }),
        api.put(`${scope.base}/sessions/${session.id}`, { metadata: { late: i } }),
      ];
      // staggered, so the purge lands before, between and after the writes' steps
      await new Promise((resolve) => setTimeout(resolve, (i % 6) * 0.7));
      expect(await api.database.store.sessions.purgeInactive(ws, id)).toBe(true);
      for (const { status, text } of await Promise.all(writes)) expect([200, 404], text).toContain(status);
      const left = await api.database.driver.get<{ n: number | string }>(
        'SELECT (SELECT count(*) FROM messages WHERE workspace_id = ? AND session_id = ?) + (SELECT count(*) FROM metamessages WHERE workspace_id = ? AND session_id = ?) AS n',
        [ws, id, ws, id],
      );
      expect(Number(left?.n)).toBe(0);
    }
  }, 60_000);

  it('/metrics counts conflicts by outcome', async () => {
    const text = (await api.get('/metrics')).text;
    expect(text).toContain(`engram_store_conflicts_total{outcome="retried"} ${api.database.driver.conflicts.retried}`);
    expect(text).toContain(`engram_store_conflicts_total{outcome="failed"} ${api.database.driver.conflicts.failed}`);
  });
});

describe.runIf(DIALECT === 'postgres')('work a conflict ended, run again (PostgreSQL)', () => {
  let database: Database;
  let table: string;
  beforeAll(async () => {
    database = await openDatabase(TEST_DATABASE_URL);
    table = `conflicts_${uniqueId('t').replace(/-/g, '_')}`;
    await database.driver.run(`CREATE TABLE ${table} (id TEXT PRIMARY KEY, n INTEGER NOT NULL DEFAULT 0)`);
    await database.driver.run(`INSERT INTO ${table} (id) VALUES ('a'), ('b')`);
  });
  afterAll(async () => {
    await database.driver.run(`DROP TABLE IF EXISTS ${table}`);
    await database.driver.close();
  });

  const failWith = (code: string) => `DO $$ BEGIN RAISE EXCEPTION 'conflict for the test' USING ERRCODE = '${code}'; END $$`;

  it('two transactions locking two rows in opposite orders: the deadlock is resolved, both commit', async () => {
    let runs = 0;
    let bothHoldOne: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      let holding = 0;
      bothHoldOne = () => {
        if (++holding === 2) resolve();
      };
    });
    const lockInOrder = (first: string, second: string) =>
      database.driver.transaction(async (tx) => {
        runs++;
        await tx.run(`UPDATE ${table} SET n = n + 1 WHERE id = ?`, [first]);
        // only the first attempts meet: a run again goes straight on
        if (runs <= 2) {
          bothHoldOne();
          await held;
        }
        await tx.run(`UPDATE ${table} SET n = n + 1 WHERE id = ?`, [second]);
        return `${first}${second}`;
      });
    const before = { ...database.driver.conflicts };
    expect(await Promise.all([lockInOrder('a', 'b'), lockInOrder('b', 'a')])).toEqual(['ab', 'ba']);
    // one of them was ended by the deadlock and ran again
    expect(runs).toBe(3);
    expect(database.driver.conflicts.retried - before.retried).toBe(1);
    expect(database.driver.conflicts.failed - before.failed).toBe(0);
    // each committed once: the ended attempt's update was rolled back
    const rows = await database.driver.all<{ id: string; n: number }>(`SELECT id, n FROM ${table} ORDER BY id`);
    expect(rows).toEqual([
      { id: 'a', n: 2 },
      { id: 'b', n: 2 },
    ]);
  }, 30_000);

  it('a transaction ended by a serialization failure runs again, and only the attempt that commits counts', async () => {
    const id = uniqueId('row');
    let runs = 0;
    const result = await database.driver.transaction(async (tx) => {
      runs++;
      await tx.run(`INSERT INTO ${table} (id, n) VALUES (?, ?)`, [id, runs]);
      if (runs === 1) {
        // the work catches the failure and throws its own error: the attempt is still run again
        await tx.run(failWith('40001')).catch(() => {
          throw new Error('something else');
        });
      }
      return runs;
    });
    expect(result).toBe(2);
    expect(await database.driver.all(`SELECT n FROM ${table} WHERE id = ?`, [id])).toEqual([{ n: 2 }]);
  });

  /** A transaction failing with `code` every time it runs: how many times it ran, and what it threw. */
  async function failingEveryTime(code: string): Promise<{ runs: number; error: unknown }> {
    let runs = 0;
    const error = await database.driver
      .transaction(async (tx) => {
        runs++;
        await tx.run(failWith(code));
      })
      .then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
    return { runs, error };
  }

  it(`gives up after ${CONFLICT_ATTEMPTS} attempts with a 503's error, and counts it`, async () => {
    const before = { ...database.driver.conflicts };
    const { runs, error } = await failingEveryTime('40P01');
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error).toMatchObject({ reason: 'conflict 40P01' });
    expect(runs).toBe(CONFLICT_ATTEMPTS);
    // a statement of its own is run again the same way
    await expect(database.driver.run(failWith('40001'))).rejects.toMatchObject({ reason: 'conflict 40001' });
    expect(database.driver.conflicts.retried - before.retried).toBe(2 * (CONFLICT_ATTEMPTS - 1));
    expect(database.driver.conflicts.failed - before.failed).toBe(2);
  });

  it('a child whose parent another commit deleted meanwhile (a foreign key violation) runs again and sees the deletion', async () => {
    const child = `${table}_child`;
    await database.driver.run(`CREATE TABLE ${child} (id TEXT PRIMARY KEY, parent TEXT NOT NULL REFERENCES ${table} (id) ON DELETE CASCADE)`);
    try {
      const parent = uniqueId('parent');
      await database.driver.run(`INSERT INTO ${table} (id) VALUES (?)`, [parent]);
      const before = { ...database.driver.conflicts };
      let runs = 0;
      const result = await database.driver.transaction(async (tx) => {
        runs++;
        if ((await tx.get(`SELECT id FROM ${table} WHERE id = ?`, [parent])) === undefined) return 'parent gone';
        // checked, then deleted by another transaction before the child is inserted
        if (runs === 1) await database.driver.run(`DELETE FROM ${table} WHERE id = ?`, [parent]);
        await tx.run(`INSERT INTO ${child} (id, parent) VALUES (?, ?)`, [uniqueId('child'), parent]);
        return 'child stored';
      });
      expect(result).toBe('parent gone');
      expect(runs).toBe(2);
      expect(database.driver.conflicts.retried - before.retried).toBe(1);
      expect(await database.driver.all(`SELECT id FROM ${child}`)).toEqual([]);
    } finally {
      await database.driver.run(`DROP TABLE ${child}`);
    }
  });

  it(`work that meets a foreign key violation on each of its ${CONFLICT_ATTEMPTS} runs is thrown its error as it is, not a 503`, async () => {
    const before = { ...database.driver.conflicts };
    const { runs, error } = await failingEveryTime('23503');
    expect(error).toMatchObject({ code: '23503' });
    expect(runs).toBe(CONFLICT_ATTEMPTS);
    expect(database.driver.conflicts.retried - before.retried).toBe(CONFLICT_ATTEMPTS - 1);
    expect(database.driver.conflicts.failed - before.failed).toBe(1);
  });

  it('a row that vanished during a get-or-create (RowVanishedError) runs the work again', async () => {
    let runs = 0;
    const result = await database.driver.transaction(async () => {
      if (++runs === 1) throw new RowVanishedError('row x vanished during get-or-create');
      return runs;
    });
    expect(result).toBe(2);
  });

  it('other errors are not run again', async () => {
    const { runs, error } = await failingEveryTime('23505');
    expect(error).toMatchObject({ code: '23505' });
    expect(runs).toBe(1);
  });
});

describe.runIf(DIALECT === 'postgres')('a message and a delete of its session at once (PostgreSQL)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await buildTestApp();
  });
  afterAll(() => api.close());

  /** Resolves once a statement of this database waits for a row lock. */
  async function someoneWaitsForALock(): Promise<void> {
    for (let tries = 0; tries < 500; tries++) {
      const row = await api.database.driver.get<{ n: number }>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      );
      if (Number(row?.n) > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('no statement waited for a lock');
  }

  // each write into a session, sent while the session's delete is held open
  const writes: { name: string; send: (ws: string) => Promise<Awaited<ReturnType<TestApi['post']>>>; status?: number }[] = [
    { name: 'a message', send: (ws) => api.post(`/v3/workspaces/${ws}/sessions/doomed/messages`, { messages: [{ peer_id: 'newcomer', content: 'hello' }] }) },
    { name: 'adding peers', send: (ws) => api.post(`/v3/workspaces/${ws}/sessions/doomed/peers`, { newcomer: {} }) },
    { name: 'replacing the peers', send: (ws) => api.put(`/v3/workspaces/${ws}/sessions/doomed/peers`, { newcomer: {} }) },
    { name: 'removing a peer', send: (ws) => api.delete(`/v3/workspaces/${ws}/sessions/doomed/peers`, ['member']) },
    { name: "a peer's config", send: (ws) => api.put(`/v3/workspaces/${ws}/sessions/doomed/peers/member/config`, { observe_others: true }) },
    { name: 'a session update', send: (ws) => api.put(`/v3/workspaces/${ws}/sessions/doomed`, { metadata: { late: true } }) },
    { name: 'a get-or-create with peers', send: (ws) => api.post(`/v3/workspaces/${ws}/sessions`, { id: 'doomed', peers: { newcomer: {} } }) },
  ];

  it.each(writes)('$name, when the session was deleted while it waited, is a 404 and changes nothing', async ({ send }) => {
    const ws = uniqueId();
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 'doomed', peers: { member: {} } })).status).toBe(201);
    const contents = () =>
      api.database.driver.all(
        `SELECT 'm' AS t, peer_id AS k, '' AS v FROM messages WHERE workspace_id = ?
         UNION ALL SELECT 'p', peer_id, CAST(left_at IS NULL AS TEXT) || CAST(configuration AS TEXT) FROM session_peers WHERE workspace_id = ?
         UNION ALL SELECT 's', id, CAST(metadata AS TEXT) FROM sessions WHERE workspace_id = ? ORDER BY 1, 2`,
        [ws, ws, ws],
      );
    let response: Awaited<ReturnType<TestApi['post']>> | undefined;
    let deleted: unknown[] = [];
    await api.database.driver.transaction(async (tx) => {
      // the delete's first step, held open: the session's row is locked, not yet inactive
      await tx.run('UPDATE sessions SET is_active = false WHERE workspace_id = ? AND id = ?', [ws, 'doomed']);
      deleted = await contents();
      void send(ws).then((answer) => (response = answer));
      await someoneWaitsForALock();
      expect(response).toBeUndefined();
    });
    await vi.waitFor(() => expect(response).toBeDefined(), { timeout: 10_000 });
    expect(response!.status).toBe(404);
    expect(response!.body).toEqual({ detail: `Session doomed not found in workspace ${ws}` });
    // as the delete left it (read from outside the delete's transaction, so before it: only is_active differs)
    expect(await contents()).toEqual(deleted);
  });
});
