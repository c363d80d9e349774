/**
 * The job claim with a queue as the reasoning layer leaves it under load: `npx tsx bench/job-claim.ts`
 * (SQLite, a new file; BENCH_DATABASE_URL=postgres://... for PostgreSQL, an empty database, analysed
 * after the load unless BENCH_CLAIM_ANALYZE=0: the plans before autovacuum's first ANALYZE).
 *
 * Queues: 2 webhook endpoints with BENCH_CLAIM_DELIVERIES (12,000) deliveries waiting behind a
 * running head each, 250 deriver queues and BENCH_CLAIM_DREAMS (2,000) automatic dreams not due
 * for an hour, BENCH_CLAIM_DUE (20) due embedding queues (one per session: a backlog after an import
 * or a slow model has thousands). Then each worker lane (one kind) claims up to 8 jobs, 30
 * times in a transaction that is rolled back; it prints the median time of one claim per lane and
 * their sum, then the median of a worker's round as the worker runs it after every finished job:
 * one statement naming the kinds with work (claimableKinds), then those kinds' claims.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/runtime/database.js';

import type { NewJob } from '../src/storage/store.js';
import { DELIVER_WEBHOOK, DREAM, DREAM_AUTO, EMBED_CONCLUSIONS, EMBED_MESSAGES, PURGE_SESSION, REPRESENT, SUMMARIZE } from '../src/domain/job-kinds.js';

const deliveries = Number(process.env.BENCH_CLAIM_DELIVERIES ?? 12_000);
const dreams = Number(process.env.BENCH_CLAIM_DREAMS ?? 2_000);
const due = Number(process.env.BENCH_CLAIM_DUE ?? 20);
const url = process.env.BENCH_DATABASE_URL;
const dir = url === undefined ? mkdtempSync(join(tmpdir(), 'engram-claim-')) : undefined;
const db = await openDatabase(url ?? join(dir!, 'claim.db'));
try {
  const now = new Date();
  const later = new Date(now.getTime() + 3_600_000);
  const jobs: NewJob[] = [];
  const add = (kind: string, queueKey: string, runAfter?: Date) =>
    jobs.push({ id: `bench-${jobs.length}`, kind, workspaceId: null, queueKey, payload: {}, maxAttempts: 3, runAfter });
  for (let i = 0; i < deliveries; i++) add(DELIVER_WEBHOOK, `webhook:${i % 2}`);
  for (let i = 0; i < 250; i++) add(REPRESENT, `represent:${i}`, later);
  for (let i = 0; i < dreams; i++) add(DREAM_AUTO, `dream:${i}`, later);
  for (let i = 0; i < due; i++) add(EMBED_MESSAGES, `embed:${i}`);
  for (let i = 0; i < jobs.length; i += 500) await db.store.transaction((tx) => tx.jobs.enqueue(jobs.slice(i, i + 500), now));
  // the two endpoints' first deliveries are running
  await db.store.jobs.claim(8, now, later, DELIVER_WEBHOOK);
  if (db.driver.dialect === 'postgres' && process.env.BENCH_CLAIM_ANALYZE !== '0') await db.driver.run('ANALYZE jobs');

  class Rollback extends Error {}
  /** One claim of `kind` in a transaction that is rolled back: how many it would take. */
  const claimRolledBack = async (kind: string): Promise<number> => {
    let claimed = 0;
    await db.store
      .transaction(async (tx) => {
        claimed = (await tx.jobs.claim(8, now, later, kind)).length;
        throw new Rollback();
      })
      .catch((error: unknown) => {
        if (!(error instanceof Rollback)) throw error;
      });
    return claimed;
  };
  /** The median of 30 runs of `fn`, in µs. */
  const medianUs = async (fn: () => Promise<unknown>): Promise<number> => {
    const times: number[] = [];
    for (let i = 0; i < 30; i++) {
      const started = performance.now();
      await fn();
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return times[15] * 1000;
  };
  const line = (label: string, us: number, note: string) => console.log(`  ${label.padEnd(28)} ${us.toFixed(0).padStart(7)} µs  ${note}`);

  const lanes = [DELIVER_WEBHOOK, PURGE_SESSION, REPRESENT, SUMMARIZE, DREAM, DREAM_AUTO, EMBED_MESSAGES, EMBED_CONCLUSIONS];
  console.log(`job claim on ${db.driver.dialect}: ${jobs.length.toLocaleString('en-US')} open jobs; median of 30 claims (up to 8 jobs) per lane`);
  let round = 0;
  for (const kind of lanes) {
    let claimed = 0;
    const us = await medianUs(async () => (claimed = await claimRolledBack(kind)));
    round += us;
    line(kind, us, `(${claimed} claimable)`);
  }
  line('all lanes', round, '');

  // a worker's round as it runs: one statement for the kinds with work, then their claims
  let ready = new Set<string>();
  const us = await medianUs(async () => {
    ready = await db.store.jobs.claimableKinds(lanes, now);
    for (const kind of ready) await claimRolledBack(kind);
  });
  line('a worker round', us, `(kinds with work: ${[...ready].join(', ')})`);
} finally {
  await db.driver.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}
