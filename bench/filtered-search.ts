/**
 * Message search confined by a filter to some sessions, as a chat's tools search the sessions
 * their observer may see: `npx tsx bench/filtered-search.ts`. Loads 200,000 messages in 1,000
 * sessions (bench/dataset.ts, kept in /tmp/filtered-search.db for the next run; DATABASE_URL for
 * PostgreSQL, loaded each run) and times `searchMessages` over 30 queries (one word, or two every
 * third), best of 3 rounds: scoped to a session, and in the workspace with the filter
 * `session_id` of one session, `in` five and `in` a hundred.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { openDatabase } from '../src/runtime/database.js';
import { domainLimits } from '../src/runtime/runtime.js';
import { loadConfig } from '../src/config/config.js';
import { createDomainContext } from '../src/domain/context.js';
import { searchMessages } from '../src/domain/messages/search.js';
import { Corpus } from './corpus.js';
import { loadMessages } from './dataset.js';
import { CURRENT_RULES } from '../src/domain/filters/filters.js';

const path = process.env.DATABASE_URL ?? '/tmp/filtered-search.db';
const fresh = path.startsWith('postgres') || !existsSync(path);
const database = await openDatabase(path);
const corpus = new Corpus(20000, 42, 1.1);
if (fresh) {
  await loadMessages(database.store, { workspaceId: 'bench', messages: 200_000, sessions: 1000, vocabulary: 20000, zipf: 1.1, seed: 42 }, corpus, () => randomUUID());
  if (path.startsWith('postgres')) await database.driver.run('ANALYZE');
}
const ctx = createDomainContext(database.store, domainLimits(loadConfig()));
const words = corpus.words;
const queries = Array.from({ length: 30 }, (_, i) => (i % 3 === 2 ? `${words[40 + i]} ${words[600 + i * 13]}` : words[20 + i * 17]));
const sessions = (n: number, at: number) => Array.from({ length: n }, (_, i) => `chat-${String(1 + ((at + i * 37) % 999)).padStart(6, '0')}`);
const cases: [string, (q: string, i: number) => Promise<unknown>][] = [
  ['session scope', (q, i) => searchMessages(ctx, { workspaceId: 'bench', sessionId: sessions(1, i)[0] }, { query: q, filters: null, limit: 10, rules: CURRENT_RULES })],
  ['filter session_id', (q, i) => searchMessages(ctx, { workspaceId: 'bench' }, { query: q, filters: { session_id: sessions(1, i)[0] }, limit: 10, rules: CURRENT_RULES })],
  ['filter 5 sessions', (q, i) => searchMessages(ctx, { workspaceId: 'bench' }, { query: q, filters: { session_id: { in: sessions(5, i) } }, limit: 10, rules: CURRENT_RULES })],
  ['filter 100 sessions', (q, i) => searchMessages(ctx, { workspaceId: 'bench' }, { query: q, filters: { session_id: { in: sessions(100, i) } }, limit: 10, rules: CURRENT_RULES })],
];
for (const [name, run] of cases) {
  const times: number[] = [];
  for (let round = 0; round < 3; round++) {
    const t0 = performance.now();
    for (let i = 0; i < queries.length; i++) await run(queries[i], i);
    times.push((performance.now() - t0) / queries.length);
  }
  console.log(`${name.padEnd(20)} ${Math.min(...times).toFixed(2)} ms a search (best of 3 rounds of ${queries.length})`);
}
process.exit(0);
