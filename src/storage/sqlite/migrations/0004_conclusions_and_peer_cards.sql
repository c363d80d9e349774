-- Conclusions (v2: observations): what an observer peer has concluded about an observed peer.
-- `id` is the public 21-character id; `pk` breaks created_at ties and keys the FTS index.
-- Deletion is soft (`deleted_at`); purges of peers and sessions remove rows through the cascades.
-- `metadata` is internal metadata (filterable as `metadata`, never returned).
-- A later migration can add a nullable embedding column (BLOB here, vector on PostgreSQL):
-- rows without one still answer list and full-text queries.
CREATE TABLE conclusions (
  pk INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  observer_id TEXT NOT NULL,
  observed_id TEXT NOT NULL,
  session_id TEXT,
  content TEXT NOT NULL,
  level TEXT NOT NULL DEFAULT 'explicit' CHECK (level IN ('explicit', 'deductive', 'inductive', 'contradiction')),
  times_derived INTEGER NOT NULL DEFAULT 1,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  deleted_at INTEGER,
  FOREIGN KEY (workspace_id, observer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE,
  FOREIGN KEY (workspace_id, observed_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE,
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE
);
-- the workspace list, newest first
CREATE INDEX conclusions_workspace_created ON conclusions (workspace_id, created_at, pk) WHERE deleted_at IS NULL;
-- one observer's conclusions about one peer (representations, queries)
CREATE INDEX conclusions_pair_created ON conclusions (workspace_id, observer_id, observed_id, created_at, pk) WHERE deleted_at IS NULL;
-- the cascades from peers and sessions
CREATE INDEX conclusions_observed ON conclusions (workspace_id, observed_id);
CREATE INDEX conclusions_session ON conclusions (workspace_id, session_id);

-- Full-text index over conclusion content (external content: the text lives only in conclusions).
CREATE VIRTUAL TABLE conclusions_fts USING fts5(content, content = 'conclusions', content_rowid = 'pk', tokenize = 'unicode61 remove_diacritics 2');
CREATE TRIGGER conclusions_fts_insert AFTER INSERT ON conclusions BEGIN
  INSERT INTO conclusions_fts (rowid, content) VALUES (NEW.pk, NEW.content);
END;
CREATE TRIGGER conclusions_fts_delete AFTER DELETE ON conclusions BEGIN
  INSERT INTO conclusions_fts (conclusions_fts, rowid, content) VALUES ('delete', OLD.pk, OLD.content);
END;
CREATE TRIGGER conclusions_fts_update AFTER UPDATE OF content ON conclusions BEGIN
  INSERT INTO conclusions_fts (conclusions_fts, rowid, content) VALUES ('delete', OLD.pk, OLD.content);
  INSERT INTO conclusions_fts (rowid, content) VALUES (NEW.pk, NEW.content);
END;

-- Peer cards: per (observer, target) a JSON array of strings. target_id equals observer_id for
-- the observer's own card; the target need not exist as a peer.
CREATE TABLE peer_cards (
  workspace_id TEXT NOT NULL,
  observer_id TEXT NOT NULL,
  target_id TEXT NOT NULL,
  card TEXT NOT NULL DEFAULT '[]',
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, observer_id, target_id),
  FOREIGN KEY (workspace_id, observer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE
);
