import type { SqlDriver, SqlExecutor } from '../sql/driver.js';
import type { VectorUpkeepStep } from '../vector-index.js';

/*
 * The message vectors' parts on PostgreSQL (migration 0048, decision 0043). `message_vectors` is
 * partitioned by range of the message's key: new vectors land in `message_vectors_open`, which
 * has no HNSW index, and sealed parts each hold the vectors of one range of keys with an HNSW
 * index built at once. One upkeep step, in one transaction:
 *
 * - seal: when the open part holds SEAL_AT vectors, they are copied into a new table, indexed
 *   (the HNSW graph in one CREATE INDEX), then, under a short lock of the open part, brought up
 *   to date with what was written meanwhile, deleted from the open part, and the table attached
 *   as the part of their range;
 * - merge: when the newest MERGE_WIDTH parts have the same level, their vectors are copied into
 *   one table and indexed the same way, and it replaces them under a short lock of the whole table.
 *
 * The long work (copy, index) holds no lock that a search or a write waits for; the locks are
 * taken without waiting (NOWAIT, tried again for up to LOCK_WAIT_MS), so requests never queue
 * behind an upkeep that waits. Only one upkeep runs at a time in the database (an advisory lock);
 * a crash or a cancel rolls the whole step back.
 */

/** Vectors in the open part that are sealed into a part of their own (its search is exact: a few milliseconds). */
export const SEAL_AT = 5000;
/** Parts of one level merged into one of the next. */
export const MERGE_WIDTH = 4;
/** Longest the step tries for its lock before giving up until the next round. */
export const LOCK_WAIT_MS = 5000;

/** The advisory lock of the upkeep (one at a time across processes). */
const UPKEEP_LOCK = 4_242_048;
const OPEN = 'message_vectors_open';

export interface PartOptions {
  sealAt: number;
  mergeWidth: number;
  lockWaitMs: number;
  /** Most MiB of maintenance_work_mem a part's HNSW build is given (VECTOR_BUILD_MEMORY_MB; 0: the role's). */
  buildMemoryMb: number;
  /** Called between the build and the lock, with the step's transaction (tests write beside the step there, or look into it). */
  beforeLock?: (tx: SqlExecutor) => Promise<void>;
}

/** VECTOR_BUILD_MEMORY_MB's default. */
export const BUILD_MEMORY_MB = 512;

export const PART_DEFAULTS: PartOptions = { sealAt: SEAL_AT, mergeWidth: MERGE_WIDTH, lockWaitMs: LOCK_WAIT_MS, buildMemoryMb: BUILD_MEMORY_MB };

/**
 * Bytes an HNSW graph (m 16) holds in memory while it is built, a vector of `dimensions`: the
 * vector (4 bytes a dimension and its header) and about 800 bytes of element and neighbour lists,
 * taken as 1 KiB. pgvector said a graph of 1,536 dimensions no longer fit 64 MB after 9,665
 * vectors: 6,944 bytes each, where this gives 7,176.
 */
export function graphBytes(vectors: number, dimensions: number): number {
  return vectors * (4 * dimensions + 8 + 1024);
}

export interface MessageVectorPart {
  name: string;
  /** The range of message keys: [lo, hi); lo undefined: from the first. */
  lo: number | undefined;
  hi: number;
  level: number;
  rows: number;
}

/** A step as VectorIndex.upkeep reports it, the part with its range of keys. */
export type PartStep = VectorUpkeepStep & ({ kind: 'busy' } | { part: MessageVectorPart });

/**
 * A part's level, from its size: 0 up to `mergeWidth` seals' worth of vectors, 1 up to
 * `mergeWidth` times that, and so on (migration 0048 gives the first part its level the same
 * way). So a part sealed large at once (vectors imported while no worker ran) is not merged
 * again with each few small ones, and a merge that deletions left small stays at its level.
 */
export function levelOf(rows: number, options: Pick<PartOptions, 'sealAt' | 'mergeWidth'>): number {
  let level = 0;
  for (let size = options.sealAt * options.mergeWidth; rows >= size; size *= options.mergeWidth) level++;
  return level;
}

/** The sealed parts, in key order. */
export async function messageVectorParts(db: SqlExecutor): Promise<MessageVectorPart[]> {
  const rows = await db.all<{ name: string; lo: string | null; hi: string; level: number; row_count: string }>(
    'SELECT name, lo, hi, level, row_count FROM message_vector_parts ORDER BY hi',
  );
  return rows.map((row) => ({ name: row.name, lo: row.lo === null ? undefined : Number(row.lo), hi: Number(row.hi), level: Number(row.level), rows: Number(row.row_count) }));
}

/**
 * One step of upkeep if one is due (a seal before a merge); undefined when none is, or when
 * another process's upkeep holds the lock. `signal` cancels a step under way (rolled back).
 */
