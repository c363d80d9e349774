import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import type { JobCatalog, JobHandler } from '../../src/jobs/catalog.js';
import { CHAIN_LENGTH, Worker } from '../../src/jobs/worker.js';
import type { JobStore, Store } from '../../src/storage/store.js';
import { TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';
import { silent, sleep, waitFor } from '../support/polling.js';


let database: Database;
beforeAll(async () => {
  database = await openDatabase(TEST_DATABASE_URL);
});
afterAll(() => database.driver.close());

const status = async (id: string) => (await database.driver.get<{ status: string }>('SELECT status FROM jobs WHERE id = ?', [id]))?.status;

/** A kind whose every run sleeps `ms`, then is done. */
const sleeper = (ms: number, handler: Partial<JobHandler> = {}): JobHandler => ({
  readPayload: (payload) => payload,
  async run() {
    await sleep(ms);
    return { kind: 'done' };
  },
  timeoutMs: 10_000,
  ...handler,
});

/** Queues jobs of `kind` in one new queue, each behind the one before. */
async function enqueueInOneQueue(kind: string, ids: string[], maxAttempts = 1): Promise<void> {
  const queueKey = uniqueId('q');
  await database.store.jobs.enqueue(
    ids.map((id) => ({ id, kind, workspaceId: null, queueKey, payload: {}, maxAttempts })),
    new Date(),
  );
}

/** Starts `worker`, waits for job `id` to be done, stops it: the milliseconds until done. */
async function msUntilDone(worker: Worker, id: string): Promise<number> {
  const started = Date.now();
  worker.start();
  try {
    await waitFor(async () => (await status(id)) === 'done', 15_000);
    return Date.now() - started;
  } finally {
    await worker.stop(2_000);
  }
}

type Claim = JobStore['claim'];

/** The test store, its jobs claimed through `claim` (given the store's own). */
function claimingThrough(claim: (own: Claim, ...args: Parameters<Claim>) => ReturnType<Claim>): Store {
  const jobs = new Proxy(database.store.jobs, {
    get(target, key, receiver) {
      if (key !== 'claim') return Reflect.get(target, key, receiver) as unknown;
      return (...args: Parameters<Claim>) => claim((...own) => target.claim(...own), ...args);
    },
  });
  return new Proxy(database.store, { get: (target, key, receiver) => (key === 'jobs' ? jobs : (Reflect.get(target, key, receiver) as unknown)) });
}

describe('the worker', () => {
  it('renews a short lease while a long run goes on, so no other worker takes the job meanwhile', async () => {
    const kind = uniqueId('test.slow');
    let runs = 0;
    const catalog: JobCatalog = {
      [kind]: {
        readPayload: (payload) => payload,
        async run() {
          runs++;
          await sleep(1_200);
          return { kind: 'done' };
        },
        timeoutMs: 10_000,
        leaseMs: 300,
      },
    };
    const options = { concurrency: 2, pollMs: 20, retryBaseMs: 10, retryMaxMs: 20, logger: silent };
    const first = new Worker(database.store, catalog, options);
    const second = new Worker(database.store, catalog, options);
    const id = uniqueId('job');
    await database.store.jobs.enqueue([{ id, kind, workspaceId: null, queueKey: uniqueId('q'), payload: {}, maxAttempts: 3 }], new Date());
    first.start();
    await waitFor(async () => runs === 1);
    second.start();
    try {
      await waitFor(async () => (await status(id)) === 'done');
      expect(runs).toBe(1);
    } finally {
      await Promise.all([first.stop(2_000), second.stop(2_000)]);
    }
  });

  it('runs each kind in its own lane: a slow kind at its concurrency does not hold up another', async () => {
    const slow = uniqueId('test.slow');
    const quick = uniqueId('test.quick');
    let slowRunning = 0;
    let maxSlow = 0;
    const catalog: JobCatalog = {
      [slow]: {
        readPayload: (payload) => payload,
        async run() {
          slowRunning++;
          maxSlow = Math.max(maxSlow, slowRunning);
          await sleep(800);
          slowRunning--;
          return { kind: 'done' };
        },
        timeoutMs: 10_000,
        concurrency: 1,
      },
      [quick]: { readPayload: (payload) => payload, run: async () => ({ kind: 'done' }), timeoutMs: 1_000 },
    };
    const worker = new Worker(database.store, catalog, { concurrency: 4, pollMs: 20, retryBaseMs: 10, retryMaxMs: 20, logger: silent });
    const slowIds = [uniqueId('job'), uniqueId('job'), uniqueId('job')];
    const quickId = uniqueId('job');
    await database.store.jobs.enqueue(
      slowIds.map((id) => ({ id, kind: slow, workspaceId: null, queueKey: uniqueId('q'), payload: {}, maxAttempts: 1 })),
      new Date(),
    );
    await database.store.jobs.enqueue([{ id: quickId, kind: quick, workspaceId: null, queueKey: uniqueId('q'), payload: {}, maxAttempts: 1 }], new Date());
    worker.start();
    try {
      // the quick job is done while the first slow one still runs
      await waitFor(async () => (await status(quickId)) === 'done', 700);
      expect(await status(slowIds[2])).toBe('pending');
      await waitFor(async () => (await Promise.all(slowIds.map(status))).every((s) => s === 'done'));
      expect(maxSlow).toBe(1);
    } finally {
      await worker.stop(2_000);
    }
  });

  it('tells onAttempt how each attempt ended, with the time it ran', async () => {
    const kind = uniqueId('test.outcomes');
    let flakyRuns = 0;
    const catalog: JobCatalog = {
      [kind]: {
        readPayload: (payload) => (typeof payload.case === 'string' ? payload.case : undefined),
        async run(which) {
          await sleep(15);
          if (which === 'skip') return { kind: 'skipped', reason: 'nothing to do' };
          if (which === 'broken') return { kind: 'failed', error: 'no', retryable: false };
          if (which === 'flaky' && flakyRuns++ === 0) return { kind: 'failed', error: 'not yet', retryable: true };
          return { kind: 'done' };
        },
        timeoutMs: 5_000,
      },
    };
    const events: { kind: string; outcome: string; durationMs: number }[] = [];
    const worker = new Worker(database.store, catalog, { concurrency: 2, pollMs: 20, retryBaseMs: 10, retryMaxMs: 20, logger: silent, onAttempt: (event) => events.push(event) });
    const cases = ['ok', 'skip', 'broken', 'flaky', 'unreadable'];
    const ids = cases.map(() => uniqueId('job'));
    await database.store.jobs.enqueue(
      cases.map((which, i) => ({ id: ids[i], kind, workspaceId: null, queueKey: uniqueId('q'), payload: which === 'unreadable' ? { case: 7 } : { case: which }, maxAttempts: 3 })),
      new Date(),
    );
    worker.start();
    try {
      await waitFor(async () => (await Promise.all(ids.map(status))).every((s) => s === 'done' || s === 'dead'));
    } finally {
      await worker.stop(2_000);
    }
    expect(events.every((e) => e.kind === kind)).toBe(true);
    expect(events.map((e) => e.outcome).sort()).toEqual(['dead', 'dead', 'done', 'done', 'retried', 'skipped']);
    // the attempts that ran took their 15 ms; the unreadable payload never ran
    const ran = events.filter((e) => e.durationMs > 0);
    expect(ran).toHaveLength(5);
    expect(ran.every((e) => e.durationMs >= 14)).toBe(true);
  });

  it('stops at once when stopped during a claim round, instead of sleeping the poll interval first', async () => {
    const kind = uniqueId('test.stop');
    const catalog: JobCatalog = { [kind]: sleeper(5) };
    // the claim waits until the test has asked the worker to stop, then finds nothing
    let entered!: () => void;
    const claiming = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const store = claimingThrough(async () => {
      entered();
      await released;
      return [];
    });
    const worker = new Worker(store, catalog, { concurrency: 1, pollMs: 60_000, retryBaseMs: 10, retryMaxMs: 20, logger: silent });
    await database.store.jobs.enqueue([{ id: uniqueId('job'), kind, workspaceId: null, queueKey: uniqueId('q'), payload: {}, maxAttempts: 1 }], new Date());
    worker.start();
    await claiming;
    const started = Date.now();
    const stopped = worker.stop(1_000);
    release();
    await stopped;
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('does not walk the queues of a kind again while its due job waits behind a running head', async () => {
    const slow = uniqueId('test.head');
    const quick = uniqueId('test.quick');
    const catalog: JobCatalog = { [slow]: sleeper(800), [quick]: sleeper(5, { timeoutMs: 1_000, concurrency: 1 }) };
    // the slow kind's claims, counted
    const claims: string[] = [];
    const store = claimingThrough((claim, limit, now, leaseUntil, kind) => {
      if (kind === slow) claims.push(kind);
      return claim(limit, now, leaseUntil, kind);
    });
    // a poll interval longer than the whole test: only the head's end may wake the lane
    const worker = new Worker(store, catalog, { concurrency: 4, pollMs: 10_000, retryBaseMs: 10, retryMaxMs: 20, logger: silent });
    const [head, behind] = [uniqueId('job'), uniqueId('job')];
    await enqueueInOneQueue(slow, [head, behind]);
    // 60 quick jobs, one at a time: each one's end starts a worker round
    const quickIds = Array.from({ length: 60 }, () => uniqueId('job'));
    await database.store.jobs.enqueue(
      quickIds.map((id) => ({ id, kind: quick, workspaceId: null, queueKey: uniqueId('q'), payload: {}, maxAttempts: 1 })),
      new Date(),
    );
    const started = Date.now();
    worker.start();
    let ms: number;
    let claimsUntilDone: number;
    let quickDone: number;
    try {
      await waitFor(async () => (await status(behind)) === 'done', 15_000);
      ms = Date.now() - started;
      claimsUntilDone = claims.length;
      quickDone = (await Promise.all(quickIds.map(status))).filter((s) => s === 'done').length;
      // the rest of the quick jobs (a slow machine may not get through all 60 during the runs)
      await waitFor(async () => (await Promise.all(quickIds.map(status))).every((s) => s === 'done'), 15_000);
    } finally {
      await worker.stop(2_000);
    }
    // enough quick rounds ran while the head ran for the count of claims below to tell
    expect(quickDone).toBeGreaterThanOrEqual(15);
    // the job behind the head is claimed as soon as the head is done (800 + 800 ms of runs),
    // not when the lane's quiet time of one poll interval (10 s, far from the runs' 1.6 s so that
    // a busy machine cannot blur the two) runs out
    expect(ms).toBeLessThan(8_000);
    // the head's claim, one empty claim, then quiet until the head ended, and the claim after it
    // (without the quiet: one claim per round the quick jobs set off, 126 when measured)
    expect(claimsUntilDone).toBeLessThanOrEqual(4);
  });

  it('after a round whose claims took every due job, waits to be woken instead of probing again at once', async () => {
    const kind = uniqueId('test.one');
    const catalog: JobCatalog = { [kind]: sleeper(5) };
    // the worker's probes of its lanes, counted
    let probes = 0;
    const jobs = new Proxy(database.store.jobs, {
      get(target, key, receiver) {
        if (key !== 'claimableKinds') return Reflect.get(target, key, receiver) as unknown;
        return (...args: Parameters<JobStore['claimableKinds']>) => {
          probes++;
          return target.claimableKinds(...args);
        };
      },
    });
    const store = new Proxy(database.store, { get: (target, key, receiver) => (key === 'jobs' ? jobs : (Reflect.get(target, key, receiver) as unknown)) });
    // a poll interval longer than the test: every round is set off by a job queued or ended
    const worker = new Worker(store, catalog, { concurrency: 4, pollMs: 10_000, retryBaseMs: 10, retryMaxMs: 20, logger: silent });
    worker.start();
    const JOBS = 10;
    try {
      for (let i = 0; i < JOBS; i++) {
        const id = uniqueId('job');
        await database.store.jobs.enqueue([{ id, kind, workspaceId: null, queueKey: uniqueId('q'), payload: {}, maxAttempts: 1 }], new Date());
        await waitFor(async () => (await status(id)) === 'done', 5_000);
      }
      await sleep(50);
    } finally {
      await worker.stop(2_000);
    }
    // the first round, then for each job the round its queuing sets off (a claim of one job
    // where four had room) and the round its end sets off; another round right after each
    // claim (a third probe a job, 30 in all when measured) found nothing
    expect(probes).toBeGreaterThanOrEqual(JOBS);
    expect(probes).toBeLessThanOrEqual(2 * JOBS + 2);
  });

  it('claims again at once when its head ends while an empty claim of its lane is in flight', async () => {
    // The empty claim's answer reaches the worker after the head's end has cleared the lane's
    // quiet time: the lane must not then go quiet for a poll interval, or the job behind waits
    // that long (seen on PostgreSQL, where the answer comes over the network after the end).
    const slow = uniqueId('test.head');
    const catalog: JobCatalog = { [slow]: sleeper(300) };
    const [head, behind] = [uniqueId('job'), uniqueId('job')];
    let delayed = 0;
    const store = claimingThrough(async (claim, limit, now, leaseUntil, kind) => {
      const claimed = await claim(limit, now, leaseUntil, kind);
      // an empty claim while the head runs: answered only once the head is done
      if (claimed.length === 0 && (await status(head)) === 'running') {
        delayed++;
        await waitFor(async () => (await status(head)) === 'done');
        await sleep(50);
      }
      return claimed;
    });
    const worker = new Worker(store, catalog, { concurrency: 2, pollMs: 10_000, retryBaseMs: 10, retryMaxMs: 20, logger: silent });
    await enqueueInOneQueue(slow, [head, behind]);
    const started = Date.now();
    worker.start();
    let ms: number;
    try {
      // a round while the head runs (set off by other work, as under load): the lane's claim is empty
      await waitFor(async () => (await status(head)) === 'running');
      worker.notify();
      await waitFor(async () => (await status(behind)) === 'done', 15_000);
      ms = Date.now() - started;
    } finally {
      await worker.stop(2_000);
    }
    expect(delayed).toBeGreaterThan(0);
    // 300 + 300 ms of runs, not the 10 s poll interval
    expect(ms).toBeLessThan(5_000);
  });

  describe('an ordered kind (deliveries to an endpoint)', () => {
    /** A kind whose runs take `ms` and note their job's id, in the order they start. */
    const noting = (ms: number, ordered: boolean, started: string[]): JobHandler => ({
      readPayload: (payload) => payload,
      async run(_payload, job) {
        started.push(job.id);
        await sleep(ms);
        return { kind: 'done' };
      },
      timeoutMs: 10_000,
      ordered,
    });
    /** Claims of `kind` through the worker's store, counted. */
    const counting = (kind: string) => {
      const claims = { count: 0 };
      const store = claimingThrough((claim, limit, now, leaseUntil, claimed) => {
        if (claimed === kind) claims.count++;
        return claim(limit, now, leaseUntil, claimed);
      });
      return { store, claims };
    };

    it('goes on with the next job of the queue as it records the one before, in order, without a round of claims between them', async () => {
      const results: Record<string, { started: string[]; claims: number; ids: string[] }> = {};
      for (const ordered of [true, false]) {
        const kind = uniqueId('test.ordered');
        const started: string[] = [];
        const { store, claims } = counting(kind);
        // a poll interval longer than the test: only the worker's own wake-ups claim
        const worker = new Worker(store, { [kind]: noting(5, ordered, started) }, { concurrency: 4, pollMs: 10_000, retryBaseMs: 10, retryMaxMs: 20, logger: silent });
        const ids = Array.from({ length: 12 }, () => uniqueId('job'));
        await enqueueInOneQueue(kind, ids);
        await msUntilDone(worker, ids[ids.length - 1]);
        results[String(ordered)] = { started, claims: claims.count, ids };
      }
      for (const { started, ids } of Object.values(results)) expect(started).toEqual(ids);
      // the head's claim and one that found it running; then each job's end took the next
      expect(results.true.claims).toBeLessThanOrEqual(3);
      // the same queue without the option: a claim after every job's end
      expect(results.false.claims).toBeGreaterThanOrEqual(12);
    });

    it(`claims the next ${CHAIN_LENGTH} of the queue with each completion, and a job that fails holds back those after it until its retry succeeds`, async () => {
      const kind = uniqueId('test.ordered');
      const started: string[] = [];
      const ids = Array.from({ length: 40 }, () => uniqueId('job'));
      const failing = ids[21];
      let failed = false;
      const handler: JobHandler = {
        readPayload: (payload) => payload,
        async run(_payload, job) {
          started.push(job.id);
          await sleep(1);
          if (job.id === failing && !failed) {
            failed = true;
            return { kind: 'failed', error: 'the endpoint answered 500', retryable: true };
          }
          return { kind: 'done' };
        },
        timeoutMs: 10_000,
        ordered: true,
      };
      let chained = 0;
      const jobs = new Proxy(database.store.jobs, {
        get(target, key, receiver) {
          if (key !== 'completeAndClaimNext') return Reflect.get(target, key, receiver) as unknown;
          return (...args: Parameters<Store['jobs']['completeAndClaimNext']>) => (chained++, target.completeAndClaimNext(...args));
        },
      });
      const store = new Proxy(database.store, { get: (target, key, receiver) => (key === 'jobs' ? jobs : (Reflect.get(target, key, receiver) as unknown)) });
      const worker = new Worker(store, { [kind]: handler }, { concurrency: 4, pollMs: 20, retryBaseMs: 10, retryMaxMs: 20, logger: silent });
      await enqueueInOneQueue(kind, ids, 3);
      await msUntilDone(worker, ids[ids.length - 1]);
      // in order, the failed job run again before any job after it
      expect(started).toEqual([...ids.slice(0, 22), failing, ...ids.slice(22)]);
      expect((await Promise.all(ids.map(status))).every((s) => s === 'done')).toBe(true);
      // a claim of the next ones with the completion of the last of each run of them, not one a job:
      // 0 (claimed by a round) -> 1..16 -> 17..21 (21 failed: 22..32 given back) -> after the retry, 22..37 -> 38, 39
      expect(chained).toBeLessThanOrEqual(6);
      const attempts = await database.driver.all<{ attempts: number | string }>(`SELECT attempts FROM jobs WHERE id IN (${ids.map(() => '?').join(', ')})`, ids);
      expect(attempts.map((row) => Number(row.attempts)).sort()).toEqual([...Array(39).fill(1), 2]);
    });

    it('leaves the run to the oldest head of any queue when no other run is free', async () => {
      const kind = uniqueId('test.ordered');
      const started: string[] = [];
      const worker = new Worker(database.store, { [kind]: noting(5, true, started) }, { concurrency: 1, pollMs: 20, retryBaseMs: 10, retryMaxMs: 20, logger: silent });
      // two queues, their jobs queued alternately: with one run, oldest first takes turns
      const [a, b] = [uniqueId('q'), uniqueId('q')];
      const ids: string[] = [];
      const jobs = [];
      for (let i = 0; i < 4; i++) {
        for (const queueKey of [a, b]) {
          const id = `${queueKey}-${i}`;
          ids.push(id);
          jobs.push({ id, kind, workspaceId: null, queueKey, payload: {}, maxAttempts: 1 });
        }
      }
      await database.store.jobs.enqueue(jobs, new Date());
      await msUntilDone(worker, ids[ids.length - 1]);
      expect(started).toEqual(ids);
    });

    it('gives the next job back unrun when the worker stops while it is being claimed', async () => {
      const kind = uniqueId('test.ordered');
      const started: string[] = [];
      const [first, second] = [uniqueId('job'), uniqueId('job')];
      let stopping: Promise<void> | undefined;
      // the step that completes the first job and claims the second ends as stop() begins
      const jobs = new Proxy(database.store.jobs, {
        get(target, key, receiver) {
          if (key !== 'completeAndClaimNext') return Reflect.get(target, key, receiver) as unknown;
          return async (...args: Parameters<Store['jobs']['completeAndClaimNext']>) => {
            const result = await target.completeAndClaimNext(...args);
            stopping ??= worker.stop(2_000);
            return result;
          };
        },
      });
      const store = new Proxy(database.store, {
        get: (target, key, receiver) => (key === 'jobs' ? jobs : (Reflect.get(target, key, receiver) as unknown)),
      });
      const worker = new Worker(store, { [kind]: noting(5, true, started) }, { concurrency: 4, pollMs: 20, retryBaseMs: 10, retryMaxMs: 20, logger: silent });
      await enqueueInOneQueue(kind, [first, second]);
      worker.start();
      await waitFor(async () => stopping !== undefined);
      await stopping;
      expect(started).toEqual([first]);
      expect(await status(first)).toBe('done');
      const row = await database.driver.get<{ status: string; attempts: number | string }>('SELECT status, attempts FROM jobs WHERE id = ?', [second]);
      expect({ status: row?.status, attempts: Number(row?.attempts) }).toEqual({ status: 'pending', attempts: 0 });
    });

    it('gives back unrun the jobs a round of claims took as stop() began', async () => {
      const kind = uniqueId('test.plain');
      const started: string[] = [];
      const job = uniqueId('job');
      let stopping: Promise<void> | undefined;
      // stop() begins while the claim's statement is under way, after the round checked for it
      const store = claimingThrough(async (claim, ...args) => {
        const jobs = await claim(...args);
        if (jobs.length > 0) stopping ??= worker.stop(2_000);
        return jobs;
      });
      const worker = new Worker(store, { [kind]: noting(5, false, started) }, { concurrency: 4, pollMs: 20, retryBaseMs: 10, retryMaxMs: 20, logger: silent });
      await enqueueInOneQueue(kind, [job]);
      worker.start();
      await waitFor(async () => stopping !== undefined);
      await stopping;
      expect(started).toEqual([]);
      const row = await database.driver.get<{ status: string; attempts: number | string }>('SELECT status, attempts FROM jobs WHERE id = ?', [job]);
      expect({ status: row?.status, attempts: Number(row?.attempts) }).toEqual({ status: 'pending', attempts: 0 });
      expect(worker.status().state).toBe('stopped');
    });
  });
});
