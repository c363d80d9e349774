-- Search by stems: the full-text index tokenizes with FTS5's `porter` stemmer over unicode61,
-- so "groups", "grouped" and "grouping" are all indexed as "group" and a question finds the
-- message whatever form each uses. Stop words stay in the index (a query of stop words alone
-- searches for them); the query side drops them (src/domain/messages/query-terms.ts).
-- The tokenizer of an FTS5 table cannot change, so the index is made anew and rebuilt from
-- the messages: 5.3 s for 1,000,000 messages (docs/decisions/0021-search.md). The triggers
-- of migration 0007 name the table, not its tokenizer, and keep working.
DROP TABLE messages_fts;
CREATE VIRTUAL TABLE messages_fts USING fts5(
  content, search_scope,
  content = 'messages', content_rowid = 'pk', tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