export async function upkeepMessageVectors(driver: SqlDriver, options: PartOptions, signal?: AbortSignal): Promise<PartStep | undefined> {
  const step = await driver.transaction(async (tx) => {
    const locked = await tx.get<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock(?) AS ok', [UPKEEP_LOCK]);
    if (locked?.ok !== true) return undefined;
    const parts = await messageVectorParts(tx);
    const open = await tx.get<{ n: string }>(`SELECT count(*) AS n FROM (SELECT 1 FROM ${OPEN} LIMIT ?) o`, [options.sealAt]);
    let plan: Plan | undefined;
    if (Number(open?.n) >= options.sealAt) {
      const top = await tx.get<{ hi: string }>(`SELECT max(message_pk) + 1 AS hi FROM ${OPEN}`);
      const last = parts[parts.length - 1];
      plan = { kind: 'sealed', lo: last?.hi, hi: Number(top?.hi), sources: [] };
    } else {
      const newest = parts.slice(-options.mergeWidth);
      if (newest.length === options.mergeWidth && newest.every((part) => part.level === newest[0].level)) {
        plan = { kind: 'merged', lo: newest[0].lo, hi: newest[newest.length - 1].hi, sources: newest };
      }
    }
    if (plan === undefined) return undefined;
    const chosen = plan;
    return withCancel(tx, driver, signal, (checked) => runStep(checked, chosen, options, signal));
  });
  // A seal leaves the open part a seal's worth of dead rows, which every search read until
  // autovacuum came (a minute or more): its scan of the open part visited 2,640 pages for 1,000
  // rows instead of 41, 2.5 against 0.3 ms, half of a workspace search at 66,000 vectors. Not in
  // the step's transaction (VACUUM cannot be); SKIP_LOCKED: never waits for another vacuum.
  if (step?.kind === 'sealed') await driver.run(`VACUUM (SKIP_LOCKED) ${OPEN}`);
  return step;
}

/**
 * Raises maintenance_work_mem for the rest of the step's transaction to what the graph of part
 * `name` (`vectors` copied into it) needs, at most `capMb` MiB, never below the role's setting. Built within it, the graph
 * stays in memory; past it, pgvector goes on building on disk, several times slower (a level-1
 * part of 20,000 vectors of 1,536 dimensions: 88 and 169 s with PostgreSQL's default 64 MB, 34
 * and 42 s with 256, one core each).
 */
async function giveBuildMemory(tx: SqlExecutor, name: string, vectors: number, capMb: number): Promise<void> {
  if (capMb <= 0) return;
  // the size from one vector: each of the part's is the store's size
  const row = await tx.get<{ dimensions: number | null; kb: string }>(
    `SELECT (SELECT vector_dims(embedding) FROM ${name} LIMIT 1) AS dimensions,
       (SELECT setting FROM pg_settings WHERE name = 'maintenance_work_mem') AS kb`,
  );
  if (row === undefined || row.dimensions === null) return;
  const neededKb = Math.ceil(graphBytes(vectors, row.dimensions) / 1024);
  const kb = Math.min(neededKb, capMb * 1024);
  if (kb > Number(row.kb)) await tx.run(`SET LOCAL maintenance_work_mem = '${kb}kB'`);
}

interface Plan {
  kind: 'sealed' | 'merged';
  lo: number | undefined;
  hi: number;
  /** The parts a merge replaces. */
  sources: MessageVectorPart[];
}

