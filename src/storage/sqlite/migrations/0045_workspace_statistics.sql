-- A workspace's statistics (GET /v3/workspaces/{w}/statistics): its messages and the model calls
-- made for it.
--
-- Messages: the sessions kept their own counts (0003), so a workspace's was a sum over its
-- sessions. A trigger now keeps it in the writing transaction, in a table of its own rather than
-- on the workspace's row (which PostgreSQL's writers of messages would then all queue behind: its
-- migration keeps one row per connection's stripe). SQLite's writers take turns, so one stripe
-- (0) per workspace. A message deleted with its workspace is not counted down: the workspace's
-- rows go with it.
CREATE TABLE message_counts (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  stripe INTEGER NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, stripe)
) WITHOUT ROWID;
INSERT INTO message_counts (workspace_id, stripe, n)
  SELECT workspace_id, 0, SUM(message_count) FROM sessions GROUP BY workspace_id HAVING SUM(message_count) <> 0;
CREATE TRIGGER message_counts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO message_counts (workspace_id, stripe, n) VALUES (NEW.workspace_id, 0, 1)
  ON CONFLICT (workspace_id, stripe) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER message_counts_delete AFTER DELETE ON messages BEGIN
  UPDATE message_counts SET n = n - 1 WHERE workspace_id = OLD.workspace_id AND stripe = 0;
END;

-- Model calls and tokens per workspace, module, model and hour (hours since 1970, UTC), as the
-- provider counted the tokens: each process adds what its calls used a moment after they end
-- (ModelUsageRecorder), several calls to a row. Hours past the kept days are purged with the
-- old work.
CREATE TABLE model_usage (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  hour INTEGER NOT NULL,
  module TEXT NOT NULL,
  model TEXT NOT NULL,
  calls INTEGER NOT NULL DEFAULT 0,
  failed_calls INTEGER NOT NULL DEFAULT 0,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, hour, module, model)
) WITHOUT ROWID;
CREATE INDEX model_usage_hour ON model_usage (hour);
