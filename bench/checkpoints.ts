/**
 * Commits with SQLite's checkpoints in the commit (inline) and in a thread of their own
 * (background, the default): `npx tsx bench/checkpoints.ts`. Each run is a new database file
 * holding BENCH_CHECKPOINT_JOBS (8,000) deliveries to one endpoint; then BENCH_CHECKPOINT_COMMITS
 * (5,000) times one transaction completes the running delivery and claims the next, as the worker
 * does (about 8 pages a commit). It prints the time of a commit on the event loop (mean, p50, p99,
 * max), the longest the event loop was held (monitorEventLoopDelay) and the checkpoints the thread
 * ran. Two rounds of each, alternating.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { openDatabase } from '../src/runtime/database.js';

import { SqliteDriver } from '../src/storage/sqlite/sqlite-driver.js';
import type { NewJob } from '../src/storage/store.js';
import { percentile } from './load.js';
import { DELIVER_WEBHOOK } from '../src/domain/job-kinds.js';

const jobCount = Number(process.env.BENCH_CHECKPOINT_JOBS ?? 8_000);
const commits = Number(process.env.BENCH_CHECKPOINT_COMMITS ?? 5_000);

async function run(checkpoints: 'inline' | 'background'): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-checkpoints-'));
  const db = await openDatabase(join(dir, 'bench.db'), { sqlite: { checkpoints } });
  try {
    const now = new Date();
    const later = new Date(now.getTime() + 3_600_000);
    const jobs: NewJob[] = Array.from({ length: jobCount }, (_, i) => ({ id: `job-${i}`, kind: DELIVER_WEBHOOK, workspaceId: 'w', queueKey: 'webhook:0', payload: { n: i }, maxAttempts: 3 }));
    for (let i = 0; i < jobs.length; i += 500) await db.store.transaction((tx) => tx.jobs.enqueue(jobs.slice(i, i + 500), now));
    let [head] = await db.store.jobs.claim(1, now, later, DELIVER_WEBHOOK);
    const times: number[] = [];
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    for (let i = 0; i < commits && head !== undefined; i++) {
      const started = performance.now();
      const [next] = await db.store.jobs.completeAndClaimNext(head, now, later);
      times.push(performance.now() - started);
      head = next!;
      // the event loop gets a turn between commits, as between requests
      if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    delay.disable();
    times.sort((a, b) => a - b);
    const us = (ms: number) => `${Math.round(ms * 1000).toLocaleString('en-US')} µs`;
    const at = (p: number) => us(percentile(times, p));
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    const ran = db.driver instanceof SqliteDriver ? db.driver.checkpoints : undefined;
    console.log(
      `${checkpoints.padEnd(10)} ${times.length} commits: mean ${us(mean)}, p50 ${at(50)}, p99 ${at(99)}, max ${at(100)}, ${times.filter((t) => t > 5).length} over 5 ms; ` +
        `event loop held at most ${(delay.max / 1e6).toFixed(1)} ms; checkpoints by the thread: ${ran?.done ?? 0}${ran?.failed ? ' (it failed)' : ''}`,
    );
  } finally {
    await db.driver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

for (let round = 0; round < 2; round++) {
  await run('inline');
  await run('background');
}
