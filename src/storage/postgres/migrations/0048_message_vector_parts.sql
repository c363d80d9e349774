-- Message vectors in parts (decision 0043). Inserting a vector into pgvector's HNSW graph one
-- statement at a time costs three to five times what building the graph over the same rows at
-- once does, and under sustained load those inserts took most of the database's time. The
-- table is now partitioned by range of the message's key: the newest vectors land in an open
-- part with no HNSW index (searched exactly, while it is small), and the worker's upkeep seals
-- them into a part of their own whose graph is built in one CREATE INDEX, then merges parts as
-- they add up (message-vector-parts.ts). A search reads the parent table: the
-- planner merges the parts' index scans in distance order.
--
-- The vectors present become the first sealed part, with the HNSW index they have, if any.
-- The foreign key to messages goes: attaching a part with one would lock `messages` against
-- writes while the part's rows were checked. A statement-level trigger on messages deletes
-- their vectors instead, and the vectors' insert locks its messages (FOR KEY SHARE), so a
-- message deleted meanwhile cannot leave a vector behind.
ALTER TABLE message_vectors RENAME TO message_vectors_first;
ALTER TABLE message_vectors_first RENAME CONSTRAINT message_vectors_pkey TO message_vectors_first_pkey;
ALTER INDEX message_vectors_session RENAME TO message_vectors_first_session;
ALTER INDEX message_vectors_peer RENAME TO message_vectors_first_peer;
ALTER INDEX IF EXISTS message_vectors_hnsw RENAME TO message_vectors_first_hnsw;
ALTER TABLE message_vectors_first DROP CONSTRAINT message_vectors_message_pk_fkey;

-- the same columns (the embedding's size too, if the first vector fixed it)
CREATE TABLE message_vectors (LIKE message_vectors_first INCLUDING DEFAULTS, PRIMARY KEY (message_pk, chunk)) PARTITION BY RANGE (message_pk);
CREATE INDEX message_vectors_session ON message_vectors (workspace_id, session_id);
CREATE INDEX message_vectors_peer ON message_vectors (workspace_id, peer_id);
CREATE TABLE message_vectors_open PARTITION OF message_vectors DEFAULT;

-- The sealed parts, in key order: each holds the vectors of messages with keys in [lo, hi)
-- (lo null: from the first) and has its own HNSW index. `level` follows its size (levelOf).
CREATE TABLE message_vector_parts (
  name TEXT PRIMARY KEY,
  lo BIGINT,
  hi BIGINT NOT NULL UNIQUE,
  level INTEGER NOT NULL,
  row_count BIGINT NOT NULL,
  built_at TIMESTAMPTZ NOT NULL
);

DO $$
DECLARE
  top BIGINT;
  n BIGINT;
BEGIN
  SELECT max(message_pk), count(*) INTO top, n FROM message_vectors_first;
  IF top IS NULL THEN
    DROP TABLE message_vectors_first;
  ELSE
    -- the check lets the attach skip its scan of the rows
    EXECUTE format('ALTER TABLE message_vectors_first ADD CONSTRAINT message_vectors_first_range CHECK (message_pk < %s)', top + 1);
    EXECUTE format('ALTER TABLE message_vectors ATTACH PARTITION message_vectors_first FOR VALUES FROM (MINVALUE) TO (%s)', top + 1);
    -- its level as if it had been built by merges of sealed parts (5,000 vectors each, 4 a merge)
    INSERT INTO message_vector_parts (name, lo, hi, level, row_count, built_at)
      VALUES ('message_vectors_first', NULL, top + 1, GREATEST(0, floor(log(4, GREATEST(n, 1) / 5000.0)))::INTEGER, n, now());
  END IF;
END $$;

CREATE FUNCTION engram_message_vectors_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- as an array, so that each part is read through its key (and parts outside the keys skipped)
  DELETE FROM message_vectors WHERE message_pk = ANY (ARRAY(SELECT pk FROM gone));
  RETURN NULL;
END $$;
CREATE TRIGGER messages_forget_vectors AFTER DELETE ON messages REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION engram_message_vectors_forget();
