/**
 * Times migration 0010 (stemmed search index) on a store of BENCH_MESSAGES messages (default
 * 1,000,000): loads them as the bench does, then runs the migration's work again (SQLite: the
 * FTS5 index made anew and rebuilt; PostgreSQL: the search_vector column replaced, its GIN
 * index built, ANALYZE). `npx tsx bench/search-migration.ts`; with BENCH_DATABASE_URL on PostgreSQL.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nanoid } from 'nanoid';
import { openDatabase } from '../src/runtime/database.js';
import { Corpus } from './corpus.js';
import { loadMessages } from './dataset.js';

const messages = Number(process.env.BENCH_MESSAGES ?? 1_000_000);
const url = process.env.BENCH_DATABASE_URL;
const dir = mkdtempSync(join(tmpdir(), 'engram-migration-'));
const database = await openDatabase(url ?? join(dir, 'bench.db'));
const workspaceId = `migration-${nanoid(8)}`;
try {
  const loadStarted = performance.now();
  await loadMessages(database.store, { workspaceId, messages, sessions: 1000, vocabulary: 20_000, zipf: 1.1, seed: 42 }, new Corpus(20_000, 42, 1.1), () => nanoid(21));
  console.log(`loaded ${messages} messages in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`);
  const dialect = url === undefined ? 'sqlite' : 'postgres';
  const sql = readFileSync(new URL(`../src/storage/${dialect}/migrations/0010_stemmed_search.sql`, import.meta.url), 'utf8')
    .replace(/^--.*$/gm, '')
    .split(';')
    .map((statement) => statement.trim())
    .filter((statement) => statement !== '' && !/TEXT SEARCH/.test(statement));
  const started = performance.now();
  for (const statement of sql) await database.driver.run(statement);
  console.log(`migration 0010's work on ${messages} messages (${dialect}): ${((performance.now() - started) / 1000).toFixed(1)} s`);
} finally {
  if (url !== undefined) await database.store.workspaces.delete(workspaceId).catch(() => undefined);
  await database.driver.close();
  rmSync(dir, { recursive: true, force: true });
}
