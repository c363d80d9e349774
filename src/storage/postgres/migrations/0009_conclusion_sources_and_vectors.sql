-- Where a conclusion came from: the ids of the messages an explicit conclusion was drawn from, or
-- of the conclusions a derived one rests on (jsonb array of strings; NULL when not recorded, as for
-- conclusions stored through the API). Filterable as `source_ids` with `contains`.
ALTER TABLE conclusions ADD COLUMN source_ids JSONB;
CREATE INDEX conclusions_source_ids ON conclusions USING GIN (source_ids jsonb_path_ops);

-- Facts about the store itself, one row each; `vector_dimensions` is the size of every stored
-- vector, fixed when the first vector is stored (see storage/postgres/postgres-vector-index.ts).
CREATE TABLE store_settings (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- pgvector: the server must have the extension installed (README, "SQLite or PostgreSQL").
CREATE EXTENSION IF NOT EXISTS vector;

-- One vector per conclusion, with the columns a search narrows by. `embedding` takes its fixed
-- size and an HNSW index (cosine, m 16, ef_construction 64) when the first vector is stored.
-- Vectors of soft-deleted conclusions are removed by a trigger, of purged ones by the cascade.
CREATE TABLE conclusion_vectors (
  conclusion_pk BIGINT PRIMARY KEY REFERENCES conclusions (pk) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  observer_id TEXT NOT NULL,
  observed_id TEXT NOT NULL,
  level TEXT NOT NULL,
  session_id TEXT,
  embedding vector NOT NULL
);
-- one collection (workspace, observer, observed): the scan for small collections
CREATE INDEX conclusion_vectors_collection ON conclusion_vectors (workspace_id, observer_id, observed_id);

-- One vector per chunk of a message (long messages are embedded in overlapping chunks).
CREATE TABLE message_vectors (
  message_pk BIGINT NOT NULL REFERENCES messages (pk) ON DELETE CASCADE,
  chunk INTEGER NOT NULL,
  workspace_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  peer_id TEXT NOT NULL,
  embedding vector NOT NULL,
  PRIMARY KEY (message_pk, chunk)
);
CREATE INDEX message_vectors_session ON message_vectors (workspace_id, session_id);
CREATE INDEX message_vectors_peer ON message_vectors (workspace_id, peer_id);

CREATE FUNCTION conclusion_vectors_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM conclusion_vectors WHERE conclusion_pk = NEW.pk;
  RETURN NULL;
END $$;
CREATE TRIGGER conclusions_forget_vector AFTER UPDATE OF deleted_at ON conclusions
  FOR EACH ROW WHEN (NEW.deleted_at IS NOT NULL) EXECUTE FUNCTION conclusion_vectors_forget();
