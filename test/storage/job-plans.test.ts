import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { SqlJobStore } from '../../src/storage/sql/job-store.js';
import { SqlReasoningStore } from '../../src/storage/sql/reasoning-store.js';
import { openFreshDatabase } from '../support/fresh-database.js';
import { recordingExecutor } from '../support/recording-executor.js';
import type { NewJob } from '../../src/storage/store.js';
import { DIALECT } from '../support/test-app.js';

/*
 * The job queue's statements on the paths every write and every worker round takes read the
 * jobs table through its indexes, never by scanning it: the table keeps finished jobs for a day,
 * so a scan there costs more with every job ever run. SQLite's plans, read with EXPLAIN QUERY
 * PLAN for each statement the store sent (a partial index serves a query only when the query
 * names the index's condition word for word, which is easy to miss).
 */

describe.skipIf(DIALECT === 'postgres')('job queue statements', () => {
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase(':memory:');
  });
  afterAll(() => database.driver.close());

  it('read the jobs table through an index on every write path and worker round', async () => {
    const driver = database.driver;
    const { executor, issued } = recordingExecutor(driver);
    const jobs = new SqlJobStore(executor);
    const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds));
    const job = (id: string, kind: string, queueKey: string): NewJob => ({ id, kind, workspaceId: 'w', queueKey, payload: {}, maxAttempts: 3 });

    await jobs.enqueue([job('a', 'k', 'q1'), job('b', 'k', 'q1'), job('c', 'other', 'q2')], at(0));
    // the deriver's schedule: a pending job brought forward, then a new one queued
    await jobs.schedule(job('d', 'k', 'q1'), at(5), at(1));
    await jobs.schedule(job('e', 'k', 'q3'), at(5), at(1));
    // a message write's units, several keys at once
    await jobs.enqueue([{ ...job('f', 'k', 'q1'), runAfter: at(4), scheduled: true }, { ...job('g', 'k', 'q4'), runAfter: at(4), scheduled: true }, { ...job('h', 'other', 'q5'), runAfter: at(100) }], at(1));
    expect((await jobs.openJobs('q1')).map((j) => j.id)).toEqual(['a', 'b']);
    expect((await jobs.openJobs('q4')).map((j) => j.id)).toEqual(['g']);
    // an automatic dream moved on by new activity
    await jobs.reschedulePending('q2', 'other', at(60));
    expect([...(await jobs.claimableKinds(['k', 'other', 'none'], at(10)))]).toEqual(['k']);
    const claimed = await jobs.claim(8, at(10), at(70), 'k');
    expect(claimed.map((j) => j.id).sort()).toEqual(['a', 'e', 'g']);
    await jobs.extendLease('a', at(80));
    // the worker's next delivery of an ordered queue, claimed as the one before is completed
    expect((await jobs.completeAndClaimNext({ id: 'a', queueKey: 'q1', kind: 'k' }, at(11), at(70), 16)).map((j) => j.id)).toEqual(['b']);
    await jobs.release('b');
    await jobs.retry('e', at(20), 'failed once');
    await jobs.release('e');
    await jobs.deadLetter('b', at(12), 'gave up');
    await jobs.openJobs('q1');
    await jobs.openInQueue('q1');
    // the worker's purge of old jobs and of the finished work's counters of past hours
    await jobs.purgeFinished(at(30), at(30), 100);
    const reasoning = new SqlReasoningStore(executor);
    await jobs.purgeCounters(at(30), 100);
    await reasoning.purgeCounters(at(30), 100);
    // queue status, the workspace's and a session's
    await jobs.countsByQueue('w', ['k'], at(12), { finishedSince: at(0) });
    await jobs.countsByQueue('w', ['k', 'other', 'third'], at(12), { finishedSince: at(0), dueOnly: ['other'] });
    await jobs.countsByQueue('w', ['other'], at(12), { finishedSince: at(0), dueOnly: ['other'] });
    await reasoning.representationCounts('w', {}, at(12), at(0));
    await reasoning.representationCounts('w', { sessionId: 's' }, at(12), at(0));
    // and a peer's: as observer (the units it is the sender of, and those of its sessions), as
    // sender, both
    await reasoning.representationCounts('w', { observerId: 'alice' }, at(12), at(0));
    await reasoning.representationCounts('w', { senderId: 'bob' }, at(12), at(0));
    await reasoning.representationCounts('w', { observerId: 'alice', senderId: 'bob' }, at(12), at(0));

    const scans: string[] = [];
    for (const { sql, params } of issued) {
      const plan = await driver.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params);
      for (const { detail } of plan) if (/^SCAN (jobs|job_counters|representation_counters|representation_items|t)\b/.test(detail)) scans.push(`${detail}: ${sql.replace(/\s+/g, ' ').slice(0, 120)}`);
    }
    expect(issued.length).toBeGreaterThan(10);
    expect(scans).toEqual([]);
  });

  it('count the queue depth for /metrics through the partial index of each status', async () => {
    const driver = database.driver;
    const { executor, issued } = recordingExecutor(driver);
    const store = new SqlJobStore(executor);
    await store.countByStatus();
    expect(issued).toHaveLength(1);
    const plan = (await driver.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${issued[0].sql}`)).map((row) => row.detail).filter((detail) => /\bjobs\b/.test(detail));
    // open jobs and dead-lettered ones; not the finished ones (a day's worth)
    expect(plan).toEqual(['SCAN jobs USING COVERING INDEX jobs_claimable', 'SCAN jobs USING COVERING INDEX jobs_claimable', 'SCAN jobs USING COVERING INDEX jobs_dead']);
    // the open jobs by kind: the open jobs' index alone
    await store.countOpenByKind();
    const byKind = (await driver.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${issued[1].sql}`)).map((row) => row.detail).filter((detail) => /\bjobs\b/.test(detail));
    expect(byKind).toEqual(['SCAN jobs USING COVERING INDEX jobs_claimable']);
  });
});

