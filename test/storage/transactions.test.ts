import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import type { NewJob } from '../../src/storage/store.js';
import { TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

/*
 * Transactions span awaits. On SQLite one connection serves every request, so the driver queues
 * them: many waiting callers must each get the connection in turn, and a plain statement waiting
 * for a transaction must never run inside the next one (its write would share that one's fate).
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let database: Database;
beforeAll(async () => {
  database = await openDatabase(TEST_DATABASE_URL);
});
afterAll(() => database.driver.close());

const job = (id: string): NewJob => ({ id, kind: 'test.tx', workspaceId: null, queueKey: uniqueId('q'), payload: {}, maxAttempts: 1 });
const exists = async (id: string) => (await database.driver.get('SELECT id FROM jobs WHERE id = ?', [id])) !== undefined;

describe('transactions', () => {
  it('many at once, each spanning awaits, all commit in turn', async () => {
    const ids = Array.from({ length: 12 }, () => uniqueId('job'));
    await Promise.all(
      ids.map((id) =>
        database.store.transaction(async (tx) => {
          await sleep(2);
          await tx.jobs.enqueue([job(id)], new Date());
          await sleep(2);
        }),
      ),
    );
    expect(await Promise.all(ids.map(exists))).toEqual(ids.map(() => true));
  });

  it('a plain write that waited for one transaction is not taken into the next one, which rolls back', async () => {
    const first = uniqueId('job');
    const plain = uniqueId('job');
    const rolledBack = uniqueId('job');
    const opened = database.store.transaction(async (tx) => {
      await tx.jobs.enqueue([job(first)], new Date());
      await sleep(20);
    });
    await sleep(1);
    // both wait for the open transaction: the plain write first, then a transaction that fails
    const write = database.store.jobs.enqueue([job(plain)], new Date());
    const failing = database.store.transaction(async (tx) => {
      await tx.jobs.enqueue([job(rolledBack)], new Date());
      await sleep(20);
      throw new Error('roll back');
    });
    // heard at once: on PostgreSQL the transactions run side by side, and this one may end first
    const failed = expect(failing).rejects.toThrow('roll back');
    await opened;
    await write;
    await failed;
    expect([await exists(first), await exists(plain), await exists(rolledBack)]).toEqual([true, true, false]);
  });
});
