-- A workspace's statistics (GET /v3/workspaces/{w}/statistics): its messages and the model calls
-- made for it.
--
-- Messages: the sessions kept their own counts (0003), so a workspace's was a sum over its
-- sessions. Triggers now keep it in the writing transaction, in a table of its own rather than on
-- the workspace's row, which every writer of the workspace's messages would then queue behind
-- until its commit. Each connection counts into its own stripe of the workspace (its backend's
-- id modulo 16), so writers on different connections rarely wait for each other, and a
-- transaction takes one count row per workspace it writes (no lock cycle between two writers of
-- one workspace). A delete counts down in the deleting connection's stripe: a stripe may be
-- negative, their sum is the count. Messages deleted with their workspace leave nothing to
-- count in (the workspace's rows go with it).
LOCK TABLE messages IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE message_counts (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  stripe SMALLINT NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, stripe)
);
INSERT INTO message_counts (workspace_id, stripe, n)
  SELECT workspace_id, 0, SUM(message_count) FROM sessions GROUP BY workspace_id HAVING SUM(message_count) <> 0;

-- Once per statement, from its transition table (a 100-message batch writes its row once).
CREATE FUNCTION engram_message_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO message_counts (workspace_id, stripe, n)
    SELECT workspace_id, pg_backend_pid() % 16, COUNT(*) FROM inserted GROUP BY workspace_id ORDER BY workspace_id
  ON CONFLICT (workspace_id, stripe) DO UPDATE SET n = message_counts.n + excluded.n;
  RETURN NULL;
END $$;
CREATE TRIGGER message_counts_insert AFTER INSERT ON messages
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION engram_message_counts_inserted();

CREATE FUNCTION engram_message_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO message_counts (workspace_id, stripe, n)
    SELECT d.workspace_id, pg_backend_pid() % 16, -COUNT(*) FROM deleted d
    WHERE EXISTS (SELECT 1 FROM workspaces w WHERE w.id = d.workspace_id)
    GROUP BY d.workspace_id ORDER BY d.workspace_id
  ON CONFLICT (workspace_id, stripe) DO UPDATE SET n = message_counts.n + excluded.n;
  RETURN NULL;
END $$;
CREATE TRIGGER message_counts_delete AFTER DELETE ON messages
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION engram_message_counts_deleted();

-- Model calls and tokens per workspace, module, model and hour (hours since 1970, UTC), as the
-- provider counted the tokens: each process adds what its calls used a moment after they end
-- (ModelUsageRecorder), several calls to a row. Hours past the kept days are purged with the
-- old work.
CREATE TABLE model_usage (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  hour BIGINT NOT NULL,
  module TEXT NOT NULL,
  model TEXT NOT NULL,
  calls BIGINT NOT NULL DEFAULT 0,
  failed_calls BIGINT NOT NULL DEFAULT 0,
  input_tokens BIGINT NOT NULL DEFAULT 0,
  output_tokens BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, hour, module, model)
);
CREATE INDEX model_usage_hour ON model_usage (hour);
