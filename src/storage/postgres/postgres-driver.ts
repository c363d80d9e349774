import { availableParallelism } from 'node:os';
import pg from 'pg';
import { DEFAULT_FILTER_TIME_LIMIT_MS, FilterTimeLimitError, TIME_LIMITED } from '../filter-time-limit.js';
import { RowVanishedError, type ConflictCounts, type SqlDriver, type SqlExecutor } from '../sql/driver.js';
import { PreciseDate } from '../precise-date.js';
import { statementCache } from '../sql/statement-cache.js';
import { ConflictsPersistedError, StoreUnavailableError } from '../unavailable.js';

// timestamptz and jsonb come back parsed by pg (Date and objects); int8 (counts) as numbers,
// which is safe for row counts far beyond what one server stores.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
// pg's own parser keeps a timestamptz to the millisecond; a finer one (a time a client gave) keeps
// its microseconds (storage/precise-date.ts). The text is `YYYY-MM-DD HH:MM:SS[.ffffff]+TZ`.
const parseTimestamptz = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text') as (text: string) => Date;
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, (text: string) => {
  const date = parseTimestamptz(text);
  // the digits after the milliseconds, when the fraction has them (a four-digit year's `.` is at 19)
  const extra = text.charCodeAt(19) === 46 ? /^\d{1,3}/.exec(text.slice(23, 26)) : null;
  if (extra === null) return date;
  const micros = Number(extra[0].padEnd(3, '0'));
  return micros === 0 || Number.isNaN(date.getTime()) ? date : new PreciseDate(date.getTime(), micros);
});

/** Rewrites `?` placeholders to `$1..$n`, leaving quoted text alone. */
function numberPlaceholders(sql: string): string {
  let n = 0;
  let quote: string | undefined;
  let out = '';
  for (const ch of sql) {
    if (quote !== undefined) {
      if (ch === quote) quote = undefined;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else if (ch === '?') {
      out += `$${++n}`;
    } else {
      out += ch;
    }
  }
  return out;
}

/**
 * A statement as sent: its text with numbered placeholders, whether it tests a filter
 * (TIME_LIMITED), and what decides whether it is run by name (StatementNames).
 */
interface Statement {
  text: string;
  limited: boolean;
  /** Runs counted towards its name (StatementNames). */
  runs: number;
  /** Never named: planned for its values at every run (PLANNED_FOR_VALUES), or its prepared statement failed (namedStatementFailed). */
  unnamed: boolean;
}

/**
 * Statements whose best plan depends on their values, so they stay unnamed and are planned for
 * them at every run. After five runs PostgreSQL may run a named statement by a generic plan,
 * made without the values, when it does not look dearer than the plans made with them; that
 * suits a look-up by key or a page walked along its index, not a full-text match (how many
 * messages hold the word decides between the words' index and a walk newest first) nor a
 * vector distance (the HNSW index or a scan of the collection). Filters (TIME_LIMITED) stay
 * unnamed too: their texts are as many as the shapes of the filters clients send.
 */
const PLANNED_FOR_VALUES = /@@|<=>|<->|<#>/;

const statements = statementCache<Statement>();

function statement(sql: string): Statement {
  let found = statements.get(sql);
  if (found === undefined) {
    const limited = sql.includes(TIME_LIMITED);
    found = { text: numberPlaceholders(sql), limited, runs: 0, unnamed: limited || PLANNED_FOR_VALUES.test(sql) };
    statements.set(sql, found);
  }
  return found;
}

/** How long a pooled connection stays open unused. */
export const IDLE_CONNECTION_MS = 300_000;

/**
 * Most statement texts a driver names. A named statement is parsed once on each connection that
 * runs it, then only bound and run, and after five runs PostgreSQL may keep a generic plan of it
 * (bench/README.md, "Prepared statements on PostgreSQL": a look-up by key 219 -> 75 µs of the
 * server's CPU); each takes some server memory on each such connection, hence the bound. Texts
 * are named as they become frequent; past the bound the rest stay unnamed.
 */
export const MAX_NAMED_STATEMENTS = 256;
/** Runs of a text before it is named: a statement run once or twice stays unnamed. */
const RUNS_BEFORE_NAMED = 3;

/**
 * The names a driver's statements run under (each driver's connections are its own). Names are
 * never reused: a text evicted from the statement cache and seen again gets a new one, so no
 * connection can hold a name for another text.
 */
class StatementNames {
  private readonly names = new Map<Statement, string>();
  /** Names made, and statements dropped (engram_postgres_prepared_statements_total). */
  readonly counts = { named: 0, dropped: 0 };

  nameOf(found: Statement): string | undefined {
    const name = this.names.get(found);
    if (name !== undefined) return name;
    if (found.unnamed || ++found.runs < RUNS_BEFORE_NAMED || this.names.size >= MAX_NAMED_STATEMENTS) return undefined;
    const made = `engram_${++this.counts.named}`;
    this.names.set(found, made);
    return made;
  }

  /** `found`'s prepared statement failed (namedStatementFailed): it runs unnamed from now on. */
  drop(found: Statement): void {
    if (this.names.delete(found)) this.counts.dropped++;
    found.unnamed = true;
  }
}

/** SQLSTATEs of a named statement gone stale: its result type changed with the schema (0A000), or it was deallocated (26000). */
function namedStatementFailed(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === '26000' || (code === '0A000' && typeof message === 'string' && message.includes('cached plan must not change result type'));
}

const UNREACHABLE = 'The database is unreachable; try again shortly';

/** Socket errors: the server is down, refusing, restarting or cut off. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Errors pg raises without a code when the connection is lost or cannot be made in time
 * (pg and pg-pool message texts).
 */
const LOST_CONNECTION = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Connection closed',
];

