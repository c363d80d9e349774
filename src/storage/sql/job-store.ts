import type { JobListing, JobListStatus, JobRecord, JobStore, JsonObject, NewJob, Page, WorkCounts } from '../store.js';
import type { Dialect } from './dialect.js';
import { DIALECTS } from './dialects.js';
import type { SqlExecutor } from './driver.js';
import { finishedHour, purgeHoursBefore } from './finished-hour.js';

interface JobRow {
  id: string;
  kind: string;
  workspace_id: string | null;
  queue_key: string;
  payload: unknown;
  attempts: number;
  max_attempts: number;
  created_at: unknown;
}

const JOB_COLUMNS = 'id, kind, workspace_id, queue_key, payload, attempts, max_attempts, created_at';

interface JobListingRow extends JobRow {
  status: JobListing['status'];
  last_error: string | null;
  run_after: unknown;
  finished_at: unknown;
}

const LISTING_COLUMNS = `${JOB_COLUMNS}, status, last_error, run_after, finished_at`;

/**
 * The condition of each listed state, with the partial index's own condition word for word so
 * that SQLite reads jobs_workspace_listed (migration 0044), never the workspace's finished jobs.
 */
const LISTED = "status IN ('pending', 'running', 'dead')";
const LIST_CONDITION: Record<JobListStatus, string> = {
  pending: `${LISTED} AND status = 'pending' AND last_error IS NULL`,
  failed: `${LISTED} AND status = 'pending' AND last_error IS NOT NULL`,
  running: `${LISTED} AND status = 'running'`,
  dead: `${LISTED} AND status = 'dead'`,
};

/** A job (the row `alias` names; '': the statement's own) that may be claimed at `?` (twice): pending and due, or running with its lease run out. */
const claimableAs = (alias: string) => {
  const at = alias === '' ? '' : `${alias}.`;
  return `((${at}status = 'pending' AND ${at}run_after <= ?) OR (${at}status = 'running' AND ${at}locked_until < ?))`;
};
const CLAIMABLE = claimableAs('head');

/**
 * The pk of the first open job of the queue `queueKey` names (an expression or `?`): its head, the
 * only job of it that may run. Through jobs_open, whose condition is named word for word (SQLite).
 */
const queueHead = (queueKey: string) => `SELECT MIN(o.pk) FROM jobs o WHERE o.queue_key = ${queueKey} AND o.status IN ('pending', 'running')`;

/** Most jobs one claim takes (a worker asks for its free slots). */
const MAX_CLAIM = 1000;

/**
 * How many of a kind's earliest due jobs a claim of `count` looks at for heads before it walks
 * the queues: four per job wanted, at least 32, at most 256 (a few µs each on SQLite).
 */
const claimScan = (count: number) => Math.min(256, Math.max(32, 4 * count));

/** The work queue's queries (see migrations/0005_jobs.sql for the states). */
export class SqlJobStore implements JobStore {
  private readonly dialect: Dialect;

  /**
   * `onQueued` is called after every enqueue that wrote a job. `walkFirst` holds the kinds whose
   * earliest due jobs last waited behind running heads (a backlog of deliveries to one endpoint):
   * their claims walk the queues at once instead of reading those jobs again for nothing, until a
   * walk finds as many heads as it was asked for. A hint of this process only (shared with the
   * stores of its transactions): either way of claiming is correct.
   */
  constructor(
    private readonly db: SqlExecutor,
    private readonly onQueued: () => void = () => undefined,
    private readonly walkFirst = new Set<string>(),
    /** Runs its argument in a transaction (the store's own, or `fn(db)` inside one already). */
    private readonly inTransaction: <T>(fn: (db: SqlExecutor) => Promise<T>) => Promise<T> = (fn) => fn(db),
  ) {
    this.dialect = DIALECTS[db.dialect];
  }

