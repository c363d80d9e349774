-- Conclusions are searched by stems, as messages are (migration 0010): the words' index is over
-- `engram_porter` (Porter's stemmer, as SQLite's FTS5 `porter` tokenizer), no longer `simple`,
-- so both databases find a conclusion by the same terms. Ranking is no longer the database's:
-- BM25 is computed over the searched collection alone, the same way on both databases
-- (src/domain/memory/conclusion-search.ts).
DROP INDEX IF EXISTS conclusions_search;
-- with the small pending list of every GIN index of a written table (migration 0036)
CREATE INDEX conclusions_search_stems ON conclusions USING GIN (to_tsvector('engram_porter', content)) WITH (gin_pending_list_limit = 256);
