-- Deleting a peer (docs/forgetting.md): the request marks the peer (`deleting_at`) and a job
-- removes its data in short transactions, then the row. A marked peer is gone from every read and
-- refused by every write that names it. The mark takes it out of the workspace's peer counts at
-- once, so the delete of its row at the end must not count it out a second time.
ALTER TABLE peers ADD COLUMN deleting_at INTEGER;
DROP TRIGGER peers_count_delete;
CREATE TRIGGER peers_count_delete AFTER DELETE ON peers BEGIN
  UPDATE workspaces SET
    peer_count = peer_count - (OLD.kind IS NULL AND OLD.deleting_at IS NULL),
    scope_count = scope_count - (OLD.kind IS NOT NULL AND OLD.deleting_at IS NULL),
    peers_version = peers_version + 1
  WHERE id = OLD.workspace_id;
END;

-- what the purge walks: a peer's conclusions as observer (soft-deleted ones too), the copies of a
-- conclusion, the cards about a peer
CREATE INDEX conclusions_observer ON conclusions (workspace_id, observer_id);
CREATE INDEX conclusions_copied_from ON conclusions (workspace_id, copied_from) WHERE copied_from IS NOT NULL;
CREATE INDEX peer_cards_target ON peer_cards (workspace_id, target_id);

-- A forget's preview: the exact conclusions (and messages) it would remove, redeemed once by the
-- token whose SHA-256 is `token_hash`, before `expires_at`. `request_hash` binds it to the request.
CREATE TABLE forget_previews (
  token_hash TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  request_hash TEXT NOT NULL,
  conclusion_ids TEXT NOT NULL,
  message_ids TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER
);
CREATE INDEX forget_previews_expiry ON forget_previews (expires_at);

-- Each forget carried out: who (the key's scope), when, whose memory and how much; never what.
CREATE TABLE forget_records (
  pk INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  observed_id TEXT NOT NULL,
  observer_id TEXT,
  actor TEXT NOT NULL,
  conclusions_removed INTEGER NOT NULL,
  messages_removed INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX forget_records_workspace ON forget_records (workspace_id, created_at, pk);
