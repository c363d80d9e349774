-- The v1 generation on the same store (contract-v1 §5): a v1 app is a workspace, a v1 user is a
-- peer, a v1 session is a session. v1 addresses them by a stable 21-character id kept in `v1_id`
-- (app `name` = workspace id, user `name` = peer id). Engram writes a nanoid there for rows
-- created through v1; every other row gets 21 random hex characters (a subset of the nanoid
-- alphabet, so it passes the v1 id rule `^[A-Za-z0-9_-]{21}$`) from the backfill or the triggers.
-- SQLite cannot add a column with a non-constant default, hence the AFTER INSERT triggers.

ALTER TABLE workspaces ADD COLUMN v1_id TEXT;
UPDATE workspaces SET v1_id = substr(lower(hex(randomblob(11))), 1, 21) WHERE v1_id IS NULL;
CREATE UNIQUE INDEX workspaces_v1_id ON workspaces (v1_id);
CREATE TRIGGER workspaces_v1_id AFTER INSERT ON workspaces WHEN NEW.v1_id IS NULL BEGIN
  UPDATE workspaces SET v1_id = substr(lower(hex(randomblob(11))), 1, 21) WHERE pk = NEW.pk;
END;

ALTER TABLE peers ADD COLUMN v1_id TEXT;
UPDATE peers SET v1_id = substr(lower(hex(randomblob(11))), 1, 21) WHERE v1_id IS NULL;
CREATE UNIQUE INDEX peers_v1_id ON peers (v1_id);
CREATE TRIGGER peers_v1_id AFTER INSERT ON peers WHEN NEW.v1_id IS NULL BEGIN
  UPDATE peers SET v1_id = substr(lower(hex(randomblob(11))), 1, 21) WHERE pk = NEW.pk;
END;

-- Sessions created through v1 use the nanoid as the session id too (v1 id = session id).
ALTER TABLE sessions ADD COLUMN v1_id TEXT;
UPDATE sessions SET v1_id = substr(lower(hex(randomblob(11))), 1, 21) WHERE v1_id IS NULL;
CREATE UNIQUE INDEX sessions_v1_id ON sessions (v1_id);
CREATE TRIGGER sessions_v1_id AFTER INSERT ON sessions WHEN NEW.v1_id IS NULL BEGIN
  UPDATE sessions SET v1_id = substr(lower(hex(randomblob(11))), 1, 21) WHERE pk = NEW.pk;
END;

-- Metamessages are a v1 resource with no workspace-generation counterpart (contract-v1 §1.0).
-- `peer_id` is the owning user's peer; `session_id` holds the session's id (not its v1 id).
CREATE TABLE metamessages (
  pk INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  peer_id TEXT NOT NULL,
  session_id TEXT,
  message_id TEXT REFERENCES messages (id) ON DELETE SET NULL,
  label TEXT NOT NULL,
  content TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  CHECK (message_id IS NULL OR session_id IS NOT NULL),
  FOREIGN KEY (workspace_id, peer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE,
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX metamessages_peer ON metamessages (workspace_id, peer_id, pk);
CREATE INDEX metamessages_session ON metamessages (workspace_id, session_id);
CREATE INDEX metamessages_message ON metamessages (message_id);
