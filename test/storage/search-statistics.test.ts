import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BITMAP_MATCH_COST, SearchStatistics, sparseSearch } from '../../src/storage/postgres/search-statistics.js';
import { DIALECTS } from '../../src/storage/sql/dialects.js';
import { SqlMessageStore } from '../../src/storage/sql/message-store.js';
import type { MessageRecord } from '../../src/storage/store.js';
import { openFreshDatabase } from '../support/fresh-database.js';
import { planLines, recordingExecutor } from '../support/recording-executor.js';
import { DIALECT } from '../support/test-app.js';

/*
 * PostgreSQL reads a workspace's newest matches of a word by walking the workspace newest first
 * or, for a word rare enough, through the words' index and a sort, chosen from the planner's
 * statistics (src/storage/postgres/search-statistics.ts).
 */

const statistics = {
  rows: 1_000_000,
  // lexemes, as the index stems them
  wordShare: new Map([
    ['the', 0.8],
    ['know', 0.04],
    ['night', 0.009],
  ]),
  unlistedWordShare: 0.0004,
  workspaceShare: new Map([['large', 0.9]]),
  unlistedWorkspaceShare: 0.05,
};

describe('the choice between the walk and the words\' index', () => {
  it('walks for a common word, reads a rarer word\'s matches, and walks a small workspace', () => {
    // "the": 1,250 rows walked for 1,000 matches, against 800,000 matches read
    expect(sparseSearch(statistics, 'large', ['the'], 1000)).toBe(false);
    // "know" (in 4 %): 25,000 rows walked, 40,000 matches: the walk
    expect(sparseSearch(statistics, 'large', ['know'], 1000)).toBe(false);
    // "night" (0.9 %): 111,111 rows walked, 9,000 matches: the index
    expect(sparseSearch(statistics, 'large', ['night'], 1000)).toBe(true);
    // a word not listed is rarer than the least listed; words are stemmed ("knowing" is "know")
    expect(sparseSearch(statistics, 'large', ['encrypted'], 1000)).toBe(true);
    expect(sparseSearch(statistics, 'large', ['Knowing'], 1000)).toBe(false);
    // every word must occur: the rarest decides
    expect(sparseSearch(statistics, 'large', ['the', 'night'], 1000)).toBe(true);
    // a workspace not listed holds less than the least listed: walking all of it costs less
    // than reading "night"'s 9,000 matches, but not a rarely used word's 400
    expect(sparseSearch({ ...statistics, unlistedWorkspaceShare: 0.01 }, 'small', ['night'], 1000)).toBe(false);
    expect(sparseSearch({ ...statistics, unlistedWorkspaceShare: 0.01 }, 'small', ['encrypted'], 1000)).toBe(true);
    // fewer candidates asked: fewer rows walked
    expect(sparseSearch(statistics, 'large', ['night'], 100)).toBe(false);
    // at the border, the measured cost of a match read through the index against a row walked
    // (rows walked: candidates / 0.009; matches read: 9,000 at BITMAP_MATCH_COST each)
    const border = 0.009 * 0.009 * statistics.rows * BITMAP_MATCH_COST;
    expect(sparseSearch(statistics, 'large', ['night'], Math.floor(border) - 1)).toBe(false);
    expect(sparseSearch(statistics, 'large', ['night'], Math.ceil(border) + 1)).toBe(true);
  });
});

describe.runIf(DIALECT === 'postgres')('a workspace\'s search on PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof openFreshDatabase>>;

  beforeAll(async () => {
    database = await openFreshDatabase();
    const { store, driver } = database;
    const now = new Date(Date.UTC(2026, 0, 5));
    await store.workspaces.createIfAbsent({ id: 'ws', metadata: {}, configuration: {} }, now);
    await store.peers.ensure('ws', ['dana'], now);
    // "often" in every other message, "seldom" in every 40th
    await store.transaction(async (tx) => {
      await tx.sessions.createIfAbsent('ws', { id: 'talk', metadata: {}, configuration: {} }, now);
      const rows = Array.from({ length: 6_000 }, (_, i): MessageRecord => ({
        id: `m-${i}`,
        workspaceId: 'ws',
        sessionId: 'talk',
        peerId: 'dana',
        content: [`line ${i}`, i % 2 === 0 ? 'often' : 'plain', i % 40 === 0 ? 'seldom' : 'usual'].join(' '),
        metadata: {},
        tokenCount: 3,
        createdAt: now,
      }));
      await tx.messages.insert(rows);
    });
    await driver.run('ANALYZE messages');
  }, 60_000);
  afterAll(() => database?.close());

  it('reads a rare word\'s matches through the words\' index and walks for a common one, with the same answers', async () => {
    const { executor, issued } = recordingExecutor(database.driver);
    const chosen = new SqlMessageStore(executor, DIALECTS.postgres, undefined, new SearchStatistics());
    const walked = new SqlMessageStore(database.driver, DIALECTS.postgres);
    for (const [word, sparse] of [['seldom', true], ['often', false]] as const) {
      const search = { workspaceId: 'ws', terms: [word], filter: null, candidates: 100 };
      for (const read of ['searchMatches', 'searchCandidates'] as const) {
        issued.length = 0;
        const answer = await chosen[read](search);
        expect(answer, `${word} ${read}`).toEqual(await walked[read](search));
        expect(answer.length).toBe(100);
        // the statistics' read (once a minute) and the search
        const statement = issued.find((s) => s.sql.includes('search_vector @@'))!;
        const plan = (await planLines(database.driver, statement)).join('\n');
        if (sparse) {
          // every match read, then sorted (how, the planner decides: 6,000 short rows are read whole)
          expect(statement.sql).toContain('ORDER BY m.pk + 0 DESC');
          expect(plan, `${word} ${read}`).not.toMatch(/Index Scan Backward/);
        } else {
          expect(plan, `${word} ${read}`).toMatch(/Index Scan Backward using messages_workspace_seq\b/);
        }
      }
    }
  });

  it('reads the statistics once, and without them walks', async () => {
    const { executor, issued } = recordingExecutor(database.driver);
    const chosen = new SqlMessageStore(executor, DIALECTS.postgres, undefined, new SearchStatistics());
    for (let i = 0; i < 3; i++) await chosen.searchMatches({ workspaceId: 'ws', terms: ['seldom'], filter: null, candidates: 100 });
    expect(issued.filter((s) => s.sql.includes('pg_stats'))).toHaveLength(1);
    // a table never analyzed: no statistics, the walk
    const fresh = await openFreshDatabase();
    try {
      expect(await new SearchStatistics().sparse(fresh.driver, 'ws', ['seldom'], 100)).toBeUndefined();
    } finally {
      await fresh.close();
    }
  });
});
