-- A collection's full-text search (one observer's conclusions about one peer) matched the words
-- in every conclusion of the store, ranked all of those matches and then dropped the ones of
-- other collections: 40 ms a search of a collection of 50 among 140,000 conclusions, growing
-- with the store (bench/conclusion-search.ts). Every conclusion is now indexed with one more
-- token naming its collection (hex of the ids, so any id is one token; as messages' scopes in
-- migration 0007), and a search matches that token and the words together inside FTS5.
-- `search_scope` is a virtual generated column: computed on read, never stored.
ALTER TABLE conclusions ADD COLUMN search_scope TEXT GENERATED ALWAYS AS (
  'c' || hex(workspace_id) || 'x' || hex(observer_id) || 'x' || hex(observed_id)
) VIRTUAL;

DROP TRIGGER conclusions_fts_insert;
DROP TRIGGER conclusions_fts_delete;
DROP TRIGGER conclusions_fts_update;
DROP TABLE conclusions_fts;

CREATE VIRTUAL TABLE conclusions_fts USING fts5(
  content, search_scope,
  content = 'conclusions', content_rowid = 'pk', tokenize = 'unicode61 remove_diacritics 2'
);
-- the rank is the words' BM25 alone: the scope token, in every match, weighs nothing
INSERT INTO conclusions_fts (conclusions_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0)');
INSERT INTO conclusions_fts (conclusions_fts) VALUES ('rebuild');

CREATE TRIGGER conclusions_fts_insert AFTER INSERT ON conclusions BEGIN
  INSERT INTO conclusions_fts (rowid, content, search_scope) VALUES (NEW.pk, NEW.content, NEW.search_scope);
END;
CREATE TRIGGER conclusions_fts_delete AFTER DELETE ON conclusions BEGIN
  INSERT INTO conclusions_fts (conclusions_fts, rowid, content, search_scope) VALUES ('delete', OLD.pk, OLD.content, OLD.search_scope);
END;
CREATE TRIGGER conclusions_fts_update AFTER UPDATE OF content, workspace_id, observer_id, observed_id ON conclusions BEGIN
  INSERT INTO conclusions_fts (conclusions_fts, rowid, content, search_scope) VALUES ('delete', OLD.pk, OLD.content, OLD.search_scope);
  INSERT INTO conclusions_fts (rowid, content, search_scope) VALUES (NEW.pk, NEW.content, NEW.search_scope);
END;
