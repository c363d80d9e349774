-- Conclusions (v2: observations): what an observer peer has concluded about an observed peer.
-- `id` is the public 21-character id; `pk` breaks created_at ties.
-- Deletion is soft (`deleted_at`); purges of peers and sessions remove rows through the cascades.
-- `metadata` is internal metadata (filterable as `metadata`, never returned).
-- A later migration can add a nullable embedding column (pgvector `vector`, BLOB on SQLite):
-- rows without one still answer list and full-text queries.
CREATE TABLE conclusions (
  pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  observer_id TEXT NOT NULL,
  observed_id TEXT NOT NULL,
  session_id TEXT,
  content TEXT NOT NULL,
  level TEXT NOT NULL DEFAULT 'explicit' CHECK (level IN ('explicit', 'deductive', 'inductive', 'contradiction')),
  times_derived INTEGER NOT NULL DEFAULT 1,
  metadata JSONB NOT NULL DEFAULT '{}',
  created_at TIMESTAMPTZ NOT NULL,
  deleted_at TIMESTAMPTZ,
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
CREATE INDEX conclusions_metadata ON conclusions USING GIN (metadata jsonb_path_ops);

-- Full-text index over conclusion content; queries use the same expression.
CREATE INDEX conclusions_search ON conclusions USING GIN (to_tsvector('simple', content));

-- Peer cards: per (observer, target) a JSON array of strings. target_id equals observer_id for
-- the observer's own card; the target need not exist as a peer.
CREATE TABLE peer_cards (
  workspace_id TEXT NOT NULL,
  observer_id TEXT NOT NULL,
  target_id TEXT NOT NULL,
  card JSONB NOT NULL DEFAULT '[]',
  updated_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (workspace_id, observer_id, target_id),
  FOREIGN KEY (workspace_id, observer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE
);
