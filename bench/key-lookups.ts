/**
 * A search's candidates read back by their keys on PostgreSQL (`keyIn` in src/storage/sql/dialect.ts):
 * the conclusions of 5 random keys, as the store asks for them (`= ANY (ARRAY(SELECT ...))` over the
 * JSON array of keys) beside the plain `IN (SELECT ...)` it used before, as the table grows: 1,000,
 * 5,000, 10,000, 20,000 and 40,000 conclusions. Medians of BENCH_KEY_LOOKUPS (300) look-ups of
 * each shape, in turn, at each size, with their ratio.
 *
 *   node scripts/with-postgres.mjs npx tsx bench/key-lookups.ts
 */
import { migrate } from '../src/storage/migrate.js';
import { PostgresDriver } from '../src/storage/postgres/postgres-driver.js';
import { median } from './stats.js';

const URL = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL;
if (!URL?.startsWith('postgres')) {
  console.error('key-lookups: set BENCH_DATABASE_URL (or DATABASE_URL) to a PostgreSQL, or run it through node scripts/with-postgres.mjs');
  process.exit(2);
}
const LOOKUPS = Number(process.env.BENCH_KEY_LOOKUPS ?? 300);
const WS = `bench-keys-${Date.now().toString(36)}`;

const driver = new PostgresDriver(URL, { maxConnections: 2 });
await migrate(driver);
await driver.run("INSERT INTO workspaces (id, metadata, configuration, created_at) VALUES (?, '{}', '{}', now())", [WS]);
await driver.run("INSERT INTO peers (workspace_id, id, metadata, configuration, created_at) SELECT ?, x || g, '{}', '{}', now() FROM generate_series(0, 15) g, (VALUES ('p'), ('q')) v(x)", [WS]);
const SHAPES = {
  'IN (SELECT ...)': 'c.pk IN (SELECT CAST(j.value AS BIGINT) FROM jsonb_array_elements_text(?::jsonb) j)',
  '= ANY (ARRAY(SELECT ...))': 'c.pk = ANY (ARRAY(SELECT CAST(j.value AS BIGINT) FROM jsonb_array_elements_text(?::jsonb) j))',
};
const [before, now] = Object.keys(SHAPES) as (keyof typeof SHAPES)[];
console.log(`key-lookups: 5 conclusions by key, medians of ${LOOKUPS} look-ups of each shape`);
let total = 0;
for (const size of [1_000, 5_000, 10_000, 20_000, 40_000]) {
  await driver.run(
    `INSERT INTO conclusions (id, workspace_id, observer_id, observed_id, content, level, source_ids, source_session_ids, times_derived, metadata, created_at, valid_from)
     SELECT ? || '-' || g, ?, 'p' || (g % 16), 'q' || (g % 16), 'the peer mentioned a thing numbered ' || g, 'explicit', '[]', '[]', 1, '{}', now(), now()
     FROM generate_series(?::int, ?::int) g`,
    [WS, WS, total + 1, size],
  );
  total = size;
  // the statistics autovacuum would have gathered
  await driver.run('ANALYZE conclusions');
  const [{ lo, hi }] = await driver.all<{ lo: string; hi: string }>('SELECT min(pk) AS lo, max(pk) AS hi FROM conclusions WHERE workspace_id = ?', [WS]);
  const times: Record<string, number[]> = { [before]: [], [now]: [] };
  for (let i = 0; i < LOOKUPS; i++) {
    const keys = JSON.stringify(Array.from({ length: 5 }, () => Number(lo) + Math.floor(Math.random() * (Number(hi) - Number(lo) + 1))));
    for (const shape of i % 2 === 0 ? [before, now] : [now, before]) {
      const started = performance.now();
      await driver.all(`SELECT c.pk, c.id, c.content FROM conclusions c WHERE ${SHAPES[shape]} AND c.deleted_at IS NULL`, [keys]);
      times[shape].push(performance.now() - started);
    }
  }
  const ms = (shape: string) => median(times[shape]);
  console.log(`${String(size).padStart(6)} conclusions: ${before} ${ms(before).toFixed(3)} ms, ${now} ${ms(now).toFixed(3)} ms (ratio ${(ms(now) / ms(before)).toFixed(2)})`);
}
await driver.run('DELETE FROM workspaces WHERE id = ?', [WS]);
await driver.close();
