import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { DIALECTS } from '../../src/storage/sql/dialects.js';
import { SqlJobStore } from '../../src/storage/sql/job-store.js';
import { planLines, recordingExecutor } from '../support/recording-executor.js';
import type { NewJob, NewRepresentationItem } from '../../src/storage/store.js';
import { TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

/*
 * What a message write queues for the deriver, in fewer round trips on PostgreSQL: the items
 * with their units' totals (addItemsWithTotals) and the units' jobs moved for all units at once,
 * in the statement that queues the write's other jobs (enqueue's `scheduled` jobs). Each is
 * checked against the statements it stands for.
 */

let database: Database;
beforeAll(async () => {
  database = await openDatabase(TEST_DATABASE_URL);
});
afterAll(() => database.driver.close());

/** A workspace with session `s` and `count` stored messages, alternating alice and bob; their pks and ids. */
async function sessionWithMessages(count: number) {
  const { store } = database;
  const workspaceId = uniqueId('units');
  const now = new Date();
  await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, now);
  await store.sessions.createIfAbsent(workspaceId, { id: 's', metadata: {}, configuration: {} }, now);
  await store.peers.ensure(workspaceId, ['alice', 'bob'], now);
  const records = Array.from({ length: count }, (_, i) => ({
    id: uniqueId('m'),
    workspaceId,
    sessionId: 's',
    peerId: i % 2 === 0 ? 'alice' : 'bob',
    content: `turn ${i}`,
    metadata: {},
    tokenCount: 10 + i,
    createdAt: now,
  }));
  const pks = await store.messages.insert(records);
  return { workspaceId, messages: records.map((record, i) => ({ ...record, pk: pks[i] })) };
}

const itemOf = (m: { id: string; pk: number; workspaceId: string; peerId: string; tokenCount: number }): NewRepresentationItem => ({
  workspaceId: m.workspaceId,
  sessionId: 's',
  observedId: m.peerId,
  messageId: m.id,
  messagePk: m.pk,
  tokens: m.tokenCount,
  observers: [m.peerId],
  customInstructions: null,
});

