import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import type { JobHandler, JobOutcome } from '../../src/jobs/catalog.js';
import { Worker } from '../../src/jobs/worker.js';
import type { JobRecord, JsonObject } from '../../src/storage/store.js';
import { TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';
import { silent, sleep, waitFor } from '../support/polling.js';

/* A kind that runs its jobs several at a time (JobHandler.batch): claims, runs, outcomes, stop. */

const options = { concurrency: 4, pollMs: 20, retryBaseMs: 10, retryMaxMs: 20, logger: silent };

let database: Database;
beforeAll(async () => {
  database = await openDatabase(TEST_DATABASE_URL);
});
afterAll(() => database.driver.close());

const row = (id: string) => database.driver.get<{ status: string; attempts: number; last_error: string | null }>('SELECT status, attempts, last_error FROM jobs WHERE id = ?', [id]);
const statuses = async (ids: string[]) => Promise.all(ids.map(async (id) => (await row(id))?.status));

/** Queues one job of `kind` for each id, each in a queue of its own (all of them heads). */
async function enqueue(kind: string, ids: string[], workspaceId: (index: number) => string | null = () => null, payload: (id: string) => JsonObject = (id) => ({ id })): Promise<void> {
  await database.store.jobs.enqueue(
    ids.map((id, index) => ({ id, kind, workspaceId: workspaceId(index), queueKey: uniqueId('q'), payload: payload(id), maxAttempts: 1 })),
    new Date(),
  );
}

/**
 * A batch kind whose runs are recorded (the jobs each got): each run waits for `meanwhile` (if
 * given), then ends with `outcome` of each job.
 */
function batchKind(
  max: number,
  gatherMs: number,
  { outcome = () => ({ kind: 'done' }), meanwhile }: { outcome?: (job: JobRecord) => JobOutcome; meanwhile?: (signal: AbortSignal) => Promise<unknown> | undefined } = {},
) {
  const runs: JobRecord[][] = [];
  const handler: JobHandler = {
    readPayload: (payload) => (typeof payload.id === 'string' ? payload : undefined),
    run: () => Promise.reject(new Error('a batch kind runs through its batch')),
    timeoutMs: 10_000,
    batch: {
      max,
      gatherMs,
      async run(items, _store, signal) {
        runs.push(items.map((item) => item.job));
        await meanwhile?.(signal);
        return items.map((item) => outcome(item.job));
      },
    },
  };
  return { runs, handler };
}

const ids = (n: number) => Array.from({ length: n }, () => uniqueId('job'));

/** Runs a worker of `kind` until every one of `jobs` is done or dead, then stops it. */
async function runUntilEnded(kind: string, handler: JobHandler, jobs: string[]): Promise<void> {
  const worker = new Worker(database.store, { [kind]: handler }, options);
  worker.start();
  try {
    await waitFor(async () => (await statuses(jobs)).every((s) => s === 'done' || s === 'dead'));
  } finally {
    await worker.stop(2_000);
  }
}

describe('a batch kind', () => {
  it('runs the due jobs several at a time, at most its max a run, each completed', async () => {
    const kind = uniqueId('test.batch');
    const { runs, handler } = batchKind(4, 1_000);
    const jobs = ids(10);
    await enqueue(kind, jobs);
    await runUntilEnded(kind, handler, jobs);
    // ten due jobs: runs of 4, 4 and 2 (a full claim is followed by the next without gathering)
    expect(runs.map((run) => run.length).sort()).toEqual([2, 4, 4]);
    expect(new Set(runs.flat().map((job) => job.id))).toEqual(new Set(jobs));
    expect(await statuses(jobs)).toEqual(jobs.map(() => 'done'));
  });

  it('records each job by its own outcome: done, skipped (done), failed for good (dead)', async () => {
    const kind = uniqueId('test.batch');
    const jobs = ids(3);
    const { runs, handler } = batchKind(8, 1_000, {
      outcome: (job) =>
        job.id === jobs[1] ? { kind: 'skipped', reason: 'nothing to do' } : job.id === jobs[2] ? { kind: 'failed', error: 'this one broke', retryable: false } : { kind: 'done' },
    });
    await enqueue(kind, jobs);
    await runUntilEnded(kind, handler, jobs);
    expect(runs).toHaveLength(1);
    expect(await statuses(jobs)).toEqual(['done', 'done', 'dead']);
    expect((await row(jobs[2]))?.last_error).toBe('this one broke');
  });

  it('dead-letters a job whose payload does not fit without running it, and runs the others', async () => {
    const kind = uniqueId('test.batch');
    const { runs, handler } = batchKind(8, 1_000);
    const jobs = ids(3);
    await enqueue(kind, jobs, () => null, (id) => (id === jobs[0] ? { other: 1 } : { id }));
    await runUntilEnded(kind, handler, jobs);
    expect(await statuses(jobs)).toEqual(['dead', 'done', 'done']);
    expect(runs.flat().map((job) => job.id).sort()).toEqual([jobs[1], jobs[2]].sort());
    expect((await row(jobs[0]))?.last_error).toMatch(/^invalid test\.batch/);
  });

  it("runs one workspace's jobs a run", async () => {
    const kind = uniqueId('test.batch');
    const { runs, handler } = batchKind(8, 1_000);
    const jobs = ids(6);
    const workspaces = [uniqueId('ws'), uniqueId('ws')];
    await enqueue(kind, jobs, (index) => workspaces[index % 2]);
    await runUntilEnded(kind, handler, jobs);
    expect(runs).toHaveLength(2);
    for (const run of runs) expect(new Set(run.map((job) => job.workspaceId)).size).toBe(1);
    expect(await statuses(jobs)).toEqual(jobs.map(() => 'done'));
  });

  it('claims at once while none of its runs goes on, and gathers the jobs queued while one does', async () => {
    const kind = uniqueId('test.batch');
    let hold: Promise<void> | undefined;
    const { runs, handler } = batchKind(16, 1_500, { meanwhile: () => hold });
    const worker = new Worker(database.store, { [kind]: handler }, options);
    worker.start();
    try {
      const [first, second, held, ...rest] = ids(8);
      // idle: each claimed at once, the second within the gathering time of the first's claim
      for (const id of [first, second]) {
        await enqueue(kind, [id]);
        await waitFor(async () => (await row(id))?.status === 'done', 1_000);
      }
      // a run going on: the jobs queued meanwhile wait for each other
      let release!: () => void;
      hold = new Promise((resolve) => (release = resolve));
      await enqueue(kind, [held]);
      await waitFor(async () => runs.length === 3);
      for (const id of rest) {
        await enqueue(kind, [id]);
        await sleep(20);
      }
      await sleep(100);
      expect(await statuses(rest)).toEqual(rest.map(() => 'pending'));
      hold = undefined;
      release();
      await waitFor(async () => (await statuses(rest)).every((s) => s === 'done'));
      expect(runs.map((run) => run.map((job) => job.id))).toEqual([[first], [second], [held], expect.arrayContaining(rest)]);
      expect(runs[3]).toHaveLength(rest.length);
    } finally {
      await worker.stop(2_000);
    }
  });

  it("gives a batch's jobs back unrun when the worker stops while the run goes on", async () => {
    const kind = uniqueId('test.batch');
    const { runs, handler } = batchKind(8, 1_000, { meanwhile: (signal) => new Promise((resolve) => signal.addEventListener('abort', resolve)) });
    const jobs = ids(3);
    await enqueue(kind, jobs);
    const worker = new Worker(database.store, { [kind]: handler }, options);
    worker.start();
    await waitFor(async () => runs[0]?.length === 3);
    expect(await statuses(jobs)).toEqual(['running', 'running', 'running']);
    await worker.stop(100);
    // pending again, the attempt not counted
    for (const id of jobs) expect(await row(id)).toMatchObject({ status: 'pending', attempts: 0 });
  });
});