  private job(row: JobRow): JobRecord {
    return {
      id: row.id,
      kind: row.kind,
      workspaceId: row.workspace_id,
      queueKey: row.queue_key,
      payload: this.dialect.readJson(row.payload),
      attempts: Number(row.attempts),
      maxAttempts: Number(row.max_attempts),
      createdAt: this.dialect.readTime(row.created_at),
    };
  }

  async enqueue(jobs: readonly NewJob[], now: Date): Promise<void> {
    if (jobs.length === 0) return;
    const c = this.dialect;
    let queued = jobs;
    if (jobs.some((job) => job.scheduled === true)) {
      if (this.db.dialect === 'postgres') {
        await this.enqueueScheduling(jobs, now);
        this.onQueued();
        return;
      }
      // SQLite's statements cost no round trip: schedule's update a key at a time
      const unmoved: NewJob[] = [];
      for (const job of jobs) if (job.scheduled !== true || (await this.movePending(job.queueKey, job.runAfter ?? now)) === 0) unmoved.push(job);
      queued = unmoved;
      if (queued.length === 0) {
        this.onQueued();
        return;
      }
    }
    await this.db.run(
      `INSERT INTO jobs (id, kind, workspace_id, queue_key, payload, max_attempts, run_after, created_at)
       VALUES ${queued.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
      queued.flatMap((j) => [j.id, j.kind, j.workspaceId, j.queueKey, c.json(j.payload), j.maxAttempts, c.time(j.runAfter ?? now), c.time(now)]),
    );
    this.onQueued();
  }

  /**
   * enqueue on PostgreSQL with scheduled jobs: their keys' pending jobs moved and the rest
   * inserted in one statement (the INSERT reads what the UPDATE moved through its RETURNING),
   * one probe of jobs_open a scheduled key. A round trip less on every message write than the
   * UPDATE and the INSERT apart.
   */
  private async enqueueScheduling(jobs: readonly NewJob[], now: Date): Promise<void> {
    const c = this.dialect;
    await this.db.run(
      `WITH v AS (
         SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::int[], ?::timestamptz[], ?::boolean[])
           WITH ORDINALITY AS v (id, kind, workspace_id, queue_key, payload, max_attempts, run_after, scheduled, at)
       ), moved AS (
         UPDATE jobs j SET run_after = CASE WHEN j.run_after > v.run_after THEN v.run_after ELSE j.run_after END
         FROM v WHERE v.scheduled AND j.queue_key = v.queue_key AND j.status IN ('pending', 'running') AND j.status = 'pending'
         RETURNING j.queue_key
       )
       INSERT INTO jobs (id, kind, workspace_id, queue_key, payload, max_attempts, run_after, created_at)
       SELECT v.id, v.kind, v.workspace_id, v.queue_key, v.payload::jsonb, v.max_attempts, v.run_after, ? FROM v
       WHERE NOT (v.scheduled AND v.queue_key IN (SELECT queue_key FROM moved))
       ORDER BY v.at`,
      [
        jobs.map((j) => j.id),
        jobs.map((j) => j.kind),
        jobs.map((j) => j.workspaceId),
        jobs.map((j) => j.queueKey),
        jobs.map((j) => c.json(j.payload)),
        jobs.map((j) => j.maxAttempts),
        jobs.map((j) => c.time(j.runAfter ?? now)),
        jobs.map((j) => j.scheduled === true),
        c.time(now),
      ],
    );
  }

  /** Brings the queue key's pending job forward to `runAfter` (never later); how many it moved. */
  private movePending(queueKey: string, runAfter: Date): Promise<number> {
    const due = this.dialect.time(runAfter);
    return this.db.run(
      // the open jobs' condition word for word, so that SQLite reads the queue through jobs_open
      // instead of scanning the table (finished jobs included)
      `UPDATE jobs SET run_after = CASE WHEN run_after > ? THEN ? ELSE run_after END
       WHERE queue_key = ? AND status IN ('pending', 'running') AND status = 'pending'`,
      [due, due, queueKey],
    );
  }

  async schedule(job: NewJob, runAfter: Date, now: Date): Promise<void> {
    const c = this.dialect;
    const due = c.time(runAfter);
    const moved = await this.movePending(job.queueKey, runAfter);
    if (moved > 0) {
      if (runAfter <= now) this.onQueued();
      return;
    }
    await this.db.run(
      `INSERT INTO jobs (id, kind, workspace_id, queue_key, payload, max_attempts, run_after, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [job.id, job.kind, job.workspaceId, job.queueKey, c.json(job.payload), job.maxAttempts, due, c.time(now)],
    );
    this.onQueued();
  }

