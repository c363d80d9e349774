import pg from 'pg';
import type { SqlDriver, SqlExecutor } from '../sql/driver.js';

// timestamptz and jsonb come back parsed by pg (Date and objects); int8 (counts) as numbers,
// which is safe for row counts far beyond what one server stores.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/** Rewrites `?` placeholders to `$1..$n`, leaving quoted text alone. Cached per query text. */
const numbered = new Map<string, string>();
export function numberPlaceholders(sql: string): string {
  let out = numbered.get(sql);
  if (out !== undefined) return out;
  let n = 0;
  let quote: string | undefined;
  out = '';
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
  numbered.set(sql, out);
  return out;
}

type Queryable = pg.Pool | pg.PoolClient;

function executor(target: Queryable): SqlExecutor {
  return {
    dialect: 'postgres',
    async all<T>(sql: string, params: readonly unknown[] = []) {
      const result = await target.query(numberPlaceholders(sql), params as unknown[]);
      return result.rows as T[];
    },
    async get<T>(sql: string, params: readonly unknown[] = []) {
      const result = await target.query(numberPlaceholders(sql), params as unknown[]);
      return result.rows[0] as T | undefined;
    },
    async run(sql: string, params: readonly unknown[] = []) {
      const result = await target.query(numberPlaceholders(sql), params as unknown[]);
      return result.rowCount ?? 0;
    },
  };
}

export class PostgresDriver implements SqlDriver {
  readonly dialect = 'postgres' as const;
  readonly pool: pg.Pool;
  private readonly direct: SqlExecutor;

  constructor(connectionString: string, maxConnections = 10) {
    this.pool = new pg.Pool({ connectionString, max: maxConnections });
    // An idle client losing its connection must not crash the process; the pool replaces it.
    this.pool.on('error', () => undefined);
    this.direct = executor(this.pool);
  }

  all<T>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    return this.direct.all<T>(sql, params);
  }

  get<T>(sql: string, params?: readonly unknown[]): Promise<T | undefined> {
    return this.direct.get<T>(sql, params);
  }

  run(sql: string, params?: readonly unknown[]): Promise<number> {
    return this.direct.run(sql, params);
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      try {
        const result = await fn(executor(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    } finally {
      client.release();
    }
  }

  async exec(script: string): Promise<void> {
    await this.pool.query(script);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
