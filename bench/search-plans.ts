/**
 * How PostgreSQL reads a workspace's matches of a word: walking the workspace newest first, or
 * through the words' GIN index and a sort, as the store chooses from the planner's statistics
 * (src/storage/postgres/search-statistics.ts; docs/decisions/0021-search.md). Run against a
 * PostgreSQL database: `DATABASE_URL=postgres://... npx tsx bench/search-plans.ts`. When the
 * workspace `bench` is empty it loads BENCH_MESSAGES (default 100,000) messages in 1,000 sessions
 * (bench/dataset.ts) and analyzes them; else it uses what is there.
 *
 * It prints, for words from the most common to rare ones, their matches and the time of the
 * store's read of their newest 1,000 matches, walked (a store without statistics) and as
 * chosen; then `searchMessages` over 20 one-word and 20 two-word queries with each store,
 * alternately, 3 rounds after one unmeasured, with the answers compared.
 */
import { randomUUID } from 'node:crypto';
import { domainLimits } from '../src/runtime/runtime.js';
import { openDatabase } from '../src/runtime/database.js';
import { loadConfig } from '../src/config/config.js';
import { createDomainContext } from '../src/domain/context.js';
import { searchMessages } from '../src/domain/messages/search.js';
import { DIALECTS } from '../src/storage/sql/dialects.js';
import { SqlMessageStore } from '../src/storage/sql/message-store.js';
import { SqlStore } from '../src/storage/sql/sql-store.js';
import { Corpus } from './corpus.js';
import { loadMessages } from './dataset.js';
import { CURRENT_RULES } from '../src/domain/filters/filters.js';

const url = process.env.DATABASE_URL ?? '';
if (!url.startsWith('postgres')) throw new Error('DATABASE_URL must name a PostgreSQL database');
const messages = Number(process.env.BENCH_MESSAGES ?? 100_000);
const WORKSPACE = 'bench';

const chosen = await openDatabase(url);
const corpus = new Corpus(20_000, 42, 1.1);
const held = await chosen.driver.get<{ n: number | string }>('SELECT count(*) AS n FROM (SELECT 1 FROM messages WHERE workspace_id = ? LIMIT 1) s', [WORKSPACE]);
if (Number(held?.n ?? 0) === 0) {
  const started = performance.now();
  await loadMessages(chosen.store, { workspaceId: WORKSPACE, messages, sessions: 1000, vocabulary: 20_000, zipf: 1.1, seed: 42 }, corpus, () => randomUUID());
  await chosen.driver.run('ANALYZE');
  console.log(`loaded ${messages.toLocaleString('en-US')} messages in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
const total = await chosen.driver.get<{ n: number | string }>('SELECT count(*) AS n FROM messages WHERE workspace_id = ?', [WORKSPACE]);
console.log(`workspace ${WORKSPACE}: ${Number(total?.n).toLocaleString('en-US')} messages`);

// the same database without statistics: every search walks, as the planner chose before
const walking = new SqlStore(chosen.driver, chosen.driver, undefined, undefined, undefined, null);
const walkedMessages = new SqlMessageStore(chosen.driver, DIALECTS.postgres);
const words = corpus.words;
const ranks = [0, 1, 2, 3, 5, 8, 12, 18, 25, 35, 50, 70, 100, 140, 200, 300, 450, 700, 1000, 1500, 2500, 4000, 7000, 12_000];

async function timed(read: () => Promise<unknown>, times: number): Promise<number> {
  await read();
  const started = performance.now();
  for (let i = 0; i < times; i++) await read();
  return (performance.now() - started) / times;
}

console.log('\none word, its newest 1,000 matches (searchMatches), ms:');
console.log('| word | matches | walked | as chosen |');
console.log('|---|---|---|---|');
for (const rank of ranks) {
  const search = { workspaceId: WORKSPACE, terms: [words[rank]], filter: null, candidates: 1000 };
  const count = await chosen.driver.get<{ n: number | string }>(
    "SELECT count(*) AS n FROM messages m WHERE m.search_vector @@ plainto_tsquery('engram_porter', ?) AND m.workspace_id = ?",
    [words[rank], WORKSPACE],
  );
  const walked = await timed(() => walkedMessages.searchMatches(search), 5);
  const asChosen = await timed(() => chosen.store.messages.searchMatches(search), 5);
  console.log(`| ${words[rank]} | ${Number(count?.n).toLocaleString('en-US')} | ${walked.toFixed(2)} | ${asChosen.toFixed(2)} |`);
}

const queryRanks = ranks.slice(3, 23);
const queries = [...queryRanks.map((r) => words[r]), ...queryRanks.map((r, i) => `${words[r]} ${words[queryRanks[(i + 7) % queryRanks.length]]}`)];
const contexts = [chosen.store, walking].map((store) => createDomainContext(store, domainLimits(loadConfig())));
const sums = [
  [0, 0],
  [0, 0],
];
let differ = 0;
for (let round = 0; round < 4; round++) {
  for (const [index, query] of queries.entries()) {
    const answers: string[] = [];
    for (const which of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const search = () => searchMessages(contexts[which], { workspaceId: WORKSPACE }, { query, filters: null, limit: 10, rules: CURRENT_RULES });
      answers[which] = (await search()).map((m) => m.id).join();
      const ms = await timed(search, 2);
      if (round > 0) sums[which][index < queryRanks.length ? 0 : 1] += ms;
    }
    if (round === 0 && answers[0] !== answers[1]) differ++;
  }
}
const mean = (sum: number) => (sum / 3 / queryRanks.length).toFixed(2);
console.log(`\nsearchMessages, mean ms (${queryRanks.length} queries each, 3 rounds): one word ${mean(sums[1][0])} walked, ${mean(sums[0][0])} as chosen; two words ${mean(sums[1][1])} walked, ${mean(sums[0][1])} as chosen`);
console.log(`answers differing: ${differ} of ${queries.length}`);
await chosen.driver.close();
