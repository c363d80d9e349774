-- Search by stems: the stored search_vector holds each message's words reduced by Martin
-- Porter's stemmer (Snowball's `porter`, the algorithm SQLite's FTS5 `porter` tokenizer uses,
-- so both databases find a message by the same terms), without a stop-word list: a query of
-- stop words alone still finds the messages holding them; the query side drops them when the
-- query has other words (src/domain/messages/query-terms.ts). The built-in `english`
-- configuration is not used: it stems with Porter's later algorithm (Porter2), which differs
-- from FTS5's for many words, and leaves stop words out of the index.
-- Replacing the generated column rewrites the table and rebuilds the GIN index: 17.9 s on
-- 1,000,000 messages, with the table locked (docs/decisions/0021-search.md).
CREATE TEXT SEARCH DICTIONARY engram_porter_stem (TEMPLATE = snowball, LANGUAGE = porter);
CREATE TEXT SEARCH CONFIGURATION engram_porter (COPY = simple);
ALTER TEXT SEARCH CONFIGURATION engram_porter
  ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, hword_part, hword_asciipart, numhword
  WITH engram_porter_stem;

ALTER TABLE messages DROP COLUMN search_vector;
ALTER TABLE messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (to_tsvector('engram_porter', content)) STORED;
ALTER TABLE messages ALTER COLUMN search_vector SET STATISTICS 1000;
CREATE INDEX messages_search_vector ON messages USING GIN (search_vector);
ANALYZE messages;
