import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * A PostgreSQL database of its own for a bench case that starts its own server (the deriver,
 * conclusions/query, peer chat), made beside the one BENCH_DATABASE_URL names, as each SQLite case
 * has a file of its own: cases sharing one database met each other's data (the conclusions/query
 * case's 256-wide vectors fixed the store's size, and the deriver's 1,536-wide ones were then
 * refused). Dropped by `drop`. A user who may not create databases gets the shared one, said.
 */
export async function ownBenchDatabase(url: string, label: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `engram_bench_${label.replace(/\W+/g, '_')}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (error) {
    console.log(`\n  (${label}: no database of its own, ${(error as Error).message}; it runs on the shared one)`);
    await admin.end();
    return { url, drop: async () => {} };
  }
  await admin.end();
  const own = new URL(url);
  own.pathname = `/${name}`;
  return {
    url: own.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
