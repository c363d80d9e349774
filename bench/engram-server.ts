/**
 * Engram under test, in its own process: opens the database, bulk-loads the dataset, builds
 * the app exactly as `engram serve` does (logger off) and listens on an ephemeral port.
 * It also answers `breakdown`: timings of each layer of a list route (store, SQL, mapping,
 * presentation, serialisation), one call at a time in-process with no HTTP load running,
 * to show where a request's time goes.
 */
import type { AddressInfo } from 'node:net';
import BetterSqlite3 from 'better-sqlite3';
import type { FastifyInstance } from 'fastify';
import { buildApp, openDatabase, type Database } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { isoTime, presentPage, presentPeer, presentSession } from '../src/http/shared/present.js';
import type { SqlExecutor } from '../src/storage/sql/driver.js';
import { SqlStore } from '../src/storage/sql/sql-store.js';
import type { ListQuery, Page, PeerRecord, SessionRecord } from '../src/storage/store.js';
import { BENCH_PEER, loadDataset, type DatasetShape } from './dataset.js';
import { answerCalls } from './ipc.js';

export interface StartRequest {
  databaseUrl: string;
  shape: DatasetShape;
  /** PostgreSQL: delete the benchmark workspace on close (SQLite files are simply removed). */
  dropWorkspaceOnClose: boolean;
}

export interface LayerTiming {
  label: string;
  /** mean microseconds per operation */
  us: number;
  note?: string;
}

export interface Breakdown {
  name: string;
  url: string;
  layers: LayerTiming[];
}

let database: Database | undefined;
let app: FastifyInstance | undefined;
let start: StartRequest | undefined;

const WARMUP_RUNS = 500;
/** Each timing stops early after this long, so slow queries do not stretch the run. */
const BUDGET_NS = 1_500_000_000n;

/**
 * Mean µs of `fn` over up to `iterations` runs (fewer if the time budget runs out), after a
 * warm-up so the JIT has settled. `runs` counts the warm-up too.
 */
async function timeRuns(iterations: number, fn: () => unknown): Promise<{ us: number; runs: number }> {
  const warmupUntil = process.hrtime.bigint() + BUDGET_NS / 3n;
  let warm = 0;
  while (warm < Math.min(WARMUP_RUNS, iterations) && process.hrtime.bigint() < warmupUntil) {
    await fn();
    warm++;
  }
  const begin = process.hrtime.bigint();
  let done = 0;
  while (done < iterations && (done < 10 || process.hrtime.bigint() - begin < BUDGET_NS)) {
    await fn();
    done++;
  }
  return { us: Number(process.hrtime.bigint() - begin) / 1000 / done, runs: warm + done };
}

async function timeIt(iterations: number, fn: () => unknown): Promise<number> {
  return (await timeRuns(iterations, fn)).us;
}

/** An executor that forwards to the real driver and adds up the time spent per SQL text. */
function timingExecutor(inner: SqlExecutor) {
  const perSql = new Map<string, { ns: bigint; calls: number; params: readonly unknown[] }>();
  const timed = async <T>(sql: string, params: readonly unknown[] | undefined, run: () => Promise<T>): Promise<T> => {
    const begin = process.hrtime.bigint();
    try {
      return await run();
    } finally {
      const entry = perSql.get(sql) ?? { ns: 0n, calls: 0, params: [] };
      entry.ns += process.hrtime.bigint() - begin;
      entry.calls++;
      entry.params = params ?? [];
      perSql.set(sql, entry);
    }
  };
  const executor: SqlExecutor = {
    dialect: inner.dialect,
    all: (sql, params) => timed(sql, params, () => inner.all(sql, params)),
    get: (sql, params) => timed(sql, params, () => inner.get(sql, params)),
    run: (sql, params) => timed(sql, params, () => inner.run(sql, params)),
  };
  return { executor, perSql };
}

const shortSql = (sql: string) => {
  const flat = sql.replace(/\s+/g, ' ').trim();
  return flat.length > 64 ? `${flat.slice(0, 61)}...` : flat;
};

/**
 * SQLite only: the same statement on a second, read-only connection, with better-sqlite3
 * building row objects (what the driver does) and returning plain arrays (`raw`), to show
 * what row materialisation costs.
 */
