import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { DIALECTS } from '../../src/storage/sql/dialects.js';
import type { NewJob, NewRepresentationItem } from '../../src/storage/store.js';
import { TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

/*
 * What a message write queues for the deriver, in fewer round trips on PostgreSQL: the items
 * with their units' totals (addItemsWithTotals) and the units' jobs moved for all units at once
 * (scheduleMany). Each is checked against the statements it stands for.
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

  it("moves each key's pending job forward, never later, and gives back the jobs of keys with none pending", async () => {
    const { store, driver } = database;
    const c = DIALECTS[driver.dialect];
    const now = new Date();
    const at = (seconds: number) => new Date(now.getTime() + seconds * 1000);
    const job = (queueKey: string, runAfter?: Date): NewJob => ({ id: uniqueId('job'), kind: 'test.unit', workspaceId: null, queueKey, payload: { queueKey }, maxAttempts: 1, runAfter });
    const [later, sooner, running, none] = ['later', 'sooner', 'running', 'none'].map((name) => uniqueId(name));
    const queued = [job(later, at(60)), job(sooner, at(-10)), job(running, at(-10))];
    await store.jobs.enqueue(queued, now);
    await driver.run(`UPDATE jobs SET status = 'running', locked_until = ? WHERE id = ?`, [c.time(at(60)), queued[2].id]);

    const told: number[] = [];
    const unlisten = store.onJobsQueued(() => told.push(1));
    let back: NewJob[];
    try {
      back = await store.jobs.scheduleMany(
        [
          { job: job(later), runAfter: now },
          { job: job(sooner), runAfter: at(30) },
          { job: job(running), runAfter: at(5) },
          { job: job(none), runAfter: at(7) },
        ],
        now,
      );
    } finally {
      unlisten();
    }
    const runAfter = async (id: string) => c.readTime((await driver.get<{ run_after: unknown }>('SELECT run_after FROM jobs WHERE id = ?', [id]))!.run_after).getTime();
    expect(await runAfter(queued[0].id)).toBe(now.getTime());
    expect(await runAfter(queued[1].id)).toBe(at(-10).getTime());
    // a running job is not enough (it may have read its work): its key and the empty one come back, not inserted
    expect(back.map((j) => [j.queueKey, j.runAfter?.getTime()])).toEqual([
      [running, at(5).getTime()],
      [none, at(7).getTime()],
    ]);
    const rows = await driver.all<{ queue_key: string }>(`SELECT queue_key FROM jobs WHERE queue_key IN (?, ?, ?, ?)`, [later, sooner, running, none]);
    expect(rows.map((r) => r.queue_key).sort()).toEqual([later, sooner, running].sort());
    // a job brought due now wakes the workers
    expect(told).toEqual([1]);
    expect(await store.jobs.scheduleMany([], now)).toEqual([]);
  });
});