  async claim(limit: number, now: Date, leaseUntil: Date, kind?: string): Promise<JobRecord[]> {
    const count = Math.min(Math.trunc(limit), MAX_CLAIM);
    if (!(count >= 1)) return [];
    if (kind !== undefined && !this.walkFirst.has(kind)) {
      const heads = await this.dueHeads(count, now, kind);
      if (heads !== undefined) return heads.length === 0 ? [] : this.claimHeads(heads, now, leaseUntil);
      this.walkFirst.add(kind);
    }
    const claimed = await this.claimByWalk(count, now, leaseUntil, kind);
    // a walk that found as many heads as wanted: there may be many, look at the due jobs again
    if (kind !== undefined && claimed.length >= count) this.walkFirst.delete(kind);
    return claimed;
  }

  /**
   * The heads among the first claimScan(count) due jobs of `kind` (earliest due first) and the
   * jobs of `kind` whose lease ran out, the oldest `count` of them; undefined when that cannot be told
   * without walking the queues (more due jobs than were looked at, too few of them heads). Its
   * cost follows claimScan(count), not the number of queues: with thousands of queues holding due
   * work (one per session for embeddings and summaries) a claim no longer walks them all.
   */
  private async dueHeads(count: number, now: Date, kind: string): Promise<(number | string)[] | undefined> {
    const at = this.dialect.time(now);
    const scan = claimScan(count);
    // the open jobs' condition named word for word, as SQLite's partial indexes require;
    // a job is a head when no open job of its queue is older
    const rows = await this.db.all<{ pk: number | string; due: number | string; head: unknown }>(
      `SELECT d.pk, d.due, NOT EXISTS (
         SELECT 1 FROM jobs o WHERE o.queue_key = d.queue_key AND o.status IN ('pending', 'running') AND o.pk < d.pk) AS head
       FROM (
         SELECT * FROM (SELECT pk, queue_key, 1 AS due FROM jobs
           WHERE kind = ? AND status IN ('pending', 'running') AND status = 'pending' AND run_after <= ? ORDER BY run_after LIMIT ${scan}) p
         UNION ALL
         SELECT pk, queue_key, 0 AS due FROM jobs
           WHERE kind = ? AND status IN ('pending', 'running') AND status = 'running' AND locked_until < ?
       ) d`,
      [kind, at, kind, at],
    );
    const heads = rows.filter((row) => Boolean(row.head)).map((row) => row.pk);
    const scanned = rows.reduce((n, row) => n + (Number(row.due) === 1 ? 1 : 0), 0);
    if (heads.length < count && scanned >= scan) return undefined;
    return heads.sort((a, b) => Number(a) - Number(b)).slice(0, count);
  }

  /**
   * Claims the given heads that are still claimable: another process may have claimed one since
   * they were read (a head stays its queue's head until it finishes, so only its state is
   * checked again). PostgreSQL skips the rows another claim holds instead of waiting.
   */
  private claimHeads(pks: readonly (number | string)[], now: Date, leaseUntil: Date): Promise<JobRecord[]> {
    const at = this.dialect.time(now);
    return this.take(
      `SELECT head.pk FROM jobs head WHERE head.pk IN (${pks.map(() => '?').join(', ')}) AND ${CLAIMABLE}${this.dialect.claimLocking}`,
      [...pks, at, at],
      leaseUntil,
    );
  }

