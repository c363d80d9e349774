import pg from 'pg';

/*
 * One PostgreSQL database per test worker. Vitest runs test files in several worker processes at
 * once (VITEST_POOL_ID, 1 to maxWorkers); files that run job workers would otherwise claim each
 * other's jobs on one shared database. Worker 1 uses the database DATABASE_URL names, worker N
 * the database of that name with `_wN` appended, created by the setup file below when it is missing
 * (so a DATABASE_URL of your own gets those databases beside it).
 */

/** `url` with its database name suffixed for this test worker (unchanged in worker 1 or outside a worker). */
export function workerDatabaseUrl(url: string): string {
  const pool = Number(process.env.VITEST_POOL_ID ?? 1);
  if (!Number.isInteger(pool) || pool <= 1) return url;
  const parsed = new URL(url);
  parsed.pathname = `${parsed.pathname}_w${pool}`;
  return parsed.toString();
}

/** Creates this worker's database on the server of `url` unless it exists. */
export async function ensureWorkerDatabase(url: string): Promise<void> {
  const own = workerDatabaseUrl(url);
  if (own === url) return;
  const name = decodeURIComponent(new URL(own).pathname.slice(1));
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) {
      await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`).catch((error: { code?: string }) => {
        // created meanwhile by another run on the same server
        if (error.code !== '42P04') throw error;
      });
    }
  } finally {
    await admin.end();
  }
}
