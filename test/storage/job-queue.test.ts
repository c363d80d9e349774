import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { SqlJobStore } from '../../src/storage/sql/job-store.js';
import type { NewJob } from '../../src/storage/store.js';
import { recordingExecutor } from '../support/recording-executor.js';
import { DIALECT, TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

const job = (): NewJob => ({ id: uniqueId('job'), kind: 'test.noop', workspaceId: null, queueKey: uniqueId('q'), payload: {}, maxAttempts: 1 });

describe('onJobsQueued', () => {
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase(TEST_DATABASE_URL);
  });
  afterAll(() => database.driver.close());

  it('tells at once outside a transaction, after the commit inside one, never for a rollback', async () => {
    const events: string[] = [];
    const unlisten = database.store.onJobsQueued(() => events.push('queued'));
    try {
      await database.store.jobs.enqueue([job()], new Date());
      expect(events).toEqual(['queued']);

      await database.store.transaction(async (tx) => {
        await tx.jobs.enqueue([job()], new Date());
        await tx.jobs.enqueue([job()], new Date());
        events.push('before commit');
      });
      expect(events).toEqual(['queued', 'before commit', 'queued']);

      await expect(
        database.store.transaction(async (tx) => {
          await tx.jobs.enqueue([job()], new Date());
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      await database.store.transaction(async () => undefined);
      // no endpoints: nothing queued, nothing told
      await database.store.jobs.enqueue([], new Date());
      expect(events).toEqual(['queued', 'before commit', 'queued']);
    } finally {
      unlisten();
    }
    await database.store.jobs.enqueue([job()], new Date());
    expect(events).toHaveLength(3);
  });
});

/**
 * A database of the test's own, so no other test's jobs are claimed: a fresh SQLite database
 * in memory, or a fresh schema on the test PostgreSQL.
 */
async function privateDatabase(): Promise<Database> {
  if (DIALECT === 'sqlite') return openDatabase(':memory:');
  const schema = uniqueId('jobs').replace(/-/g, '_');
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  // pgvector's types live in the schema the extension was created in: create it in public first
  // (whichever test file runs first), and keep public on the path so the migrations find them
  await client.query('CREATE EXTENSION IF NOT EXISTS vector');
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.end();
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema},public`);
  return openDatabase(url.toString());
}

describe('claim', () => {
  let database: Database;
  beforeAll(async () => {
    database = await privateDatabase();
  });
  afterAll(() => database.driver.close());

  const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds));
  const queued = (queueKey: string, n: number): NewJob[] =>
    Array.from({ length: n }, (_, i) => ({ id: `${queueKey}-${i}`, kind: 'k', workspaceId: null, queueKey, payload: {}, maxAttempts: 3 }));
  const ids = (jobs: { id: string }[]) => jobs.map((job) => job.id);

  it('hands out the head of each queue only, in order, and the next job once the head is finished', async () => {
    const jobs = database.store.jobs;
    await jobs.enqueue(queued('a', 3), at(0));
    await jobs.enqueue(queued('b', 2), at(0));
    await jobs.enqueue(queued('c', 1), at(0));
    expect(ids(await jobs.claim(2, at(1), at(61)))).toEqual(['a-0', 'b-0']);
    expect(ids(await jobs.claim(10, at(1), at(61)))).toEqual(['c-0']);
    expect(await jobs.claim(10, at(1), at(61))).toEqual([]);

    await jobs.complete('a-0', at(2));
    // a-1 is due again later: it holds its queue until then
    await jobs.retry('b-0', at(30), 'failed once');
    expect(ids(await jobs.claim(10, at(3), at(63)))).toEqual(['a-1']);
    expect(ids(await jobs.claim(10, at(30), at(90)))).toEqual(['b-0']);

    // a head whose lease ran out (its worker died) is handed out again, before anything behind it
    expect(await jobs.claim(10, at(60), at(120))).toEqual([]);
    const again = await jobs.claim(10, at(62), at(122));
    expect(ids(again)).toEqual(['c-0']);
    expect(again[0].attempts).toBe(2);
    expect(ids(await jobs.claim(10, at(64), at(124)))).toEqual(['a-1']);

    // a dead-lettered head unblocks its queue
    await jobs.deadLetter('a-1', at(65), 'gave up');
    await jobs.complete('c-0', at(65));
    expect(ids(await jobs.claim(10, at(66), at(126)))).toEqual(['a-2']);
    expect(await jobs.claim(10, at(66), at(126))).toEqual([]);
  });

  it("for one kind (a worker's lane): only that kind's heads, due or with a lease run out; a head of another kind holds its queue", async () => {
    const jobs = database.store.jobs;
    const of = (kind: string, queueKey: string, id: string, runAfter?: Date): NewJob => ({ id, kind, workspaceId: null, queueKey, payload: {}, maxAttempts: 3, runAfter });
    // in this order (pk): queue p holds an x then a y; queue q a y due at 100 then an x
    await jobs.enqueue([of('x', 'p', 'p-x'), of('y', 'p', 'p-y'), of('y', 'q', 'q-y', at(100)), of('x', 'q', 'q-x'), of('y', 'r', 'r-y'), of('z', 's', 's-z')], at(0));
    const lane = (kind: string, seconds: number) => jobs.claim(10, at(seconds), at(seconds + 60), kind);

    // p-y waits behind p-x, q-y is not due yet
    expect(ids(await lane('y', 1))).toEqual(['r-y']);
    // q-x waits behind q-y, a head of another kind that is not due
    expect(ids(await lane('x', 1))).toEqual(['p-x']);
    expect(await lane('x', 1)).toEqual([]);
    await jobs.complete('p-x', at(2));
    expect(ids(await lane('y', 3))).toEqual(['p-y']);
    // nothing of kind y is due at 62, but r-y's lease (until 61) ran out: it is taken again
    const again = await lane('y', 62);
    expect(ids(again)).toEqual(['r-y']);
    expect(again[0].attempts).toBe(2);
    await jobs.complete('p-y', at(63));
    await jobs.complete('r-y', at(63));
    expect(await lane('y', 99)).toEqual([]);
    expect(ids(await lane('y', 100))).toEqual(['q-y']);
    expect(await lane('x', 100)).toEqual([]);
    await jobs.complete('q-y', at(101));
    expect(ids(await lane('x', 102))).toEqual(['q-x']);
    expect(ids(await lane('z', 102))).toEqual(['s-z']);
    expect(await lane('w', 102)).toEqual([]);
  });

  it("claims the next head of one queue in the step that completes the job before it, only when it is that kind's and due", async () => {
    const store = database.store;
    const of = (kind: string, id: string, runAfter?: Date): NewJob => ({ id, kind, workspaceId: null, queueKey: 'chain', payload: {}, maxAttempts: 3, runAfter });
    await store.jobs.enqueue([of('d', 'h-0'), of('d', 'h-1'), of('d', 'h-2', at(50)), of('e', 'h-3'), of('d', 'h-4')], at(0));
    const completeThenHead = async (id: string, seconds: number, kind = 'd') => (await store.jobs.completeAndClaimNext({ id, queueKey: 'chain', kind }, at(seconds), at(seconds + 60)))[0];
    // while h-0 runs, h-1 is not its queue's head
    expect(ids(await store.jobs.claim(10, at(1), at(61), 'd'))).toEqual(['h-0']);
    expect(await store.jobs.claim(10, at(1), at(61), 'd')).toEqual([]);
    const next = await completeThenHead('h-0', 2);
    expect(next?.id).toBe('h-1');
    expect(next?.attempts).toBe(1);
    // it is running now: no claim hands it out again, and the queue holds the rest behind it
    expect(await store.jobs.claim(10, at(3), at(63), 'd')).toEqual([]);
    // c-2 is due at 50: nothing is claimed, the queue waits for it
    expect(await completeThenHead('h-1', 4)).toBeUndefined();
    expect(await store.jobs.claim(10, at(5), at(65), 'd')).toEqual([]);
    expect(ids(await store.jobs.claim(10, at(50), at(110), 'd'))).toEqual(['h-2']);
    // the next head is of another kind: left to that kind's lane
    expect(await completeThenHead('h-2', 51)).toBeUndefined();
    expect(ids(await store.jobs.claim(10, at(52), at(112), 'e'))).toEqual(['h-3']);
    expect(await store.jobs.claim(10, at(52), at(112), 'd')).toEqual([]);
    // the last one (a job of another kind completed; the next one's kind is the one asked), then an empty queue
    expect((await completeThenHead('h-3', 53))?.id).toBe('h-4');
    expect(await completeThenHead('h-4', 54)).toBeUndefined();
    const statuses = await database.driver.all<{ id: string; status: string }>("SELECT id, status FROM jobs WHERE queue_key = 'chain' ORDER BY pk");
    expect(statuses.map((row) => row.status)).toEqual(['done', 'done', 'done', 'done', 'done']);
  });

  it('claims with the completion the unbroken run of the next jobs of the queue that are of its kind and due, in order, at most as many as asked', async () => {
    const store = database.store;
    const of = (id: string, kind = 'r', runAfter?: Date): NewJob => ({ id, kind, workspaceId: null, queueKey: 'run', payload: {}, maxAttempts: 3, runAfter });
    await store.jobs.enqueue([of('r-0'), of('r-1'), of('r-2'), of('r-3'), of('r-4'), of('r-5', 'r', at(50)), of('r-6'), of('r-7', 'other'), of('r-8')], at(0));
    const complete = async (id: string, seconds: number, limit: number) => ids(await store.jobs.completeAndClaimNext({ id, queueKey: 'run', kind: 'r' }, at(seconds), at(seconds + 60), limit));
    expect(ids(await store.jobs.claim(10, at(1), at(61), 'r'))).toEqual(['r-0']);
    // at most as many as asked
    expect(await complete('r-0', 2, 2)).toEqual(['r-1', 'r-2']);
    await store.jobs.complete('r-1', at(3));
    // r-5 is due at 50: the run stops before it, and r-6 (due) waits behind it
    expect(await complete('r-2', 3, 10)).toEqual(['r-3', 'r-4']);
    await store.jobs.complete('r-3', at(4));
    expect(await complete('r-4', 4, 10)).toEqual([]);
    expect(ids(await store.jobs.claim(10, at(50), at(110), 'r'))).toEqual(['r-5']);
    // r-7 is of another kind: the run stops before it
    expect(await complete('r-5', 51, 10)).toEqual(['r-6']);
    const attempts = await database.driver.all<{ id: string; status: string; attempts: number | string }>("SELECT id, status, attempts FROM jobs WHERE queue_key = 'run' ORDER BY pk");
    expect(attempts.map((row) => `${row.id} ${row.status} ${Number(row.attempts)}`)).toEqual([
      'r-0 done 1', 'r-1 done 1', 'r-2 done 1', 'r-3 done 1', 'r-4 done 1', 'r-5 done 1', 'r-6 running 1', 'r-7 pending 0', 'r-8 pending 0',
    ]);
  });

  it('with many queues due, a lane takes heads from its earliest due jobs without walking every queue, and each queue once', async () => {
    const { executor, issued } = recordingExecutor(database.driver);
    const jobs = new SqlJobStore(executor);
    // 300 queues of kind m, two jobs each; the second waits behind the first
    const many = Array.from({ length: 300 }, (_, i) => [0, 1].map((n): NewJob => ({ id: `m${i}-${n}`, kind: 'm', workspaceId: null, queueKey: `m${i}`, payload: {}, maxAttempts: 3 }))).flat();
    for (let i = 0; i < many.length; i += 100) await jobs.enqueue(many.slice(i, i + 100), at(0));
    issued.length = 0;
    const first = await jobs.claim(8, at(1), at(600), 'm');
    expect(first).toHaveLength(8);
    expect(new Set(first.map((job) => job.queueKey)).size).toBe(8);
    expect(first.every((job) => job.id.endsWith('-0'))).toBe(true);
    // the earliest due heads were enough: no statement walked the queues
    expect(issued.some(({ sql }) => sql.includes('WITH RECURSIVE'))).toBe(false);
    // drained 8 at a time, every queue's first job once, never a second job while the first runs
    const claimed = [...first];
    for (let round = 0; round < 50; round++) {
      const next = await jobs.claim(8, at(2), at(600), 'm');
      if (next.length === 0) break;
      claimed.push(...next);
    }
    expect(claimed.map((job) => job.id).sort()).toEqual(Array.from({ length: 300 }, (_, i) => `m${i}-0`).sort());
  });

  it('a lane whose earliest due jobs wait behind running heads still finds the heads due after them', async () => {
    const { executor, issued } = recordingExecutor(database.driver);
    const jobs = new SqlJobStore(executor);
    const of = (id: string, queueKey: string): NewJob => ({ id, kind: 'w', workspaceId: null, queueKey, payload: {}, maxAttempts: 3 });
    // 100 deliveries to one endpoint (the first then running), due before three other queues' heads
    await jobs.enqueue(Array.from({ length: 100 }, (_, i) => of(`e-${i}`, 'endpoint')), at(0));
    expect(ids(await jobs.claim(1, at(0), at(600), 'w'))).toEqual(['e-0']);
    await jobs.enqueue([of('x-0', 'x'), of('y-0', 'y'), of('z-0', 'z')], at(1));
    issued.length = 0;
    expect(ids(await jobs.claim(8, at(2), at(1200), 'w')).sort()).toEqual(['x-0', 'y-0', 'z-0']);
    const walked = (from: number) => issued.slice(from).map(({ sql }) => (sql.includes('WITH RECURSIVE') ? 'walk' : sql.trimStart().split(/\s/)[0]));
    // the due jobs read, then the walk
    expect(walked(0)).toEqual(['SELECT', 'walk']);
    // the lane walks at once from then on, while its walks find fewer heads than it asks for
    expect(await jobs.claim(8, at(2), at(1200), 'w')).toEqual([]);
    expect(walked(2)).toEqual(['walk']);
    // e-0's lease runs out: it is taken again, and e-1 still waits behind it
    expect(ids(await jobs.claim(8, at(601), at(1200), 'w'))).toEqual(['e-0']);
    // a walk that fills the claim: the next claim reads the due jobs first again
    await jobs.enqueue(Array.from({ length: 10 }, (_, i) => of(`n-${i}`, `n${i}`)), at(602));
    const from = issued.length;
    expect(await jobs.claim(8, at(603), at(1800), 'w')).toHaveLength(8);
    expect(await jobs.claim(8, at(603), at(1800), 'w')).toHaveLength(2);
    expect(walked(from)).toEqual(['walk', 'SELECT', 'walk']);
  });

  it('tells which kinds may have a job to claim: a pending one due, or a running one whose lease ran out', async () => {
    const jobs = database.store.jobs;
    const of = (kind: string, id: string, runAfter?: Date): NewJob => ({ id, kind, workspaceId: null, queueKey: id, payload: {}, maxAttempts: 3, runAfter });
    await jobs.enqueue([of('due', 'due-1'), of('later', 'later-1', at(500)), of('leased', 'leased-1'), of('expired', 'expired-1')], at(200));
    await jobs.claim(1, at(201), at(400), 'leased');
    await jobs.claim(1, at(201), at(250), 'expired');
    const kinds = ['due', 'later', 'leased', 'expired', 'none'];
    expect([...(await jobs.claimableKinds(kinds, at(300)))].sort()).toEqual(['due', 'expired']);
    expect([...(await jobs.claimableKinds(kinds, at(600)))].sort()).toEqual(['due', 'expired', 'later', 'leased']);
    expect(await jobs.claimableKinds([], at(600))).toEqual(new Set());
  });
});

describe('purgeFinished', () => {
  let database: Database;
  beforeAll(async () => {
    database = await privateDatabase();
  });
  afterAll(() => database.driver.close());

  const at = (hours: number) => new Date(Date.UTC(2026, 0, 1, hours));

  it('removes done jobs and dead ones past their own ages, oldest first, at most `limit` per call', async () => {
    const jobs = database.store.jobs;
    const job = (id: string): NewJob => ({ id, kind: 'k', workspaceId: null, queueKey: `q-${id}`, payload: {}, maxAttempts: 1 });
    await jobs.enqueue(['done-1', 'done-2', 'done-3', 'done-late', 'dead-1', 'dead-late', 'open'].map(job), at(0));
    for (const [id, hour] of [['done-1', 1], ['done-2', 2], ['done-3', 3], ['done-late', 30]] as const) await jobs.complete(id, at(hour));
    await jobs.deadLetter('dead-1', at(1), 'failed');
    await jobs.deadLetter('dead-late', at(30), 'failed');
    const left = async () => (await database.driver.all<{ id: string }>('SELECT id FROM jobs ORDER BY id')).map((row) => row.id);

    // done before hour 10, dead before hour 2: the two oldest done jobs first
    expect(await jobs.purgeFinished(at(10), at(2), 2)).toBe(2);
    expect(await left()).toEqual(['dead-1', 'dead-late', 'done-3', 'done-late', 'open']);
    // then the last old done one and the old dead one
    expect(await jobs.purgeFinished(at(10), at(2), 2)).toBe(2);
    expect(await left()).toEqual(['dead-late', 'done-late', 'open']);
    expect(await jobs.purgeFinished(at(10), at(2), 2)).toBe(0);
    // open jobs are never purged
    expect(await jobs.purgeFinished(at(100), at(100), 10)).toBe(2);
    expect(await left()).toEqual(['open']);
  });
});