  async completeAndClaimNext(job: Pick<JobRecord, 'id' | 'queueKey' | 'kind'>, now: Date, leaseUntil: Date, limit = 1): Promise<JobRecord[]> {
    const count = Math.max(1, Math.min(Math.trunc(limit), MAX_CLAIM));
    const at = this.dialect.time(now);
    const lease = this.dialect.time(leaseUntil);
    // The job was its queue's head (only heads run), so the jobs after it are the queue's next
    // ones: the index walk starts there instead of stepping over the entries that the queue's
    // finished jobs left at its front (under a backlog, thousands until a vacuum). Of the next
    // `count`, the unbroken run from the first that are of the kind and claimable is taken: a
    // job that is not (due later, of another kind) keeps the ones behind it waiting.
    const following = (donePk: string) =>
      `SELECT o.pk, (o.kind = ? AND ${claimableAs('o')}) AS claimable
       FROM jobs o WHERE o.queue_key = ? AND o.status IN ('pending', 'running') AND o.pk > (${donePk})
       ORDER BY o.pk LIMIT ${count}`;
    if (this.db.dialect === 'postgres') {
      // one statement, one round trip: the completion and the claim (a transaction of the two
      // took four). Its snapshot still sees the job running; `o.pk >` leaves it out. The update
      // checks each row again once it holds its lock, so a job claimed meanwhile is not taken twice.
      const rows = await this.db.all<JobRow & { pk: number | string }>(
        `WITH done AS (UPDATE jobs SET status = 'done', locked_until = NULL, finished_at = ? WHERE id = ? RETURNING pk),
         following AS (${following('SELECT pk FROM done')}),
         run AS (SELECT pk FROM (SELECT pk, bool_and(claimable) OVER (ORDER BY pk) AS unbroken FROM following) f WHERE unbroken)
         UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_until = ?
         WHERE pk IN (SELECT pk FROM run) AND ${claimableAs('')}
         RETURNING pk, ${JOB_COLUMNS}`,
        [at, job.id, job.kind, at, at, job.queueKey, lease, at, at],
      );
      return rows.sort((a, b) => Number(a.pk) - Number(b.pk)).map((row) => this.job(row));
    }
    // SQLite: the statements in one transaction (one commit; its writers take turns)
    return this.inTransaction(async (db) => {
      const jobs = new SqlJobStore(db, this.onQueued, this.walkFirst);
      await jobs.complete(job.id, now);
      const next = await db.all<{ pk: number; claimable: unknown }>(following('SELECT pk FROM jobs WHERE id = ?'), [job.kind, at, at, job.queueKey, job.id]);
      const run = next.findIndex((row) => !row.claimable);
      const pks = (run === -1 ? next : next.slice(0, run)).map((row) => row.pk);
      if (pks.length === 0) return [];
      const claimed = await db.all<JobRow & { pk: number }>(
        `UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_until = ? WHERE pk IN (${pks.map(() => '?').join(', ')}) RETURNING pk, ${JOB_COLUMNS}`,
        [lease, ...pks],
      );
      return claimed.sort((a, b) => a.pk - b.pk).map((row) => jobs.job(row));
    });
  }

  /** Marks the jobs `pkQuery` selects running, leased until `leaseUntil`, and returns them. */
  private async take(pkQuery: string, params: readonly unknown[], leaseUntil: Date): Promise<JobRecord[]> {
    const rows = await this.db.all<JobRow>(
      `UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_until = ?
       WHERE pk IN (${pkQuery})
       RETURNING ${JOB_COLUMNS}`,
      [this.dialect.time(leaseUntil), ...params],
    );
    return rows.map((row) => this.job(row));
  }