describe.runIf(DIALECT === 'postgres')('queue status on PostgreSQL', () => {
  it('reads the running jobs once, not once per unit or per open item, even before any ANALYZE', async () => {
    // a new database: no statistics yet, as on a fresh install before autovacuum's first ANALYZE
    const database = await openFreshDatabase();
    try {
      const { driver } = database;
      await driver.run("INSERT INTO workspaces (id, created_at) VALUES ('w', now())");
      for (const peer of ['alice', 'bob', 'carol']) await driver.run("INSERT INTO peers (workspace_id, id, created_at) VALUES ('w', ?, now())", [peer]);
      await driver.run("INSERT INTO sessions (workspace_id, id, created_at) VALUES ('w', 's', now())");
      // 300 open items in 3 units (one per sender), and alice's unit running
      await driver.run(
        `INSERT INTO messages (id, workspace_id, session_id, peer_id, content, created_at)
         SELECT 'm' || n, 'w', 's', (ARRAY['alice', 'bob', 'carol'])[n % 3 + 1], 'hello', now() FROM generate_series(1, 300) AS n`,
      );
      await driver.run(
        `INSERT INTO representation_items (workspace_id, session_id, observed_id, message_id, message_pk, tokens, observers, created_at)
         SELECT workspace_id, session_id, peer_id, id, pk, 1, jsonb_build_array(peer_id), now() FROM messages`,
      );
      await driver.run(
        `INSERT INTO jobs (id, kind, workspace_id, queue_key, status, max_attempts, run_after, locked_until, created_at)
         VALUES ('j', 'reasoning.represent', 'w', 'representation:w:s:alice', 'running', 3, now(), now() + interval '1 hour', now())`,
      );
      const { executor, issued } = recordingExecutor(driver);
      const counts = await new SqlReasoningStore(executor).representationCounts('w', {}, new Date(), new Date(0));
      // alice's unit in progress, bob's and carol's pending, added up for the session
      expect(counts.map((c) => [c.sessionId, c.inProgress, c.pending])).toEqual([['s', 100, 200]]);
      expect(issued).toHaveLength(1);
      const [{ 'QUERY PLAN': [plan] }] = await driver.all<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${issued[0].sql}`, issued[0].params);
      const loops: number[] = [];
      const walk = (node: PlanNode) => {
        if (node['Relation Name'] === 'jobs') loops.push(node['Actual Loops']);
        for (const child of node.Plans ?? []) walk(child);
      };
      walk(plan.Plan);
      // 3 units, 300 items: each read of the jobs ran once
      expect(loops.length).toBeGreaterThan(0);
      expect(Math.max(...loops)).toBe(1);
    } finally {
      await database.close();
    }
  });
});

describe('queue status of one session', () => {
  /*
   * A session's summaries are read from that session's counters and queue. Reading every
   * summary queue of the workspace and keeping one took 118 ms on SQLite and 104 ms on
   * PostgreSQL for a session of a workspace whose 20,000 sessions had summaries in the last day.
   */
  it("reads the session's own summary counters and open jobs, not the workspace's", async () => {
    const database = await openFreshDatabase();
    try {
      const { driver } = database;
      const at = (hour: number) => new Date(Date.UTC(2026, 0, 1, hour));
      const now = DIALECT === 'postgres' ? at(12) : at(12).getTime() * 1000;
      await driver.run("INSERT INTO workspaces (id, metadata, configuration, created_at) VALUES ('w', '{}', '{}', ?)", [now]);
      const hour = Math.floor(at(12).getTime() / 3_600_000);
      // three sessions with finished summaries in two hours, and an open summary job in s1 and s2
      for (const session of ['s1', 's2', 's3']) {
        await driver.run("INSERT INTO sessions (workspace_id, id, v1_id, metadata, configuration, created_at) VALUES ('w', ?, ?, '{}', '{}', ?)", [session, `v1-${session}`, now]);
        for (const h of [hour - 2, hour]) {
          await driver.run(
            "INSERT INTO job_counters (workspace_id, kind, hour, queue_key, session_id, completed, failed) VALUES ('w', 'reasoning.summarize', ?, ?, ?, ?, 1)",
            [h, `summary:w:${session}`, session, h === hour ? 2 : 1],
          );
        }
        if (session !== 's3') {
          await driver.run(
            "INSERT INTO jobs (id, kind, workspace_id, queue_key, status, max_attempts, run_after, created_at) VALUES (?, 'reasoning.summarize', 'w', ?, 'pending', 3, ?, ?)",
            [`job-${session}`, `summary:w:${session}`, now, now],
          );
        }
      }
      const { executor, issued } = recordingExecutor(driver);
      const jobs = new SqlJobStore(executor);
      const session = { id: 's2', queueKey: 'summary:w:s2' };
      const counts = await jobs.countsByQueue('w', ['reasoning.summarize'], at(12), { finishedSince: at(0), session });
      expect(counts).toEqual([{ kind: 'reasoning.summarize', queueKey: 'summary:w:s2', completed: 3, failed: 2, inProgress: 0, pending: 1 }]);
      // the hours before finishedSince's are left out
      expect(await jobs.countsByQueue('w', ['reasoning.summarize'], at(12), { finishedSince: at(11), session })).toEqual([
        { kind: 'reasoning.summarize', queueKey: 'summary:w:s2', completed: 2, failed: 1, inProgress: 0, pending: 1 },
      ]);
      const { sql, params } = issued[0];
      if (DIALECT === 'postgres') {
        // a new database, before any ANALYZE
        const [{ 'QUERY PLAN': [plan] }] = await driver.all<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
        const indexes: Record<string, string | undefined> = {};
        const walk = (node: PlanNode) => {
          if (node['Relation Name'] !== undefined) indexes[node['Relation Name']] = node['Index Name'];
          for (const child of node.Plans ?? []) walk(child);
        };
        walk(plan.Plan);
        // the open jobs through one of the indexes of open jobs alone (without statistics the
        // planner may take the kind's, jobs_claimable), never the day of finished jobs
        expect(indexes).toEqual({ job_counters: 'job_counters_session', jobs: expect.stringMatching(/^jobs_(open|open_kind|claimable)$/) });
      } else {
        const plan = (await driver.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params)).map((row) => row.detail);
        expect(plan).toContain('SEARCH job_counters USING INDEX job_counters_session (workspace_id=? AND session_id=? AND kind=? AND hour>?)');
        expect(plan.filter((detail) => /^SEARCH jobs /.test(detail))).toEqual([expect.stringMatching(/^SEARCH jobs USING INDEX jobs_open\w* \(.*queue_key=\?\)$/)]);
      }
    } finally {
      await database.close();
    }
  });
});

describe("queue status's job-kept work in one statement", () => {
  it('counts several kinds at once as each kind alone, pending of the due-only kinds from their due time', async () => {
    const database = await openFreshDatabase();
    try {
      const { driver } = database;
      const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 12, minute));
      const time = (date: Date) => (DIALECT === 'postgres' ? date : date.getTime() * 1000);
      await driver.run("INSERT INTO workspaces (id, metadata, configuration, created_at) VALUES ('w', '{}', '{}', ?)", [time(at(0))]);
      for (const session of ['s1', 's2']) {
        await driver.run("INSERT INTO sessions (workspace_id, id, v1_id, metadata, configuration, created_at) VALUES ('w', ?, ?, '{}', '{}', ?)", [session, `v1-${session}`, time(at(0))]);
      }
      const hour = Math.floor(at(0).getTime() / 3_600_000);
      const counters: [string, string, number, number][] = [
        ['reasoning.summarize', 'summary:w:s1', 3, 1],
        ['reasoning.summarize', 'summary:w:s2', 1, 0],
        ['reasoning.dream.auto', 'dream:w:alice:alice', 2, 0],
      ];
      for (const [kind, queueKey, completed, failed] of counters) {
        await driver.run('INSERT INTO job_counters (workspace_id, kind, hour, queue_key, session_id, completed, failed) VALUES (?, ?, ?, ?, ?, ?, ?)', [
          'w',
          kind,
          hour,
          queueKey,
          queueKey.startsWith('summary:') ? queueKey.slice('summary:w:'.length) : null,
          completed,
          failed,
        ]);
      }
      // [id, kind, queue, status, due (minute), lease until (minute)]
      const open: [string, string, string, string, number, number | null][] = [
        ['j1', 'reasoning.summarize', 'summary:w:s1', 'pending', 0, null],
        ['j2', 'reasoning.dream.auto', 'dream:w:alice:alice', 'pending', 30, null],
        ['j3', 'reasoning.dream.auto', 'dream:w:bob:bob', 'pending', 5, null],
        ['j4', 'scope.backfill', 'scope:w:x:s1', 'running', 0, 40],
        ['j5', 'scope.backfill', 'scope:w:x:s2', 'running', 0, 8],
        ['j6', 'webhook.deliver', 'webhook:w:e1', 'pending', 0, null],
      ];
      for (const [id, kind, queueKey, status, due, lease] of open) {
        await driver.run('INSERT INTO jobs (id, kind, workspace_id, queue_key, status, max_attempts, run_after, locked_until, created_at) VALUES (?, ?, ?, ?, ?, 3, ?, ?, ?)', [
          id,
          kind,
          'w',
          queueKey,
          status,
          time(at(due)),
          lease === null ? null : time(at(lease)),
          time(at(0)),
        ]);
      }
      const { executor, issued } = recordingExecutor(driver);
      const jobs = new SqlJobStore(executor);
      const now = at(10);
      const options = { finishedSince: at(0), dueOnly: ['reasoning.dream.auto'] };
      const kinds = ['reasoning.summarize', 'reasoning.dream.auto', 'scope.backfill'];
      const sorted = <T extends { kind: string; queueKey: string }>(rows: T[]) => [...rows].sort((a, b) => `${a.kind} ${a.queueKey}`.localeCompare(`${b.kind} ${b.queueKey}`));
      const together = await jobs.countsByQueue('w', kinds, now, options);
      expect(issued).toHaveLength(1);
      const alone = [];
      for (const kind of kinds) alone.push(...(await jobs.countsByQueue('w', [kind], now, options)));
      expect(sorted(together)).toEqual(sorted(alone));
      const counts = (kind: string, queueKey: string) => together.find((row) => row.kind === kind && row.queueKey === queueKey);
      expect(counts('reasoning.summarize', 'summary:w:s1')).toMatchObject({ completed: 3, failed: 1, inProgress: 0, pending: 1 });
      expect(counts('reasoning.summarize', 'summary:w:s2')).toMatchObject({ completed: 1, failed: 0, inProgress: 0, pending: 0 });
      // alice's automatic dream is due at minute 30: not pending yet; bob's, due at 5, is
      expect(counts('reasoning.dream.auto', 'dream:w:alice:alice')).toMatchObject({ completed: 2, pending: 0 });
      expect(counts('reasoning.dream.auto', 'dream:w:bob:bob')).toMatchObject({ pending: 1 });
      // a live lease is in progress, a lapsed one pending again
      expect(counts('scope.backfill', 'scope:w:x:s1')).toMatchObject({ inProgress: 1, pending: 0 });
      expect(counts('scope.backfill', 'scope:w:x:s2')).toMatchObject({ inProgress: 0, pending: 1 });
      // a kind not asked for is not read
      expect(together.some((row) => row.kind === 'webhook.deliver')).toBe(false);
      // without the due-only kinds, the pending dream counts at once
      expect((await jobs.countsByQueue('w', ['reasoning.dream.auto'], now, { finishedSince: at(0) })).find((row) => row.queueKey === 'dream:w:alice:alice')).toMatchObject({ pending: 1 });
      expect(await jobs.countsByQueue('w', [], now, options)).toEqual([]);
    } finally {
      await database.close();
    }
  });
});

interface PlanNode {
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Loops': number;
  Plans?: PlanNode[];
}
