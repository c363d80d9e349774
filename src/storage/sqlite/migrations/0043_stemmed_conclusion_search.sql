-- Conclusions are searched by stems, as messages are (migration 0010): the index tokenizes with
-- FTS5's `porter` stemmer over unicode61, so "hikes", "hiked" and "hiking" are all indexed as
-- "hike" and a question finds the fact whatever form each uses. Stop words stay in the index;
-- the query side drops them (src/domain/memory/conclusion-search.ts). Ranking is no longer the
-- index's: BM25 is computed over the searched collection alone (its own statistics, never the
-- whole store's), the same way on both databases. The tokenizer of an FTS5 table cannot change,
-- so the index is made anew and rebuilt from the conclusions; the triggers of migration 0031
-- name the table, not its tokenizer, and keep working.
DROP TABLE conclusions_fts;
CREATE VIRTUAL TABLE conclusions_fts USING fts5(
  content, search_scope,
  content = 'conclusions', content_rowid = 'pk', tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO conclusions_fts (conclusions_fts) VALUES ('rebuild');