  /** The claim that walks every queue holding an open job (of `kind`) for its head. */
  private claimByWalk(count: number, now: Date, leaseUntil: Date, kind: string | undefined): Promise<JobRecord[]> {
    const c = this.dialect;
    const at = c.time(now);
    // Only the head of each queue (its first open job) can run, so the statement walks the
    // queues that have open jobs, one index probe each (the recursive part: a loose scan of
    // jobs_open), and takes the heads that are due: its cost follows the number of queues, not
    // the number of jobs waiting behind a running head. A claim of one kind (a worker's lane)
    // walks only the queues holding an open job of that kind (jobs_open_kind); the worker asks
    // claimableKinds first, so a lane with nothing due does not walk at all.
    // Written into the statement, not bound: with a bound LIMIT SQLite ran the walk about ten
    // times slower (38 against 3 µs with nothing to claim). One statement per count is cached.
    const ofKind = kind === undefined ? '' : ' AND kind = ?';
    const kindParams = kind === undefined ? [] : [kind];
    // The dialect's claim locking: PostgreSQL skips heads another worker is claiming rather than
    // wait for them; SQLite runs claims in an IMMEDIATE transaction, which serialises them.
    return this.take(
      `WITH RECURSIVE queues (queue_key) AS (
         SELECT MIN(queue_key) FROM jobs WHERE status IN ('pending', 'running')${ofKind}
         UNION ALL
         SELECT (SELECT MIN(queue_key) FROM jobs WHERE status IN ('pending', 'running')${ofKind} AND queue_key > q.queue_key)
         FROM queues q WHERE q.queue_key IS NOT NULL
       )
       SELECT head.pk FROM queues q
       ${c.claimHead(queueHead('q.queue_key'))}
       WHERE ${CLAIMABLE}${kind === undefined ? '' : ' AND head.kind = ?'}
       ORDER BY head.pk LIMIT ${count}${c.claimLocking}`,
      [...kindParams, ...kindParams, at, at, ...kindParams],
      leaseUntil,
    );
  }

  async claimableKinds(kinds: readonly string[], now: Date): Promise<Set<string>> {
    if (kinds.length === 0) return new Set();
    const at = this.dialect.time(now);
    // each part a plain MIN over jobs_claimable: one index entry on SQLite and PostgreSQL (the
    // open jobs' condition named word for word, as SQLite's partial index requires)
    const rows = await this.db.all<{ kind: string }>(
      `WITH lanes (kind) AS (VALUES ${kinds.map(() => '(?)').join(', ')})
       SELECT kind FROM lanes
       WHERE (SELECT MIN(d.run_after) FROM jobs d WHERE d.kind = lanes.kind AND d.status IN ('pending', 'running') AND d.status = 'pending') <= ?
          OR (SELECT MIN(d.locked_until) FROM jobs d WHERE d.kind = lanes.kind AND d.status IN ('pending', 'running') AND d.status = 'running') < ?`,
      [...kinds, at, at],
    );
    return new Set(rows.map((row) => row.kind));
  }

  async openJobs(queueKey: string): Promise<{ id: string; kind: string; status: 'pending' | 'running'; runAfter: Date; payload: Record<string, unknown> }[]> {
    const rows = await this.db.all<{ id: string; kind: string; status: 'pending' | 'running'; run_after: unknown; payload: unknown }>(
      `SELECT id, kind, status, run_after, payload FROM jobs WHERE queue_key = ? AND status IN ('pending', 'running') ORDER BY pk`,
      [queueKey],
    );
    return rows.map((row) => ({ id: row.id, kind: row.kind, status: row.status, runAfter: this.dialect.readTime(row.run_after), payload: this.dialect.readJson(row.payload) }));
  }