async function rowModes(sql: string, params: readonly unknown[], iterations: number): Promise<string | undefined> {
  if (database?.driver.dialect !== 'sqlite' || !sql.trimStart().toUpperCase().startsWith('SELECT')) return undefined;
  const side = new BetterSqlite3(start!.databaseUrl, { readonly: true });
  try {
    const objects = side.prepare(sql);
    const raw = side.prepare(sql).raw(true);
    const objectUs = await timeIt(iterations, () => objects.all(...params));
    const rawUs = await timeIt(iterations, () => raw.all(...params));
    return `row objects ${objectUs.toFixed(1)} µs vs raw arrays ${rawUs.toFixed(1)} µs on a side connection`;
  } finally {
    side.close();
  }
}

async function breakdownOf(
  name: string,
  url: string,
  iterations: number,
  list: (store: SqlStore, query: ListQuery) => Promise<Page<any>>,
  present: (item: any) => unknown,
  createdAt: (item: any) => Date,
): Promise<Breakdown> {
  const db = database!;
  const query: ListQuery = { filters: null, page: 1, size: 50, reverse: false, generation: url.startsWith('/v2/') ? 'v2' : 'v3' };
  const layers: LayerTiming[] = [];

  const storeUs = await timeIt(iterations, () => list(db.store, query));
  layers.push({ label: 'store call (SQL + row mapping)', us: storeUs });

  const timing = timingExecutor(db.driver);
  const timedStore = new SqlStore(timing.executor);
  const { runs } = await timeRuns(iterations, () => list(timedStore, query));
  let sqlUs = 0;
  for (const [sql, entry] of timing.perSql) {
    const us = Number(entry.ns) / 1000 / runs;
    sqlUs += us;
    layers.push({ label: `  SQL ${shortSql(sql)}`, us, note: `${(entry.calls / runs).toFixed(0)} call(s)/request` });
    const modes = await rowModes(sql, entry.params, iterations);
    if (modes !== undefined) layers.push({ label: `      ${modes}`, us: NaN });
  }
  layers.push({ label: '  row mapping (store call - SQL)', us: Math.max(0, storeUs - sqlUs) });

  const page = await list(db.store, query);
  const presentUs = await timeIt(iterations, () => presentPage(page, 1, 50, present));
  layers.push({ label: 'presentPage (records -> wire objects)', us: presentUs });
  const isoUs = await timeIt(iterations, () => page.items.map((item) => isoTime(createdAt(item))));
  layers.push({ label: `  of which isoTime x ${page.items.length}`, us: isoUs });
  const wire = presentPage(page, 1, 50, present);
  const stringifyUs = await timeIt(iterations, () => JSON.stringify(wire));
  layers.push({ label: 'JSON.stringify of the page', us: stringifyUs, note: `${JSON.stringify(wire).length} bytes` });
  layers.push({ label: 'sum: store + present + stringify', us: storeUs + presentUs + stringifyUs });
  return { name, url, layers };
}

answerCalls({
  async start(request: StartRequest) {
    start = request;
    const config = loadConfig({ DATABASE_URL: request.databaseUrl, LOG_LEVEL: 'silent' }, '/nonexistent/.env');
    database = await openDatabase(config.databaseUrl);
    const load = await loadDataset(database.store, request.shape);
    ({ app } = await buildApp({ config, database, logger: false }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    return { port: (app.server.address() as AddressInfo).port, load, dialect: database.driver.dialect };
  },
  cpu() {
    return process.cpuUsage();
  },
  async breakdown({ iterations }: { iterations: number }) {
    const ws = start!.shape.workspaceId;
    return [
      await breakdownOf(
        'peers/list v3',
        `/v3/workspaces/${ws}/peers/list?page=1&size=50`,
        iterations,
        (store, query) => store.listPeers(ws, query),
        presentPeer,
        (peer: PeerRecord) => peer.createdAt,
      ),
      await breakdownOf(
        'sessions of peer v3',
        `/v3/workspaces/${ws}/peers/${BENCH_PEER}/sessions?size=50`,
        iterations,
        (store, query) => store.listSessionsOfPeer(ws, BENCH_PEER, query),
        presentSession,
        (session: SessionRecord) => session.createdAt,
      ),
    ] satisfies Breakdown[];
  },
  async close() {
    if (app !== undefined) await app.close();
    if (database !== undefined) {
      if (start?.dropWorkspaceOnClose) await database.store.deleteWorkspace(start.shape.workspaceId);
      await database.driver.close();
    }
    return null;
  },
});
