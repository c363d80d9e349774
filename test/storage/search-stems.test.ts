import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildVocabulary } from '../../bench/corpus.js';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { fold, stem, TOKEN } from '../../src/domain/search/query-terms.js';
import { DIALECT, TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

/**
 * The ranking counts a query's terms in each message with the stemmer of query-terms.ts; the
 * index finds the messages with its own (FTS5's porter tokenizer, PostgreSQL's engram_porter
 * configuration). Both must give the same terms, or a found message would score nothing.
 */
describe('the search index and the ranking stem alike', () => {
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase(TEST_DATABASE_URL);
  });
  afterAll(() => database.driver.close());

  const words = [
    ...buildVocabulary(4000).filter((word) => /^[A-Za-z]+$/.test(word)),
    ...'running ponies generalization happily relational conditional possibility caresses agreed sized hopping falling filing'.split(' '),
    ...'x2s abc123ing 3ds h2os yes years a an it'.split(' '),
  ];

  it('for every word of a 4,000-word English vocabulary and a few tricky forms', async () => {
    const expected = words.map((word) => stem(fold(word).match(TOKEN)![0]));
    let indexed: string[];
    if (DIALECT === 'sqlite') {
      const ws = uniqueId();
      const now = new Date();
      await database.store.transaction(async (tx) => {
        await tx.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, now);
        await tx.sessions.createIfAbsent(ws, { id: 's', metadata: {}, configuration: {} }, now);
        await tx.peers.ensure(ws, ['p'], now);
        await tx.messages.insert([{ id: uniqueId('m'), workspaceId: ws, sessionId: 's', peerId: 'p', content: words.join(' '), metadata: {}, tokenCount: 0, createdAt: now }]);
      });
      await database.driver.run(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.search_terms USING fts5vocab(main, messages_fts, instance)`);
      const rows = await database.driver.all<{ term: string; offset: number }>(
        `SELECT term, "offset" FROM temp.search_terms WHERE doc = (SELECT pk FROM messages WHERE workspace_id = ?) AND col = 'content' ORDER BY "offset"`,
        [ws],
      );
      indexed = rows.map((row) => row.term);
    } else {
      const rows = await database.driver.all<{ lexeme: string; positions: number[] }>(
        `SELECT lexeme, positions FROM unnest(to_tsvector('engram_porter', ?))`,
        [words.join(' ')],
      );
      indexed = [];
      for (const row of rows) for (const position of row.positions) indexed[position - 1] = row.lexeme;
    }
    const differing = words.flatMap((word, at) => (indexed[at] === expected[at] ? [] : [`${word}: ${indexed[at]} / ${expected[at]}`]));
    expect(indexed).toHaveLength(words.length);
    // Snowball's porter follows Porter's paper; FTS5 and the `stemmer` package follow his C
    // program, which also stems -logi to -log and -bli to -ble, and leaves two-letter words
    // alone (docs/decisions/0021-search.md). Nothing else may differ.
    const known = (word: string) => DIALECT === 'postgres' && (word.length <= 2 || /(log|bl)(y|ies)$/i.test(word));
    expect(differing.filter((line) => !known(line.slice(0, line.indexOf(':'))))).toEqual([]);
    if (DIALECT === 'postgres') expect(differing.length).toBeLessThan(10);
  });
});