  async reschedulePending(queueKey: string, kind: string, runAfter: Date, newKind?: string): Promise<number> {
    // through jobs_open, as in schedule
    const moved = await this.db.run(`UPDATE jobs SET run_after = ?, kind = ? WHERE queue_key = ? AND kind = ? AND status IN ('pending', 'running') AND status = 'pending'`, [
      this.dialect.time(runAfter),
      newKind ?? kind,
      queueKey,
      kind,
    ]);
    if (moved > 0) this.onQueued();
    return moved;
  }

  async reschedulePendingOf(queueKeys: readonly string[], kind: string, runAfter: Date): Promise<number> {
    const keys = [...new Set(queueKeys)].sort();
    if (keys.length === 0) return 0;
    let moved = 0;
    if (this.db.dialect === 'postgres' && keys.length > 1) {
      // the rows locked as the sorted subquery returns them: in the keys' order here (not the
      // database's collation), as one key at a time took them
      moved = await this.db.run(
        `UPDATE jobs SET run_after = ? WHERE pk IN (
           SELECT j.pk FROM unnest(?::text[]) WITH ORDINALITY AS k (queue_key, at)
           JOIN jobs j ON j.queue_key = k.queue_key
           WHERE j.kind = ? AND j.status IN ('pending', 'running') AND j.status = 'pending'
           ORDER BY k.at, j.pk FOR NO KEY UPDATE OF j)`,
        [this.dialect.time(runAfter), keys, kind],
      );
      if (moved > 0) this.onQueued();
    } else {
      for (const key of keys) moved += await this.reschedulePending(key, kind, runAfter);
    }
    return moved;
  }

  async extendLease(id: string, until: Date): Promise<void> {
    await this.db.run(`UPDATE jobs SET locked_until = ? WHERE id = ? AND status = 'running'`, [this.dialect.time(until), id]);
  }

  async complete(id: string, now: Date): Promise<void> {
    await this.db.run(`UPDATE jobs SET status = 'done', locked_until = NULL, finished_at = ? WHERE id = ?`, [this.dialect.time(now), id]);
  }

  async completeMany(ids: readonly string[], now: Date): Promise<void> {
    if (ids.length === 0) return;
    const at = this.dialect.time(now);
    // PostgreSQL: one statement text for any number of jobs (one prepared statement)
    if (this.db.dialect === 'postgres') {
      await this.db.run(`UPDATE jobs SET status = 'done', locked_until = NULL, finished_at = ? WHERE id = ANY (?::text[])`, [at, [...ids]]);
    } else {
      await this.db.run(`UPDATE jobs SET status = 'done', locked_until = NULL, finished_at = ? WHERE id IN (${ids.map(() => '?').join(', ')})`, [at, ...ids]);
    }
  }

  async retry(id: string, runAfter: Date, error: string, payload?: JsonObject): Promise<void> {
    const [set, values] = this.newPayload(payload);
    await this.db.run(`UPDATE jobs SET status = 'pending', locked_until = NULL, run_after = ?, last_error = ?${set} WHERE id = ?`, [
      this.dialect.time(runAfter),
      error,
      ...values,
      id,
    ]);
  }

  async deadLetter(id: string, now: Date, error: string, payload?: JsonObject): Promise<void> {
    const [set, values] = this.newPayload(payload);
    await this.db.run(`UPDATE jobs SET status = 'dead', locked_until = NULL, finished_at = ?, last_error = ?${set} WHERE id = ?`, [
      this.dialect.time(now),
      error,
      ...values,
      id,
    ]);
  }

  /** The assignment of an outcome's new payload, if any, to add to a job's UPDATE. */
  private newPayload(payload: JsonObject | undefined): [string, unknown[]] {
    return payload === undefined ? ['', []] : [', payload = ?', [this.dialect.json(payload)]];
  }

  async release(id: string): Promise<void> {
    // the attempt did not run to an end: give it back without counting it
    await this.db.run(`UPDATE jobs SET status = 'pending', locked_until = NULL, attempts = attempts - 1 WHERE id = ? AND status = 'running'`, [id]);
  }

