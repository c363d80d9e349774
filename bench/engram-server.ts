/**
 * Engram under test, in its own process: opens the database, bulk-loads the dataset, builds
 * the app exactly as `engram serve` does (logger off) and listens on an ephemeral port.
 * It also answers
 * - `breakdown`: timings of each layer of a list route (store, SQL, mapping, presentation,
 *   serialisation), one call at a time in-process with no HTTP load running, to show where a
 *   request's time goes;
 * - `loadMessages`: the message dataset for the message and search cases (corpus.ts), and
 *   the search queries picked from it by how many messages each word occurs in;
 * - `searchAnalysis`: where a search's time goes (candidates, ranking, read);
 * - `startWorker` / `stopWorker`: the background worker `engram serve` runs (`createWorker`),
 *   started only for the webhook cases so it does not poll during the others.
 */
import { readFileSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { FastifyInstance } from 'fastify';
import { nanoid } from 'nanoid';
import { buildApp } from '../src/http/app.js';
import { databaseOptions, openDatabase, type Database } from '../src/runtime/database.js';
import { loadConfig, type Config } from '../src/config/config.js';
import { createDomainContext } from '../src/domain/context.js';
import { rankCandidates } from '../src/domain/search/rank.js';
import { SEARCH_CANDIDATES } from '../src/domain/search/scoring.js';
import { searchMessages, searchTerms } from '../src/domain/messages/search.js';
import { tokenCount } from '../src/domain/text/token-count.js';
import { isoTime, presentMessage, presentPage, presentPeer, presentSession } from '../src/http/shared/present.js';
import type { Worker } from '../src/jobs/worker.js';
import { createWorker } from '../src/runtime/runtime.js';
import type { SqlExecutor } from '../src/storage/sql/driver.js';
import { SqlStore } from '../src/storage/sql/sql-store.js';
import type { SessionListQuery, MessageRecord, Page, PeerRecord, SessionRecord } from '../src/storage/store.js';
import { checkTokenCounts, Corpus, seededRandom } from './corpus.js';
import { BENCH_PEER, SAME_MATCHES, chatSenders, chatSessionId, LIST_SESSION, loadDataset, loadMessages, type DatasetShape, type MessageShape } from './dataset.js';
import { answerCalls } from './ipc.js';
import { CURRENT_RULES } from '../src/domain/filters/filters.js';
import { median } from './stats.js';

export interface StartRequest {
  databaseUrl: string;
  shape: DatasetShape;
  /** PostgreSQL: delete the benchmark workspaces on close (SQLite files are simply removed). */
  dropWorkspaceOnClose: boolean;
  /** Settings for the webhook cases' worker (only started by `startWorker`). */
  webhookSecret: string;
  workerPollMs: number;
  /** Other workspaces the cases create (PostgreSQL: deleted on close too). */
  extraWorkspaces?: string[];
}

/** Query classes, by the share of messages the word occurs in (see `pickQueries`). */
export type QueryClass = 'rare' | 'medium' | 'common' | 'two words' | 'very common';

export interface SearchQuery {
  queryClass: QueryClass;
  query: string;
  /** Messages containing the word (one-word queries; -1 for two words: not counted at load). */
  matches: number;
}

export interface MessagesLoaded {
  messages: number;
  sessions: number;
  listSessionMessages: number;
  vocabulary: number;
  zipf: number;
  totalMs: number;
  generateMs: number;
  meanChars: number;
  meanTokens: number;
  /** Sampled messages whose memoised token count equals tokenCount()'s, of `tokenSample`. */
  tokenExact: number;
  tokenSample: number;
  /** SQLite: database and WAL file sizes after a checkpoint (bytes); undefined on PostgreSQL. */
  databaseBytes?: number;
  walBytes?: number;
  /** Words per document-frequency band (how selective the vocabulary is). */
  bands: { label: string; words: number }[];
  /** Search queries for the HTTP cases (every class but 'very common'), interleaved by class. */
  queries: SearchQuery[];
  /** One or two words matching the most messages, for the analysis only. */
  veryCommon: SearchQuery[];
  /**
   * One-word queries matched in SAME_MATCHES messages whatever the store's size (the common band
   * of 1,000 messages, the rare band of 1,000,000): the same work in a small store and a large one.
   */
  sameMatches: SearchQuery[];
}

export interface SearchClassTiming {
  queryClass: QueryClass;
  queries: number;
  /** Median over the class's queries. */
  matches: number;
  /** ms; each query's median of a few runs, then median (and max) over the class. */
  searchP50: number;
  searchMax: number;
  sessionP50: number;
  peerP50: number;
  /** The three steps of a workspace search. */
  candidates: number;
  rank: number;
  read: number;
  /** Matches that were ranked (at most SEARCH_CANDIDATES). */
  ranked: number;
  examples: string[];
}

export interface SearchAnalysis {
  candidateSql: string;
  workspacePlan: string[];
  sessionPlan: string[];
  candidateLimit: number;
  classes: SearchClassTiming[];
}

/** Resident memory of the Engram process, bytes (`memory` call; the /proc fields are Linux only, NaN elsewhere). */
export interface ServerMemory {
  rss: number;
  rssAnon: number;
  rssFile: number;
  /** Peak RSS of the process's life. */
  maxRss: number;
  /** The V8 heap: reserved, and in use by live and not yet collected objects. */
  heapTotal: number;
  heapUsed: number;
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
let config: Config | undefined;
let loaded: { shape: MessageShape; result: MessagesLoaded; documentFrequency: Int32Array } | undefined;
let worker: Worker | undefined;
/** The apps of startLogged. */
const logged: { app: FastifyInstance; flushLog: () => void }[] = [];
const workerEvents = { retried: 0, deadLettered: 0, skipped: 0, errors: 0, lastProblem: '' };

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
  list: (store: SqlStore, query: SessionListQuery) => Promise<Page<any>>,
  present: (item: any) => unknown,
  createdAt: (item: any) => Date,
): Promise<Breakdown> {
  const db = database!;
  const query: SessionListQuery = { filter: null, page: 1, size: 50, reverse: false, order: url.startsWith('/v2/') ? 'created' : 'created-then-insertion' };
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


// ------------------------------------------------------------------ messages and search

const int = (n: number) => Math.round(n).toLocaleString('en-US');

/**
 * Search queries picked by how many messages a search for the word matches (those holding a
 * word of its stem, as the full-text index finds them; `matchFrequency`),
 * with bands scaled to the number of messages (at 1,000,000: rare 10-100 messages, medium
 * 1,000-10,000, common 10,000-100,000; two words: a common word and a medium or common one).
 * Interleaved, so consecutive requests differ in class.
 */
function pickQueries(words: string[], df: Int32Array, messages: number, perClass: number): Pick<MessagesLoaded, 'queries' | 'veryCommon' | 'bands' | 'sameMatches'> {
  const scale = messages / 1_000_000;
  const random = seededRandom(7);
  const band = (low: number, high: number) => {
    const ranks: number[] = [];
    for (let rank = 0; rank < words.length; rank++) if (df[rank] >= low && df[rank] < high) ranks.push(rank);
    // a seeded shuffle, so the picks spread over the band
    for (let i = ranks.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [ranks[i], ranks[j]] = [ranks[j], ranks[i]];
    }
    return ranks;
  };
  const limits = {
    rare: [Math.max(1, 10 * scale), Math.max(2, 100 * scale)],
    medium: [1_000 * scale, 10_000 * scale],
    common: [10_000 * scale, 100_000 * scale],
  } as const;
  const rare = band(limits.rare[0], limits.rare[1]);
  const medium = band(limits.medium[0], limits.medium[1]);
  const common = band(limits.common[0], limits.common[1]);
  const one = (queryClass: QueryClass, ranks: number[]): SearchQuery[] =>
    ranks.slice(0, perClass).map((rank) => ({ queryClass, query: words[rank], matches: df[rank] }));
  const two: SearchQuery[] = [];
  for (let i = 0; i < perClass && common.length > 0 && medium.length > 0; i++) {
    const first = common[i % common.length];
    const second = i % 2 === 0 ? medium[(i * 7) % medium.length] : common[(i * 7 + 1) % common.length];
    if (first !== second) two.push({ queryClass: 'two words', query: `${words[first]} ${words[second]}`, matches: -1 });
  }
  const lists = [one('rare', rare), one('medium', medium), one('common', common), two].filter((list) => list.length > 0);
  const queries: SearchQuery[] = [];
  for (let i = 0; i < perClass; i++) for (const list of lists) if (i < list.length) queries.push(list[i]);
  const top = [...df.keys()].sort((a, b) => df[b] - df[a]).slice(0, 1);
  const count = (low: number, high: number) => df.filter((n) => n >= low && n < high).length;
  return {
    queries,
    sameMatches: one('rare', band(SAME_MATCHES.low, SAME_MATCHES.high)),
    veryCommon: top.map((rank) => ({ queryClass: 'very common', query: words[rank], matches: df[rank] })),
    bands: [
      { label: `rare (${int(limits.rare[0])}-${int(limits.rare[1])} messages)`, words: rare.length },
      { label: `medium (${int(limits.medium[0])}-${int(limits.medium[1])})`, words: medium.length },
      { label: `common (${int(limits.common[0])}-${int(limits.common[1])})`, words: common.length },
      { label: `more than ${int(limits.common[1])}`, words: count(limits.common[1], Infinity) },
      { label: `fewer than ${int(limits.rare[0])}`, words: count(0, limits.rare[0]) },
    ],
  };
}


async function loadMessageDataset(shape: MessageShape): Promise<MessagesLoaded> {
  const db = database!;
  const corpus = new Corpus(shape.vocabulary, shape.seed, shape.zipf);
  const stats = await loadMessages(db.store, shape, corpus, () => nanoid(21));
  // the memoised token counts against the real tokenizer, on fresh text from the same corpus
  const sample = Array.from({ length: 2_000 }, () => corpus.message());
  const tokenExact = checkTokenCounts(corpus, sample, tokenCount);
  let databaseBytes: number | undefined;
  let walBytes: number | undefined;
  if (db.driver.dialect === 'sqlite') {
    await db.driver.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    const size = (path: string) => {
      try {
        return statSync(path).size;
      } catch {
        return 0;
      }
    };
    databaseBytes = size(start!.databaseUrl);
    walBytes = size(`${start!.databaseUrl}-wal`);
  } else {
    // what autovacuum does soon after a bulk load; before it, the planner estimates the
    // workspace filter as selective and recomputes to_tsvector for every message instead of
    // using the GIN index (about 120 ms for a rare word at only 20,000 messages)
    await db.driver.run('ANALYZE messages');
  }
  const result: MessagesLoaded = {
    messages: stats.messages,
    sessions: stats.sessions,
    listSessionMessages: stats.listSessionMessages,
    vocabulary: corpus.words.length,
    zipf: shape.zipf,
    totalMs: stats.totalMs,
    generateMs: stats.generateMs,
    meanChars: stats.meanChars,
    meanTokens: stats.meanTokens,
    tokenExact,
    tokenSample: sample.length,
    databaseBytes,
    walBytes,
    ...pickQueries(corpus.words, stats.matchFrequency, stats.messages, 50),
  };
  loaded = { shape, result, documentFrequency: stats.documentFrequency };
  return result;
}

/** Median of a few runs of `fn` (ms): up to `runs`, fewer once `budgetMs` is spent. */
async function medianMs(fn: () => unknown, runs = 3, budgetMs = 400): Promise<number> {
  const times: number[] = [];
  const begin = performance.now();
  while (times.length < runs && (times.length === 0 || performance.now() - begin < budgetMs)) {
    const mark = performance.now();
    await fn();
    times.push(performance.now() - mark);
  }
  return median(times);
}

/**
 * For a few queries of each class: the search as the route runs it (searchMessages, workspace,
 * session and peer scope), and the workspace search's three steps apart: the newest matching
 * candidates (SQL), their ranking (JS) and the read of the best 10. One call at a time, no
 * HTTP load.
 */
async function searchAnalysis({ perClass }: { perClass: number }): Promise<SearchAnalysis | { skipped: string }> {
  const db = database!;
  if (loaded === undefined) return { skipped: 'the message dataset was not loaded' };
  const ws = loaded.shape.workspaceId;
  const session = chatSessionId(1);
  const peer = chatSenders(1, loaded.shape.sessions)[0];
  const ctx = createDomainContext(db.store, { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 1 });
  const search = (query: string, scope: { sessionId?: string; peerId?: string } = {}) =>
    searchMessages(ctx, { workspaceId: ws, ...scope }, { query, filters: null, limit: 10, rules: CURRENT_RULES });
  const request = (query: string, sessionId?: string) => ({
    workspaceId: ws,
    sessionId,
    terms: searchTerms(query),
    filter: null,
    candidates: SEARCH_CANDIDATES,
  });

  // the candidate statement as the store issues it
  const timing = timingExecutor(db.driver);
  const timedStore = new SqlStore(timing.executor);
  const issued = async (sessionId?: string) => {
    timing.perSql.clear();
    await timedStore.messages.searchCandidates(request('plan', sessionId));
    const found = [...timing.perSql.entries()].find(([sql]) => sql.includes('ORDER BY'));
    if (found === undefined) throw new Error('searchCandidates issued no statement');
    return found;
  };
  const [candidateSql, workspaceEntry] = await issued();
  const [sessionSql, sessionEntry] = await issued(session);
  const plan = async (sql: string, params: readonly unknown[]) => {
    const explain = db.driver.dialect === 'sqlite' ? 'EXPLAIN QUERY PLAN ' : 'EXPLAIN ';
    const rows = await db.driver.all<Record<string, string>>(explain + sql, params);
    return rows.map((row) => row.detail ?? row['QUERY PLAN']);
  };

  const classes: SearchClassTiming[] = [];
  const byClass = new Map<QueryClass, SearchQuery[]>();
  for (const query of [...loaded.result.queries, ...loaded.result.veryCommon]) {
    const list = byClass.get(query.queryClass) ?? [];
    if (list.length < (query.queryClass === 'very common' ? 1 : perClass)) list.push(query);
    byClass.set(query.queryClass, list);
  }
  for (const [queryClass, queries] of byClass) {
    const rows: Record<Exclude<keyof SearchClassTiming, 'queryClass' | 'queries' | 'examples' | 'searchMax'>, number>[] = [];
    for (const { query, matches } of queries) {
      await search(query); // warm the pages this query reads
      const candidates = await db.store.messages.searchCandidates(request(query));
      const best = rankCandidates(searchTerms(query), candidates, 10);
      rows.push({
        matches,
        searchP50: await medianMs(() => search(query)),
        sessionP50: await medianMs(() => search(query, { sessionId: session })),
        peerP50: await medianMs(() => search(query, { peerId: peer })),
        candidates: await medianMs(() => db.store.messages.searchCandidates(request(query))),
        rank: await medianMs(() => rankCandidates(searchTerms(query), candidates, 10)),
        read: await medianMs(() => db.store.messages.byIds(ws, best.map((c) => c.id))),
        ranked: candidates.length,
      });
    }
    const pick = (key: keyof (typeof rows)[number]) => median(rows.map((row) => row[key]));
    classes.push({
      queryClass,
      queries: queries.length,
      matches: pick('matches'),
      searchP50: pick('searchP50'),
      searchMax: Math.max(...rows.map((row) => row.searchP50)),
      sessionP50: pick('sessionP50'),
      peerP50: pick('peerP50'),
      candidates: pick('candidates'),
      rank: pick('rank'),
      read: pick('read'),
      ranked: pick('ranked'),
      examples: queries.slice(0, 3).map((q) => q.query),
    });
  }
  return {
    candidateSql: candidateSql.replace(/\s+/g, ' ').trim(),
    workspacePlan: await plan(candidateSql, workspaceEntry.params),
    sessionPlan: await plan(sessionSql, sessionEntry.params),
    candidateLimit: SEARCH_CANDIDATES,
    classes,
  };
}

answerCalls({
  async start(request: StartRequest) {
    start = request;
    config = loadConfig(
      {
        DATABASE_URL: request.databaseUrl,
        LOG_LEVEL: 'silent',
        // used by the worker only, which runs during the webhook cases (startWorker)
        WEBHOOK_SECRET: request.webhookSecret,
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        WORKER_POLL_MS: String(request.workerPollMs),
        // `WEBHOOK_ORDERED=false npm run bench`: the webhook cases with deliveries side by side
        ...(process.env.WEBHOOK_ORDERED === undefined ? {} : { WEBHOOK_ORDERED: process.env.WEBHOOK_ORDERED }),
      },
      '/nonexistent/.env',
    );
    database = await openDatabase(config.databaseUrl, databaseOptions(config));
    const load = await loadDataset(database.store, request.shape);
    ({ app } = await buildApp({ config, database, logger: false }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    return { port: (app.server.address() as AddressInfo).port, load, dialect: database.driver.dialect };
  },
  memory(): ServerMemory {
    // RssFile counts pages of the memory-mapped database file (SQLite mmap_size) that were read:
    // shared page cache the kernel can drop, unlike RssAnon (the heap, SQLite's own page cache)
    const status = readFileSync('/proc/self/status', 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    const usage = process.memoryUsage();
    return {
      rss: usage.rss,
      rssAnon: kb('RssAnon') * 1024,
      rssFile: kb('RssFile') * 1024,
      maxRss: process.resourceUsage().maxRSS * 1024,
      heapTotal: usage.heapTotal,
      heapUsed: usage.heapUsed,
    };
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
        (store, query) => store.peers.list(ws, query),
        presentPeer,
        (peer: PeerRecord) => peer.createdAt,
      ),
      await breakdownOf(
        'sessions of peer v3',
        `/v3/workspaces/${ws}/peers/${BENCH_PEER}/sessions?size=50`,
        iterations,
        (store, query) => store.sessions.ofPeer(ws, BENCH_PEER, query),
        presentSession,
        (session: SessionRecord) => session.createdAt,
      ),
      // once the message dataset is loaded: the message list case's session
      ...(loaded === undefined
        ? []
        : [
            await breakdownOf(
              'message list v3',
              `/v3/workspaces/${ws}/sessions/${LIST_SESSION}/messages/list?size=50`,
              iterations,
              (store, query) => store.messages.list(ws, LIST_SESSION, query),
              presentMessage,
              (message: MessageRecord) => message.createdAt,
            ),
          ]),
    ] satisfies Breakdown[];
  },
  loadMessages(shape: MessageShape) {
    return loadMessageDataset(shape);
  },
  searchAnalysis(request: { perClass: number }) {
    return searchAnalysis(request);
  },
  startWorker() {
    const log = (kind: 'info' | 'warn' | 'error') => (obj: object, msg: string) => {
      if (msg === 'job will be retried') workerEvents.retried++;
      else if (msg === 'job dead-lettered') workerEvents.deadLettered++;
      else if (msg === 'job skipped') workerEvents.skipped++;
      else if (kind === 'error') workerEvents.errors++;
      if (kind !== 'info' || msg !== 'job skipped') workerEvents.lastProblem = `${msg} ${JSON.stringify(obj)}`.slice(0, 300);
    };
    worker ??= createWorker(config!, database!, { info: log('info'), warn: log('warn'), error: log('error') });
    worker.start();
    return { concurrency: config!.workerConcurrency, pollMs: config!.workerPollMs };
  },
  /** Worker outcomes so far, and the queue's jobs by status. */
  async workerStats() {
    return { ...workerEvents, jobs: await database!.store.jobs.countByStatus() };
  },
  async stopWorker() {
    await worker?.stop(5_000);
    worker = undefined;
    return null;
  },
  /**
   * The request log's cost: two more apps on the same database in this process, built as `engram
   * serve` builds its own (the process log at LOG_LEVEL, here written to files in `dir` as a
   * server's standard output redirected to a file would be), one at the default level (info, a
   * line per request) and one at warn (none for a request that succeeds).
   */
  async startLogged({ dir }: { dir: string }) {
    const ports: Record<string, number> = {};
    for (const level of ['info', 'warn'] as const) {
      const built = await buildApp({ config: { ...config!, logLevel: level }, database: database!, logDestination: join(dir, `engram-${level}.log`) });
      await built.app.listen({ host: '127.0.0.1', port: 0 });
      logged.push(built);
      ports[level] = (built.app.server.address() as AddressInfo).port;
    }
    return ports;
  },
  async close() {
    for (const built of logged.splice(0)) {
      await built.app.close();
      built.flushLog();
    }
    await worker?.stop(2_000);
    if (app !== undefined) await app.close();
    if (database !== undefined) {
      if (start?.dropWorkspaceOnClose) {
        for (const id of [start.shape.workspaceId, ...(start.extraWorkspaces ?? [])]) await database.store.workspaces.delete(id);
      }
      await database.driver.close();
    }
    return null;
  },
});
