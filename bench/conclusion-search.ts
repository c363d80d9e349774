/**
 * Full-text search of one collection's conclusions (an observer's about one peer) in a store of
 * many: what `conclusions/query` does without an embedding model, and what a chat's prefetch,
 * its `search_memory` tool, a representation with `search_query` and a dream's search send:
 * `npx tsx bench/conclusion-search.ts`. Loads 2,800 collections of 50 conclusions (140,000;
 * kept in /tmp/conclusion-search.db for the next run; DATABASE_URL for PostgreSQL, loaded each
 * run) and times `queryConclusions` over 200 queries (a common, a medium or a rare word, three
 * words, or a question around two words), best of 3, with the p50 and p99 of every search.
 * CONCLUSION_SEARCH_PEERS and CONCLUSION_SEARCH_PER_COLLECTION change the layout;
 * CONCLUSION_SEARCH_ONE_COLLECTION=1 puts PER_COLLECTION conclusions in a single collection
 * (the largest scope one search reads).
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { openDatabase } from '../src/runtime/database.js';
import { domainLimits } from '../src/runtime/runtime.js';
import { loadConfig } from '../src/config/config.js';
import { createDomainContext } from '../src/domain/context.js';
import { queryConclusions } from '../src/domain/memory/conclusions.js';
import type { ConclusionRecord } from '../src/storage/store.js';
import { Corpus } from './corpus.js';
import { CURRENT_RULES } from '../src/domain/filters/filters.js';

const PEERS = Number(process.env.CONCLUSION_SEARCH_PEERS ?? 1400);
const PER_COLLECTION = Number(process.env.CONCLUSION_SEARCH_PER_COLLECTION ?? 50);
const ONE_COLLECTION = process.env.CONCLUSION_SEARCH_ONE_COLLECTION === '1';
const path = process.env.DATABASE_URL ?? `/tmp/conclusion-search-${PEERS}x${PER_COLLECTION}${ONE_COLLECTION ? '-one' : ''}.db`;
const fresh = path.startsWith('postgres') || !existsSync(path);
const database = await openDatabase(path);
const corpus = new Corpus(20000, 42, 1.1);
const peer = (i: number) => `user-${String(i).padStart(5, '0')}`;
// each peer's own collection and the assistant's collection about it
const collections = Array.from({ length: ONE_COLLECTION ? 1 : PEERS * 2 }, (_, i) => ({ observerId: i % 2 === 0 ? peer(i >> 1) : 'assistant', observedId: peer(i >> 1) }));
if (fresh) {
  const started = performance.now();
  const store = database.store;
  const base = Date.now() - 86_400_000;
  await store.workspaces.createIfAbsent({ id: 'bench', metadata: {}, configuration: {} }, new Date(base));
  await store.transaction(async (tx) => {
    const ids = [...Array.from({ length: PEERS }, (_, i) => peer(i)), 'assistant'];
    for (let start = 0; start < ids.length; start += 500) await tx.peers.ensure('bench', ids.slice(start, start + 500), new Date(base));
  });
  // conclusions arrive a batch per collection at a time, round robin, as a deriver writes them
  for (let round = 0; round < PER_COLLECTION / 10; round++) {
    await store.transaction(async (tx) => {
      for (const [c, collection] of collections.entries()) {
        const rows: ConclusionRecord[] = Array.from({ length: 10 }, (_, k) => ({
          // (one collection: PER_COLLECTION conclusions about one peer, 10 a batch)
          id: randomUUID().slice(0, 21),
          workspaceId: 'bench',
          ...collection,
          sessionId: null,
          content: corpus.message(),
          level: 'explicit',
          sourceIds: null,
          timesDerived: 1,
          createdAt: new Date(base + (round * collections.length + c) * 10 + k),
        }));
        await tx.memory.insertConclusions(rows);
      }
    });
  }
  if (path.startsWith('postgres')) await database.driver.run('ANALYZE');
  console.log(`loaded ${collections.length * PER_COLLECTION} conclusions in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
const ctx = createDomainContext(database.store, domainLimits(loadConfig()));
const words = corpus.words;
// a common word (as "user" is in conclusions), a medium one, a rare one, a question of three
const queries = Array.from({ length: 200 }, (_, i) =>
  [
    words[i % 8],
    words[(40 + i * 17) % 3000],
    words[3000 + ((i * 111) % 16000)],
    `${words[i % 5]} ${words[(60 + i * 7) % 900]} ${words[900 + ((i * 31) % 5000)]}`,
    // a question: question words and stop words around two words
    `what did ${words[(70 + i * 13) % 2000]} say about the ${words[(200 + i * 29) % 8000]}?`,
  ][i % 5],
);
const times: number[] = [];
const each: number[] = [];
// CPU time of this process per search (SQLite runs in it): on a loaded machine wall time also
// counts the time spent waiting for a core
const eachCpu: number[] = [];
let found = 0;
for (let round = 0; round < 3; round++) {
  found = 0;
  const t0 = performance.now();
  for (let i = 0; i < queries.length; i++) {
    const { observerId, observedId } = collections[(i * 97) % collections.length];
    const filters = { observer_id: observerId, observed_id: observedId };
    const started = performance.now();
    const cpu = process.cpuUsage();
    found += (await queryConclusions(ctx, 'bench', { query: queries[i], filters, topK: 10, distance: null, rules: CURRENT_RULES })).length;
    each.push(performance.now() - started);
    const used = process.cpuUsage(cpu);
    eachCpu.push((used.user + used.system) / 1000);
  }
  times.push((performance.now() - t0) / queries.length);
}
each.sort((a, b) => a - b);
eachCpu.sort((a, b) => a - b);
const at = (q: number, list = each) => list[Math.min(list.length - 1, Math.floor(q * list.length))].toFixed(2);
console.log(`${collections.length} collection(s) of ${PER_COLLECTION} conclusions (${collections.length * PER_COLLECTION} in all)`);
console.log(`collection search ${Math.min(...times).toFixed(2)} ms a search (best of 3 rounds of ${queries.length}; ${found} conclusions found a round); p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms over all ${each.length}`);
console.log(`CPU time a search: p50 ${at(0.5, eachCpu)} ms, p99 ${at(0.99, eachCpu)} ms, max ${at(1, eachCpu)} ms`);
process.exit(0);