  async purgeFinished(doneBefore: Date, deadBefore: Date, limit: number): Promise<number> {
    const count = Math.max(1, Math.trunc(limit));
    // through jobs_finished and jobs_dead, oldest first, a bounded batch per statement
    let purged = await this.db.run(
      `DELETE FROM jobs WHERE pk IN (SELECT pk FROM jobs WHERE status = 'done' AND finished_at < ? ORDER BY finished_at LIMIT ${count})`,
      [this.dialect.time(doneBefore)],
    );
    if (purged < count) {
      purged += await this.db.run(
        `DELETE FROM jobs WHERE pk IN (SELECT pk FROM jobs WHERE status = 'dead' AND finished_at < ? ORDER BY finished_at LIMIT ${count - purged})`,
        [this.dialect.time(deadBefore)],
      );
    }
    return purged;
  }

  purgeCounters(before: Date, limit: number): Promise<number> {
    return purgeHoursBefore(this.db, 'job_counters', ['workspace_id', 'kind', 'hour', 'queue_key'], before, limit);
  }

  async countsByQueue(
    workspaceId: string,
    kinds: readonly string[],
    now: Date,
    options: { finishedSince: Date; dueOnly?: readonly string[]; session?: { id: string; queueKey: string } },
  ): Promise<(WorkCounts & { kind: string; queueKey: string })[]> {
    if (kinds.length === 0) return [];
    const c = this.dialect;
    const list = kinds.map(() => '?').join(', ');
    const due = (options.dueOnly ?? []).filter((kind) => kinds.includes(kind));
    // a pending job of a kind counted from its due time only then (an automatic dream waiting
    // for its collection to be idle)
    const pendingJob = due.length === 0 ? "status = 'pending'" : `(status = 'pending' AND (kind NOT IN (${due.map(() => '?').join(', ')}) OR run_after <= ?))`;
    // one session's queue: its counters through job_counters_session (migration 0030) and its
    // open jobs by queue key, instead of every queue of the workspace's kind read and all but one
    // dropped (test/storage/job-plans.test.ts)
    const { session } = options;
    const ofCounters = session === undefined ? '' : ' AND session_id = ? AND queue_key = ?';
    const ofJobs = session === undefined ? `workspace_id = ? AND kind IN (${list})` : `queue_key = ? AND workspace_id = ? AND kind IN (${list})`;
    // finished jobs from the queues' counters of the hours since `finishedSince` (migrations
    // 0018 and 0027), open ones through an index of open jobs: the finished jobs kept for a day
    // are not read. The kinds in one statement: queue status asked five in turn, five round trips
    const rows = await this.db.all<Record<string, number | string>>(
      `SELECT kind, queue_key, SUM(completed) AS completed, SUM(failed) AS failed, SUM(in_progress) AS in_progress, SUM(pending) AS pending
       FROM (
         SELECT kind, queue_key, completed, failed, 0 AS in_progress, 0 AS pending FROM job_counters WHERE workspace_id = ? AND kind IN (${list}) AND hour >= ?${ofCounters}
         UNION ALL
         SELECT kind, queue_key, 0, 0,
           CASE WHEN status = 'running' AND locked_until >= ? THEN 1 ELSE 0 END,
           CASE WHEN ${pendingJob} OR (status = 'running' AND locked_until < ?) THEN 1 ELSE 0 END
         FROM jobs WHERE ${ofJobs} AND status IN ('pending', 'running')
       ) AS queues
       GROUP BY kind, queue_key`,
      [
        workspaceId,
        ...kinds,
        finishedHour(options.finishedSince),
        ...(session === undefined ? [] : [session.id, session.queueKey]),
        c.time(now),
        ...(due.length === 0 ? [] : [...due, c.time(now)]),
        c.time(now),
        ...(session === undefined ? [] : [session.queueKey]),
        workspaceId,
        ...kinds,
      ],
    );
    return rows.map((row) => ({
      kind: String(row.kind),
      queueKey: String(row.queue_key),
      completed: Number(row.completed ?? 0),
      failed: Number(row.failed ?? 0),
      inProgress: Number(row.in_progress ?? 0),
      pending: Number(row.pending ?? 0),
    }));
  }

