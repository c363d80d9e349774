-- The v1 generation on the same store (contract-v1 §5): a v1 app is a workspace, a v1 user is a
-- peer, a v1 session is a session. v1 addresses them by a stable 21-character id kept in `v1_id`
-- (app `name` = workspace id, user `name` = peer id). Engram writes a nanoid there for rows
-- created through v1; every other row gets 21 random hex characters (a subset of the nanoid
-- alphabet, so it passes the v1 id rule `^[A-Za-z0-9_-]{21}$`) from the backfill or the default.

ALTER TABLE workspaces ADD COLUMN v1_id TEXT;
UPDATE workspaces SET v1_id = substr(replace(gen_random_uuid()::text, '-', ''), 1, 21) WHERE v1_id IS NULL;
ALTER TABLE workspaces ALTER COLUMN v1_id SET DEFAULT substr(replace(gen_random_uuid()::text, '-', ''), 1, 21);
ALTER TABLE workspaces ALTER COLUMN v1_id SET NOT NULL;
CREATE UNIQUE INDEX workspaces_v1_id ON workspaces (v1_id);

ALTER TABLE peers ADD COLUMN v1_id TEXT;
UPDATE peers SET v1_id = substr(replace(gen_random_uuid()::text, '-', ''), 1, 21) WHERE v1_id IS NULL;
ALTER TABLE peers ALTER COLUMN v1_id SET DEFAULT substr(replace(gen_random_uuid()::text, '-', ''), 1, 21);
ALTER TABLE peers ALTER COLUMN v1_id SET NOT NULL;
CREATE UNIQUE INDEX peers_v1_id ON peers (v1_id);

-- Sessions created through v1 use the nanoid as the session id too (v1 id = session id).
ALTER TABLE sessions ADD COLUMN v1_id TEXT;
UPDATE sessions SET v1_id = substr(replace(gen_random_uuid()::text, '-', ''), 1, 21) WHERE v1_id IS NULL;
ALTER TABLE sessions ALTER COLUMN v1_id SET DEFAULT substr(replace(gen_random_uuid()::text, '-', ''), 1, 21);
ALTER TABLE sessions ALTER COLUMN v1_id SET NOT NULL;
CREATE UNIQUE INDEX sessions_v1_id ON sessions (v1_id);

-- The foreign keys on workspace and peer ids become DEFERRABLE (still checked immediately unless
-- a transaction says SET CONSTRAINTS ... DEFERRED), so a transaction changing such an id can
-- defer the checks to commit as SQLite's PRAGMA defer_foreign_keys allows. Nothing changes ids
-- today (v1 refuses to rename apps and users); cascading deletes stay immediate.
ALTER TABLE peers ALTER CONSTRAINT peers_workspace_id_fkey DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE sessions ALTER CONSTRAINT sessions_workspace_id_fkey DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE session_peers ALTER CONSTRAINT session_peers_workspace_id_session_id_fkey DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE session_peers ALTER CONSTRAINT session_peers_workspace_id_peer_id_fkey DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE webhook_endpoints ALTER CONSTRAINT webhook_endpoints_workspace_id_fkey DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE messages ALTER CONSTRAINT messages_workspace_id_session_id_fkey DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE messages ALTER CONSTRAINT messages_workspace_id_peer_id_fkey DEFERRABLE INITIALLY IMMEDIATE;

-- Metamessages are a v1 resource with no workspace-generation counterpart (contract-v1 §1.0).
-- `peer_id` is the owning user's peer; `session_id` holds the session's id (not its v1 id).
CREATE TABLE metamessages (
  pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  peer_id TEXT NOT NULL,
  session_id TEXT,
  message_id TEXT REFERENCES messages (id) ON DELETE SET NULL DEFERRABLE INITIALLY IMMEDIATE,
  label TEXT NOT NULL,
  content TEXT NOT NULL,
  metadata JSONB NOT NULL DEFAULT '{}',
  created_at TIMESTAMPTZ NOT NULL,
  CHECK (message_id IS NULL OR session_id IS NOT NULL),
  FOREIGN KEY (workspace_id, peer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE DEFERRABLE INITIALLY IMMEDIATE,
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE DEFERRABLE INITIALLY IMMEDIATE
);
CREATE INDEX metamessages_peer ON metamessages (workspace_id, peer_id, pk);
CREATE INDEX metamessages_session ON metamessages (workspace_id, session_id);
CREATE INDEX metamessages_message ON metamessages (message_id);
CREATE INDEX metamessages_metadata ON metamessages USING GIN (metadata jsonb_path_ops);