/**
 * The error to throw for `error`: StoreUnavailableError when the server cannot serve now (socket
 * errors, a lost connection, the pool's connect timeout, SQLSTATE class 08 connection exception,
 * 53 insufficient resources, 57P01-57P03 shutdown or not yet accepting connections), else itself.
 */
export function classifyPostgresError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || !(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code)) return new StoreUnavailableError(UNREACHABLE, code, { cause: error });
    if (/^(08|53)[0-9A-Z]{3}$/.test(code) || code === '57P01' || code === '57P02' || code === '57P03') {
      return new StoreUnavailableError(code.startsWith('53') ? 'The database is out of resources; try again shortly' : UNREACHABLE, code, { cause: error });
    }
    return error;
  }
  if (LOST_CONNECTION.some((text) => error.message.startsWith(text))) {
    return new StoreUnavailableError(UNREACHABLE, error.message.startsWith('timeout') ? 'connect timeout' : 'connection lost', { cause: error });
  }
  return error;
}

async function guarded<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw classifyPostgresError(error);
  }
}

/**
 * SQLSTATEs after which the same work, run again, may succeed: 40P01 deadlock detected (the
 * server chose this transaction to end a cycle of lock waits), 40001 serialization failure,
 * and 55P03 lock not available (a transaction that yields its lock waits, Dialect.yieldLocksAfter).
 * PostgreSQL rolled the transaction back; its documentation asks the client to retry it.
 */
const CONFLICT_CODES = new Set(['40P01', '40001', '55P03']);

/** How many times work ended by a conflict is run in all before the request fails with 503. */
export const CONFLICT_ATTEMPTS = 5;

/**
 * A parent deleted meanwhile: 23503 foreign key violation, or a RowVanishedError. A write checks
 * the rows it refers to first, in its transaction, so a missing one was deleted by a commit in
 * between (a workspace or session deleted while the write went on). Run again, the work sees the
 * deletion: a 404, or the workspace created anew where the route creates missing ones, as if it
 * had come after. Within the same budget as other conflicts (a workspace deleted and created
 * again by other clients can be gone again when the work runs again); work that meets it every
 * time does not check the row first, which no further run mends, so its error is thrown as it is
 * (a failed job, a 500 with the cause in the log), not as a 503.
 */