describe("a message write's reasoning work", () => {
  it("adds items and returns their units' totals after them, as the two statements it replaces", async () => {
    const { store, driver } = database;
    const { workspaceId, messages } = await sessionWithMessages(8);
    const earlier = new Date(Date.now() - 120_000);
    // open items before: messages 0 to 3; message 1's (bob's) processed since
    expect(await store.reasoning.addRepresentationItems(messages.slice(0, 4).map(itemOf), earlier)).toBe(4);
    await driver.run('UPDATE representation_items SET processed_at = ? WHERE message_id = ?', [DIALECTS[driver.dialect].time(new Date()), messages[1].id]);

    // message 2 again (already queued: left as it is), and 4 to 6
    const now = new Date();
    const result = await store.reasoning.addItemsWithTotals([2, 4, 5, 6].map((i) => itemOf(messages[i])), now);
    expect(result.added).toBe(3);
    const read = await store.reasoning.openUnitsTotals(workspaceId, 's', ['alice', 'bob']);
    const plain = (totals: Map<string, { items: number; tokens: number; oldest: Date | undefined }>) =>
      Object.fromEntries([...totals].map(([peer, t]) => [peer, { items: t.items, tokens: t.tokens, oldest: t.oldest?.getTime() }]));
    expect(plain(result.totals)).toEqual(plain(read));
    // alice: 0, 2 (open before), 4, 6; bob: 3 (open before), 5 — 1 was processed
    expect(plain(result.totals)).toEqual({
      alice: { items: 4, tokens: 10 + 12 + 14 + 16, oldest: read.get('alice')!.oldest!.getTime() },
      bob: { items: 2, tokens: 13 + 15, oldest: read.get('bob')!.oldest!.getTime() },
    });
    expect(Math.abs(read.get('alice')!.oldest!.getTime() - earlier.getTime())).toBeLessThan(2);

    // a unit with no open item before: only what the statement added
    const fresh = await sessionWithMessages(2);
    const first = await store.reasoning.addItemsWithTotals(fresh.messages.map(itemOf), now);
    expect(first.added).toBe(2);
    expect(plain(first.totals)).toEqual(plain(await store.reasoning.openUnitsTotals(fresh.workspaceId, 's', ['alice', 'bob'])));
    expect(first.totals.get('bob')?.items).toBe(1);
  });

  it("moves each scheduled key's pending job forward, never later, and queues the others, with the plain jobs, in one statement on PostgreSQL", async () => {
    const { store, driver } = database;
    const c = DIALECTS[driver.dialect];
    const now = new Date();
    const at = (seconds: number) => new Date(now.getTime() + seconds * 1000);
    const job = (queueKey: string, runAfter?: Date, scheduled?: boolean): NewJob => ({ id: uniqueId('job'), kind: 'test.unit', workspaceId: null, queueKey, payload: { queueKey }, maxAttempts: 1, runAfter, scheduled });
    const [later, sooner, running, none] = ['later', 'sooner', 'running', 'none'].map((name) => uniqueId(name));
    const queued = [job(later, at(60)), job(sooner, at(-10)), job(running, at(-10))];
    await store.jobs.enqueue(queued, now);
    await driver.run(`UPDATE jobs SET status = 'running', locked_until = ? WHERE id = ?`, [c.time(at(60)), queued[2].id]);

    const { executor, issued } = recordingExecutor(driver);
    const told: number[] = [];
    const jobs = new SqlJobStore(executor, () => told.push(1));
    // a plain job of a key with a pending job is queued all the same (a delivery, a summary)
    const plain = job(later, at(3));
    const given = [job(later, now, true), plain, job(sooner, at(30), true), job(running, at(5), true), job(none, at(7), true)];
    await jobs.enqueue(given, now);
    expect(issued.length).toBe(driver.dialect === 'postgres' ? 1 : 5);

    const runAfter = async (id: string) => c.readTime((await driver.get<{ run_after: unknown }>('SELECT run_after FROM jobs WHERE id = ?', [id]))!.run_after).getTime();
    expect(await runAfter(queued[0].id)).toBe(now.getTime());
    expect(await runAfter(queued[1].id)).toBe(at(-10).getTime());
    // a running job is not enough (it may have read its work): its key and the empty one get
    // their jobs, after the plain one as given, at their own times
    const rows = await driver.all<{ id: string; run_after: unknown }>(
      `SELECT id, run_after FROM jobs WHERE queue_key IN (?, ?, ?, ?) AND id NOT IN (?, ?, ?) ORDER BY pk`,
      [later, sooner, running, none, ...queued.map((j) => j.id)],
    );
    expect(rows.map((row) => [row.id, c.readTime(row.run_after).getTime()])).toEqual([
      [plain.id, at(3).getTime()],
      [given[3].id, at(5).getTime()],
      [given[4].id, at(7).getTime()],
    ]);
    // the workers are woken
    expect(told).toEqual([1]);
    // scheduled jobs only, every key with a pending job: nothing inserted
    await jobs.enqueue([job(none, at(1), true)], now);
    expect(await runAfter(given[4].id)).toBe(at(1).getTime());
    expect((await driver.all(`SELECT id FROM jobs WHERE queue_key = ?`, [none])).length).toBe(1);
  });

  it('moves the pending jobs of several keys in one statement on PostgreSQL, locking them in key order', async () => {
    const { driver } = database;
    const c = DIALECTS[driver.dialect];
    const now = new Date();
    const at = (seconds: number) => new Date(now.getTime() + seconds * 1000);
    const job = (queueKey: string, kind = 'test.dream'): NewJob => ({ id: uniqueId('job'), kind, workspaceId: null, queueKey, payload: {}, maxAttempts: 1, runAfter: at(10) });
    const [b, a, other, idle] = ['b', 'a', 'other', 'idle'].map((name) => uniqueId(name));
    // a and b wait; b has a job of another kind too; the running one and idle's are not moved
    const queued = [job(b), job(a), job(b, 'test.else'), job(other), job(idle)];
    const { executor, issued } = recordingExecutor(driver);
    const jobs = new SqlJobStore(executor);
    await jobs.enqueue(queued, now);
    await driver.run(`UPDATE jobs SET status = 'running', locked_until = ? WHERE id = ?`, [c.time(at(60)), queued[3].id]);
    issued.length = 0;
    expect(await jobs.reschedulePendingOf([b, a, other, b], 'test.dream', at(600))).toBe(2);
    expect(issued.length).toBe(driver.dialect === 'postgres' ? 1 : 3);
    const runAfter = async (id: string) => c.readTime((await driver.get<{ run_after: unknown }>('SELECT run_after FROM jobs WHERE id = ?', [id]))!.run_after).getTime();
    expect(await Promise.all(queued.map((j) => runAfter(j.id)))).toEqual([at(600), at(600), at(10), at(10), at(10)].map((d) => d.getTime()));
    expect(await jobs.reschedulePendingOf([], 'test.dream', at(600))).toBe(0);
    if (driver.dialect === 'postgres') {
      // the rows are locked as the sorted subquery returns them (LockRows above the Sort), in the
      // order of the keys as given (their ordinality), not by the database's collation
      const plan = await planLines(driver, issued[0]);
      const lockRows = plan.findIndex((line) => line.includes('LockRows'));
      expect(lockRows).toBeGreaterThanOrEqual(0);
      const sort = plan.findIndex((line) => /Sort\b/.test(line));
      expect(sort).toBeGreaterThan(lockRows);
      expect(plan.find((line) => line.includes('Sort Key'))).toMatch(/Sort Key: k\.at\b/);
    }
  });
});