  async openInQueue(queueKey: string): Promise<number> {
    const row = await this.db.get<{ n: number | string }>("SELECT count(*) AS n FROM jobs WHERE queue_key = ? AND status IN ('pending', 'running')", [queueKey]);
    return Number(row?.n ?? 0);
  }

  async countOpenByKind(): Promise<{ kind: string; status: 'pending' | 'running'; count: number }[]> {
    // the open jobs only, through jobs_claimable (kind, status, ...)
    const rows = await this.db.all<{ kind: string; status: 'pending' | 'running'; n: number | string }>(
      "SELECT kind, status, COUNT(*) AS n FROM jobs WHERE status IN ('pending', 'running') GROUP BY kind, status",
    );
    return rows.map((row) => ({ kind: row.kind, status: row.status, count: Number(row.n) }));
  }

  async listOfWorkspace(workspaceId: string, status: JobListStatus, offset: number, limit: number): Promise<Page<JobListing>> {
    const where = `workspace_id = ? AND ${LIST_CONDITION[status]}`;
    const count = await this.db.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM jobs WHERE ${where}`, [workspaceId]);
    const total = Number(count?.n ?? 0);
    // a page past the last is empty without a read (its offset may not even be a safe integer)
    if (offset >= total) return { items: [], total };
    const rows = await this.db.all<JobListingRow>(`SELECT ${LISTING_COLUMNS} FROM jobs WHERE ${where} ORDER BY pk DESC LIMIT ? OFFSET ?`, [workspaceId, limit, offset]);
    return { items: rows.map((row) => this.listing(row)), total };
  }

  async reopenDead(workspaceId: string, id: string, now: Date): Promise<JobListing | undefined> {
    const moved = await this.db.run(
      `UPDATE jobs SET status = 'pending', attempts = 0, run_after = ?, locked_until = NULL, finished_at = NULL
       WHERE id = ? AND workspace_id = ? AND status = 'dead'`,
      [this.dialect.time(now), id, workspaceId],
    );
    if (moved === 0) return undefined;
    this.onQueued();
    const row = await this.db.get<JobListingRow>(`SELECT ${LISTING_COLUMNS} FROM jobs WHERE id = ?`, [id]);
    return row === undefined ? undefined : this.listing(row);
  }

  private listing(row: JobListingRow): JobListing {
    return {
      ...this.job(row),
      status: row.status,
      lastError: row.last_error,
      runAfter: this.dialect.readTime(row.run_after),
      finishedAt: row.finished_at === null || row.finished_at === undefined ? null : this.dialect.readTime(row.finished_at),
    };
  }

  async countByStatus(): Promise<Record<string, number>> {
    // one count per status, each through its partial index (the open jobs' condition word for
    // word, for SQLite): grouping the table by status read every job kept. The finished jobs are
    // not counted: a day of them (kept for a day) could be millions, a count PostgreSQL took 70 to
    // 290 ms a million rows for, at every scrape
    const rows = await this.db.all<{ status: string; n: number | string }>(
      `SELECT 'pending' AS status, COUNT(*) AS n FROM jobs WHERE status IN ('pending', 'running') AND status = 'pending'
       UNION ALL SELECT 'running', COUNT(*) FROM jobs WHERE status IN ('pending', 'running') AND status = 'running'
       UNION ALL SELECT 'dead', COUNT(*) FROM jobs WHERE status = 'dead'`,
    );
    const out: Record<string, number> = { pending: 0, running: 0, dead: 0 };
    for (const row of rows) out[row.status] = Number(row.n);
    return out;
  }
}