function isParentGone(error: unknown): boolean {
  return error instanceof RowVanishedError || (error as { code?: unknown } | null)?.code === '23503';
}

/** The attempts of one piece of work a conflict ended so far. */
interface ConflictRuns {
  attempt: number;
}

function isConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return isParentGone(error) || (typeof code === 'string' && CONFLICT_CODES.has(code));
}

/** The error for work still ended by conflicts after CONFLICT_ATTEMPTS attempts: a 503, try again. */
function conflictsPersisted(error: unknown): StoreUnavailableError {
  const code = String((error as { code?: unknown }).code);
  return new ConflictsPersistedError('The database kept ending this write to resolve conflicting writes; try again shortly', `conflict ${code}`, {
    cause: error,
  });
}

/**
 * PostgreSQL text cannot hold NUL (it refuses the whole statement), while SQLite stores and
 * compares it. Values meant to be stored have their NULs removed at the wire layer, and ids
 * cannot contain one; what still carries a NUL here is mostly a lookup key (a path id, a query
 * parameter), which names nothing on either dialect. With U+FFFD in its place the answer stays
 * the same (not found, an empty page) instead of an error.
 */
function withoutNul(params: readonly unknown[]): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < params.length; i++) {
    const value = params[i];
    if (typeof value === 'string' && value.includes('\u0000')) {
      out ??= params.slice();
      out[i] = value.replace(/\u0000/g, '\ufffd');
    }
  }
  return out ?? (params as unknown[]);
}

/** SQLSTATE query_canceled, which a statement past its statement_timeout ends with. */
const QUERY_CANCELED = '57014';

/**
 * A checked-out client, given back when `use` settles. `use` calls `broke` when the connection
 * can no longer be trusted (a statement lost with it, a failed ROLLBACK): it is then closed
 * rather than handed to the next request.
 */
