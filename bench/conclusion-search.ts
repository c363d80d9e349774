/**
 * Full-text search of one collection's conclusions (an observer's about one peer) in a store of
 * many: what `conclusions/query` does without an embedding model, and what a chat's prefetch,
 * its `search_memory` tool, a representation with `search_query` and a dream's search send:
 * `npx tsx bench/conclusion-search.ts`. Loads 2,800 collections of 50 conclusions (140,000;
 * kept in /tmp/conclusion-search.db for the next run; DATABASE_URL for PostgreSQL, loaded each
 * run) and times `queryConclusions` over 32 queries (a common, a medium or a rare word, or three), best of 3.
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

const PEERS = 1400;
const PER_COLLECTION = 50;
const path = process.env.DATABASE_URL ?? '/tmp/conclusion-search.db';
const fresh = path.startsWith('postgres') || !existsSync(path);
const database = await openDatabase(path);
const corpus = new Corpus(20000, 42, 1.1);
const peer = (i: number) => `user-${String(i).padStart(5, '0')}`;
// each peer's own collection and the assistant's collection about it
const collections = Array.from({ length: PEERS * 2 }, (_, i) => ({ observerId: i % 2 === 0 ? peer(i >> 1) : 'assistant', observedId: peer(i >> 1) }));
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
const queries = Array.from({ length: 32 }, (_, i) =>
  [words[i % 8], words[40 + i * 17], words[3000 + i * 111], `${words[i % 5]} ${words[60 + i * 7]} ${words[900 + i * 31]}`][i % 4],
);
const times: number[] = [];
let found = 0;
for (let round = 0; round < 3; round++) {
  found = 0;
  const t0 = performance.now();
  for (let i = 0; i < queries.length; i++) {
    const { observerId, observedId } = collections[(i * 97) % collections.length];
    const filters = { observer_id: observerId, observed_id: observedId };
    found += (await queryConclusions(ctx, 'bench', { query: queries[i], filters, topK: 10, distance: null, generation: 'v3' })).length;
  }
  times.push((performance.now() - t0) / queries.length);
}
console.log(`collection search ${Math.min(...times).toFixed(2)} ms a search (best of 3 rounds of ${queries.length}; ${found} conclusions found a round)`);
process.exit(0);