async function runStep(tx: SqlExecutor, plan: Plan, options: PartOptions, signal: AbortSignal | undefined): Promise<PartStep> {
  const started = performance.now();
  // ranges are disjoint and a merge spans several: a name never comes back while its part exists
  const name = `message_vectors_${plan.lo ?? 'min'}_${plan.hi}`;
  const range = plan.lo === undefined ? `message_pk < ${plan.hi}` : `message_pk >= ${plan.lo} AND message_pk < ${plan.hi}`;
  // a seal reads the open part; a merge the parts it replaces (the only ones in its range)
  const source = plan.kind === 'sealed' ? OPEN : 'message_vectors';
  // one core for the build: the serving processes keep the others
  await tx.run('SET LOCAL max_parallel_maintenance_workers = 0');
  await tx.run(`CREATE TABLE ${name} (LIKE message_vectors INCLUDING DEFAULTS)`);
  const copied = await tx.run(`INSERT INTO ${name} SELECT * FROM ${source} WHERE ${range}`);
  await tx.run(`ALTER TABLE ${name} ADD PRIMARY KEY (message_pk, chunk)`);
  await tx.run(`CREATE INDEX ${name}_session ON ${name} (workspace_id, session_id)`);
  await tx.run(`CREATE INDEX ${name}_peer ON ${name} (workspace_id, peer_id)`);
  await giveBuildMemory(tx, name, copied, options.buildMemoryMb);
  await tx.run(`CREATE INDEX ${name}_hnsw ON ${name} USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)`);
  // the range as a check, so that the attach need not scan the rows for it
  await tx.run(`ALTER TABLE ${name} ADD CONSTRAINT ${name}_range CHECK (${range})`);
  // the planner's statistics of the part (a search chooses between its HNSW and its B-trees)
  await tx.run(`ANALYZE ${name}`);
  await options.beforeLock?.(tx);

  // Writers are kept out of the range while it is brought up to date: a seal locks the open
  // part, a merge the whole table (its parts' writers hold the parent first, and the detach
  // needs the parent); searches go on until the detach and attach, which wait only for those
  // under way. Taken without queueing: a request never waits behind a step that waits.
  const lockStarted = performance.now();
  const lock = plan.kind === 'sealed' ? `LOCK TABLE ${OPEN} IN EXCLUSIVE MODE NOWAIT` : 'LOCK TABLE message_vectors IN SHARE ROW EXCLUSIVE MODE NOWAIT';
  if (!(await lockSoon(tx, lock, options.lockWaitMs, signal))) {
    await tx.run(`DROP TABLE ${name}`);
    return { kind: 'busy', waitedMs: performance.now() - lockStarted };
  }
  const locked = performance.now();
  // what was written to the range while the part was built: vectors deleted, added or replaced
  // (the part's rows follow from the statements' counts: no count of the part under the lock)
  const deleted = await tx.run(
    `DELETE FROM ${name} p WHERE NOT EXISTS (SELECT 1 FROM ${source} s WHERE s.message_pk = p.message_pk AND s.chunk = p.chunk)`,
  );
  const added = await tx.run(`INSERT INTO ${name} SELECT * FROM ${source} WHERE ${range} ON CONFLICT (message_pk, chunk) DO NOTHING`);
  await tx.run(
    `UPDATE ${name} p SET embedding = s.embedding FROM ${source} s
     WHERE ${range.replaceAll('message_pk', 's.message_pk')} AND s.message_pk = p.message_pk AND s.chunk = p.chunk AND p.embedding IS DISTINCT FROM s.embedding`,
  );
  if (plan.kind === 'sealed') {
    await tx.run(`DELETE FROM ${OPEN} WHERE ${range}`);
  } else {
    for (const part of plan.sources) {
      await tx.run(`ALTER TABLE message_vectors DETACH PARTITION ${part.name}`);
      await tx.run(`DROP TABLE ${part.name}`);
    }
    await tx.run('DELETE FROM message_vector_parts WHERE name = ANY (?::text[])', [plan.sources.map((part) => part.name)]);
  }
  await tx.run(`ALTER TABLE message_vectors ATTACH PARTITION ${name} FOR VALUES FROM (${plan.lo ?? 'MINVALUE'}) TO (${plan.hi})`);
  const rows = copied - deleted + added;
  const level = levelOf(rows, options);
  await tx.run('INSERT INTO message_vector_parts (name, lo, hi, level, row_count, built_at) VALUES (?, ?, ?, ?, ?, now())', [
    name,
    plan.lo ?? null,
    plan.hi,
    level,
    rows,
  ]);
  return {
    kind: plan.kind,
    part: { name, lo: plan.lo, hi: plan.hi, level, rows },
    from: plan.kind === 'sealed' ? 1 : plan.sources.length,
    ms: performance.now() - started,
    lockedMs: performance.now() - locked,
  };
}

/** Tries `lock` (a NOWAIT lock) until it is taken or `waitMs` has passed; false when it was not. */
async function lockSoon(tx: SqlExecutor, lock: string, waitMs: number, signal: AbortSignal | undefined): Promise<boolean> {
  const until = performance.now() + waitMs;
  for (;;) {
    await tx.run('SAVEPOINT engram_part_lock');
    try {
      await tx.run(lock);
      await tx.run('RELEASE SAVEPOINT engram_part_lock');
      return true;
    } catch (error) {
      // 55P03: held by another transaction; anything else ends the step
      if ((error as { code?: unknown }).code !== '55P03') throw error;
      await tx.run('ROLLBACK TO SAVEPOINT engram_part_lock');
    }
    if (performance.now() >= until || signal?.aborted === true) return false;
    await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
  }
}

/**
 * Runs `work` with `tx`, cancelled by `signal`: a statement under way is cancelled from another
 * connection, and no statement starts after the abort. Ends only once the cancel was sent.
 */
async function withCancel<T>(tx: SqlExecutor, driver: SqlDriver, signal: AbortSignal | undefined, work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
  if (signal === undefined) return work(tx);
  signal.throwIfAborted();
  const backend = await tx.get<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  let cancelling: Promise<unknown> | undefined;
  const cancel = () => {
    cancelling = driver.run('SELECT pg_cancel_backend(?)', [backend?.pid]).catch(() => undefined);
  };
  signal.addEventListener('abort', cancel, { once: true });
  const checked: SqlExecutor = {
    dialect: tx.dialect,
    all: (sql, params) => (signal.throwIfAborted(), tx.all(sql, params)),
    get: (sql, params) => (signal.throwIfAborted(), tx.get(sql, params)),
    run: (sql, params) => (signal.throwIfAborted(), tx.run(sql, params)),
  };
  try {
    return await work(checked);
  } finally {
    signal.removeEventListener('abort', cancel);
    // the cancel reaches the backend before its connection goes back to the pool: a late one
    // would cancel whatever statement the pool's next user runs on it
    await cancelling;
  }
}