async function withClient<T>(pool: pg.Pool, use: (client: pg.PoolClient, broke: (error: unknown) => void) => Promise<T>): Promise<T> {
  const client = await guarded(() => pool.connect());
  // A checked-out client whose connection drops emits 'error'; unheard, that ends the process.
  // The query in flight fails with it.
  let broken: Error | undefined;
  const onError = (error: Error) => (broken = error);
  client.on('error', onError);
  try {
    return await use(client, (error) => (broken ??= error instanceof Error ? error : new Error(String(error))));
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/** Runs one statement, under `name` when given; `limited` when it tests a request's filter (TIME_LIMITED). */
type Run = (query: pg.QueryConfig, limited: boolean) => Promise<pg.QueryResult>;

/**
 * `onConflict` hears of every statement a conflict ended (CONFLICT_CODES); a time-limited
 * statement that ran past `filterTimeLimitMs` ends with FilterTimeLimitError. With `names`,
 * frequent statements run by name (StatementNames); one whose named statement failed is never
 * named again, and run again at once unnamed when it is a statement of its own (`inTransaction`
 * false); in a transaction the failure has ended the transaction, and `onStale` hears of it so
 * that the transaction is run again.
 */
function executor(
  run: Run,
  options: { filterTimeLimitMs: number; names: StatementNames | undefined; inTransaction: boolean; onConflict?: (error: unknown) => void; onStale?: () => void },
): SqlExecutor {
  const { filterTimeLimitMs, names, inTransaction, onConflict, onStale } = options;
  const query = (sql: string, params: readonly unknown[]) =>
    guarded(async () => {
      const found = statement(sql);
      const { text, limited } = found;
      const values = withoutNul(params);
      const name = names?.nameOf(found);
      try {
        return await run(name === undefined ? { text, values } : { name, text, values }, limited);
      } catch (error) {
        if (name !== undefined && namedStatementFailed(error)) {
          names?.drop(found);
          if (!inTransaction) return await run({ text, values }, limited);
          onStale?.();
        }
        if (onConflict !== undefined && isConflict(error)) onConflict(error);
        if (limited && (error as { code?: unknown } | null)?.code === QUERY_CANCELED) throw new FilterTimeLimitError(filterTimeLimitMs);
        throw error;
      }
    });
  return {
    dialect: 'postgres',
    async all<T>(sql: string, params: readonly unknown[] = []) {
      return (await query(sql, params)).rows as T[];
    },
    async get<T>(sql: string, params: readonly unknown[] = []) {
      return (await query(sql, params)).rows[0] as T | undefined;
    },
    async run(sql: string, params: readonly unknown[] = []) {
      return (await query(sql, params)).rowCount ?? 0;
    },
  };
}

/**
 * Time-limited statements in a transaction: statement_timeout set for the statement and put back
 * after it (a statement that fails aborts the transaction, which undoes the setting).
 */
function transactionRun(client: pg.PoolClient, limitMs: number, together: () => void): Run {
  return async (query, limited) => {
    together();
    if (!limited) return client.query(query);
    // the three go out together (the connection pipelines): one wait, not three. After a failed
    // statement the setting's reset fails too (the transaction is aborted): the statement's error is the one told
    const set = client.query(`SET LOCAL statement_timeout = ${Math.round(limitMs)}`);
    const result = client.query(query);
    const reset = client.query('SET LOCAL statement_timeout TO DEFAULT');
    set.catch(() => undefined);
    reset.catch(() => undefined);
    await set;
    const rows = await result;
    await reset;
    return rows;
  };
}

/**
 * For a transaction's connection: call before sending a statement, and the statements sent in the
 * same turn of the event loop (before its next tick) leave in one write. On a machine whose cores
 * are busy, each write that wakes the database's backend may hand it the core at once (the
 * writer is preempted inside the write): statements pipelined in separate writes would still
 * wake it once each.
 */
function writesTogether(client: pg.PoolClient): () => void {
  const stream = client.connection.stream;
  let corked = false;
  return () => {
    if (corked) return;
    corked = true;
    stream.cork();
    process.nextTick(() => {
      corked = false;
      stream.uncork();
    });
  };
}

/** pgvector's `hnsw.ef_search` on every connection (see the pool's options). */
export const HNSW_EF_SEARCH = 40;

/**
 * The pool's size unless DATABASE_POOL_SIZE says otherwise: two connections a core and one, at
 * most 10. Where the server and PostgreSQL share a small machine, more statements at once than
 * the cores can run only make the database's processes take turns: on two cores the soak's
 * database used 0.62 to 0.68 of a core with 5 connections against 0.71 and 0.76 with 10, and its
 * p50 was 12.4, 14.8 and 18.3 ms against 16.5 and 27.0 (docs/operations.md, 5 December 2026).
 */
export function defaultPoolSize(): number {
  return Math.min(10, 2 * availableParallelism() + 1);
}

/** Connections of the pool for time-limited statements, at most (see PostgresDriver). */
const TIME_LIMITED_CONNECTIONS = 4;

export interface PostgresOptions {
  /** DATABASE_POOL_SIZE; undefined: defaultPoolSize(). */
  maxConnections?: number;
  /**
   * Longest wait for a connection, new or from the pool; past it the request fails as
   * unavailable instead of hanging while the server is unreachable.
   */
  connectTimeoutMs?: number;
  /** How long a filtered statement may run (storage/filter-time-limit.ts). */
  filterTimeLimitMs?: number;
  /**
   * DATABASE_PREPARED_STATEMENTS (true): frequent statements are prepared by name on each
   * connection. Off for a connection pooler that does not keep them (PgBouncer in transaction
   * mode before 1.21, or without max_prepared_statements).
   */
  preparedStatements?: boolean;
  /**
   * VECTOR_BUILD_MEMORY_MB (512): most memory one HNSW build of a message vector part may take
   * (message-vector-parts.ts); 0 leaves the role's maintenance_work_mem.
   */
  vectorBuildMemoryMb?: number;
}

/**
 * Two pools: statements that test a request's filter (TIME_LIMITED) outside a transaction run
 * on connections of their own, opened with statement_timeout set to the filter time limit, and
 * all others on the main pool, without one. So the limit costs no round trip (setting and
 * resetting it around each statement on a shared connection took 164 against 25 µs a statement
 * here), and slow filters occupy at most TIME_LIMITED_CONNECTIONS connections of a process.
 */
export class PostgresDriver implements SqlDriver {
  readonly dialect = 'postgres' as const;
  readonly conflicts: ConflictCounts = { retried: 0, failed: 0 };
  readonly pool: pg.Pool;
  private readonly limitedPool: pg.Pool;
  private readonly direct: SqlExecutor;
  private readonly filterTimeLimitMs: number;
  /** Undefined: DATABASE_PREPARED_STATEMENTS off. */
  private readonly names: StatementNames | undefined;
  readonly preparedStatements: Readonly<{ named: number; dropped: number }> | undefined;
  /** VECTOR_BUILD_MEMORY_MB, for the vector parts' upkeep. */
  readonly vectorBuildMemoryMb: number | undefined;

  constructor(connectionString: string, options: PostgresOptions = {}) {
    this.vectorBuildMemoryMb = options.vectorBuildMemoryMb;
    this.filterTimeLimitMs = options.filterTimeLimitMs ?? DEFAULT_FILTER_TIME_LIMIT_MS;
    this.names = (options.preparedStatements ?? true) ? new StatementNames() : undefined;
    this.preparedStatements = this.names?.counts;
    const size = options.maxConnections ?? defaultPoolSize();
    const config: pg.PoolConfig = {
      connectionString,
      max: size,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
      // an idle connection is kept for IDLE_CONNECTION_MS, not pg-pool's 10 s: under a load that
      // comes and goes (two processes sharing a soak's clients) the pool closed and opened
      // connections all along, and each new one costs the database a process, its caches and a
      // parse of every named statement again
      idleTimeoutMillis: IDLE_CONNECTION_MS,
      // a server that vanished without closing the socket is noticed instead of waited on forever
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      // statements sent on a connection before the answer to the one before it: a transaction's
      // BEGIN with its first statement, reads that do not wait on each other side by side
      // (one wait for both); the server runs them in order, each with its own result or error
      pipeline: true,
      // pgvector: a filtered HNSW search (one collection) goes on scanning the index until it has
      // its k rows, in distance order, instead of stopping after ef_search candidates. Each of
      // the message vectors' parts is searched from ef_search candidates of its own: 40
      // (pgvector's default) rather than 100 made a search over parts 1.7 instead of 2.6 times
      // one index's, finding more of the true nearest than one index did at 100 (decision 0043).
      // Options in the URL take precedence.
      ...(/[?&]options=/.test(connectionString) ? {} : { options: `-c hnsw.iterative_scan=strict_order -c hnsw.ef_search=${HNSW_EF_SEARCH} -c jit=off` }),
    };
    this.pool = new pg.Pool(config);
    const setLimit = `SET statement_timeout = ${Math.round(this.filterTimeLimitMs)}`;
    this.limitedPool = new pg.Pool({
      ...config,
      max: Math.min(size, TIME_LIMITED_CONNECTIONS),
      // pg-pool awaits it before the new connection is used; a failure fails that use
      onConnect: async (client) => {
        await client.query(setLimit);
      },
    });
    // An idle client losing its connection must not crash the process; the pool replaces it.
    this.pool.on('error', () => undefined);
    this.limitedPool.on('error', () => undefined);
    this.direct = executor((query, limited) => (limited ? this.limitedPool : this.pool).query(query), {
      filterTimeLimitMs: this.filterTimeLimitMs,
      names: this.names,
      inTransaction: false,
    });
  }

  all<T>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    return this.retried(() => this.direct.all<T>(sql, params));
  }

  get<T>(sql: string, params?: readonly unknown[]): Promise<T | undefined> {
    return this.retried(() => this.direct.get<T>(sql, params));
  }

  run(sql: string, params?: readonly unknown[]): Promise<number> {
    return this.retried(() => this.direct.run(sql, params));
  }

  /** A statement of its own (its own transaction), run again when a conflict ended it. */
  private async retried<T>(statement: () => Promise<T>): Promise<T> {
    const runs: ConflictRuns = { attempt: 0 };
    for (;;) {
      try {
        return await statement();
      } catch (error) {
        if (!isConflict(error)) throw error;
        await this.afterConflict(error, runs);
      }
    }
  }

  /**
   * Runs `fn` in a transaction; when a conflict (a deadlock, a serialization failure) ended it,
   * `fn` runs again in a new one, up to CONFLICT_ATTEMPTS times in all. So `fn` must do nothing
   * outside the database that cannot be done twice; every transaction of the store only reads
   * and writes through `tx` and computes.
   */
  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const runs: ConflictRuns = { attempt: 0 };
    for (;;) {
      let conflict: unknown;
      let stale = false;
      try {
        return await this.transactionOnce(fn, {
          onConflict: (error) => (conflict ??= error),
          onStale: () => (stale = true),
        });
      } catch (error) {
        // a prepared statement gone stale ended it, and runs unnamed from now on: at once again
        // (each time one statement fewer is named, so this ends)
        if (stale) continue;
        // fn may have caught the conflict and thrown something else: the transaction was over anyway
        conflict ??= isConflict(error) ? error : undefined;
        if (conflict === undefined) throw error;
        await this.afterConflict(conflict, runs);
      }
    }
  }

  /** Counts the conflict; waits before the next attempt, or throws after the last (the 503, or a parent gone as it is). */
  private async afterConflict(conflict: unknown, runs: ConflictRuns): Promise<void> {
    runs.attempt++;
    if (runs.attempt >= CONFLICT_ATTEMPTS) {
      this.conflicts.failed++;
      throw isParentGone(conflict) ? conflict : conflictsPersisted(conflict);
    }
    this.conflicts.retried++;
    // a short random wait, longer after each attempt, so the two sides part
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * runs.attempt));
  }

  private async transactionOnce<T>(fn: (tx: SqlExecutor) => Promise<T>, heard: { onConflict: (error: unknown) => void; onStale: () => void }): Promise<T> {
    return withClient(this.pool, async (client, broke) => {
      // BEGIN is not waited for: it goes out with the transaction's first statement (the pool's
      // connections pipeline), one round trip a transaction less. On a connection at rest BEGIN
      // fails only with the connection, which takes the statements sent behind it along.
      const together = writesTogether(client);
      together();
      const begun = guarded(() => client.query('BEGIN'));
      begun.catch(() => undefined);
      try {
        const result = await fn(
          executor(transactionRun(client, this.filterTimeLimitMs, together), { filterTimeLimitMs: this.filterTimeLimitMs, names: this.names, inTransaction: true, ...heard }),
        );
        await begun;
        // A COMMIT lost with its connection may or may not have been applied; either way it was
        // never acknowledged, so the request fails and nothing the client was told of is lost.
        await guarded(() => client.query('COMMIT'));
        return result;
      } catch (error) {
        if (error instanceof StoreUnavailableError) broke(error);
        else await client.query('ROLLBACK').catch(broke);
        throw error;
      }
    });
  }

  async exec(script: string): Promise<void> {
    await guarded(() => this.pool.query(script));
  }

  /** One round trip; a standby in recovery answers but cannot take writes. */
  async probe(): Promise<void> {
    const row = await this.direct.get<{ recovering: boolean }>('SELECT pg_is_in_recovery() AS recovering');
    if (row?.recovering === true) throw new StoreUnavailableError('The database is read-only (a standby in recovery)', 'in recovery');
  }

  /** PostgreSQL has no shared header to read: every check queries. */
  changeToken(): undefined {
    return undefined;
  }

  async close(): Promise<void> {
    await Promise.all([this.pool.end(), this.limitedPool.end()]);
  }
}
