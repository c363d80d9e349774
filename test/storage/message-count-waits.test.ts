import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/runtime/database.js';
import { DIALECT, ownPostgresDatabase } from '../support/test-app.js';

/*
 * A workspace's kept message count on PostgreSQL (migrations 0047 and 0049): writers of one
 * workspace's messages on different connections must not wait for each other's count, even when
 * their connections count into the same stripe (a stripe is the backend's id modulo their
 * number; with two processes' pools, twenty connections share sixteen stripes). The wait is read
 * from PostgreSQL's own lock table, not a clock: the second writer runs under a lock_timeout and
 * pg_blocking_pids names what it waits for while it runs.
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function connect(url: string): Promise<pg.Client & { pid: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  cleanups.push(() => client.end());
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return Object.assign(client, { pid: rows[0].pid });
}

const insertMessage = (client: pg.Client, id: string) =>
  client.query(
    `INSERT INTO messages (id, workspace_id, session_id, peer_id, content, metadata, token_count, created_at)
     VALUES ($1, 'w', $2, 'alice', 'hello', '{}', 1, now())`,
    [id, id.startsWith('a') ? 's1' : 's2'],
  );

describe.runIf(DIALECT === 'postgres')("a workspace's message count (PostgreSQL)", () => {
  it("lets two writers of one workspace's messages go on side by side, their connections on one stripe", async () => {
    const own = await ownPostgresDatabase();
    cleanups.push(own.drop);
    const database = await openDatabase(own.url);
    cleanups.push(() => database.driver.close());
    await database.store.workspaces.createIfAbsent({ id: 'w', metadata: {}, configuration: {} }, new Date());
    await database.store.peers.ensure('w', ['alice'], new Date());
    for (const id of ['s1', 's2']) await database.store.sessions.createIfAbsent('w', { id, metadata: {}, configuration: {} }, new Date());
    const stripes = await database.driver.all<{ n: string }>('SELECT COUNT(*) AS n FROM message_counts');
    expect(Number(stripes[0].n)).toBe(0);

    // two connections whose backends count into one stripe (of 16: among 17 there are two)
    const opened: (pg.Client & { pid: number })[] = [];
    let pair: [pg.Client & { pid: number }, pg.Client & { pid: number }] | undefined;
    while (pair === undefined) {
      const next = await connect(own.url);
      const same = opened.find((client) => client.pid % 16 === next.pid % 16);
      if (same !== undefined) pair = [same, next];
      else opened.push(next);
      expect(opened.length).toBeLessThanOrEqual(16);
    }
    const [first, second] = pair;

    // the first writer holds its transaction open after its message
    await first.query('BEGIN');
    await insertMessage(first, 'a1');
    // the second writes its own message in another session of the workspace, and commits
    await second.query("SET lock_timeout = '2s'");
    let blockers: number[] = [];
    const watching = (async () => {
      const watcher = await connect(own.url);
      for (let i = 0; i < 20; i++) {
        const { rows } = await watcher.query<{ blockers: number[] }>('SELECT pg_blocking_pids($1) AS blockers', [second.pid]);
        if (rows[0].blockers.length > 0) blockers = rows[0].blockers;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const written = await second
      .query('BEGIN')
      .then(() => insertMessage(second, 'b1'))
      .then(() => second.query('COMMIT'))
      .then(
        () => 'committed',
        (error: Error) => error.message,
      );
    await watching;
    expect(written).toBe('committed');
    expect(blockers).toEqual([]);
    await first.query('COMMIT');

    // both counted: the workspace's count is the sum of its stripes
    const [{ n }] = await database.driver.all<{ n: string }>("SELECT SUM(n) AS n FROM message_counts WHERE workspace_id = 'w'");
    expect(Number(n)).toBe(2);
  });
});
