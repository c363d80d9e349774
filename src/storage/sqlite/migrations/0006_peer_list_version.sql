-- peers_version changes whenever a peer of the workspace is added, changed or removed, so a
-- cached page of peers is known to be current with one point lookup.
ALTER TABLE workspaces ADD COLUMN peers_version INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER peers_count_insert;
DROP TRIGGER peers_count_delete;
CREATE TRIGGER peers_count_insert AFTER INSERT ON peers BEGIN
  UPDATE workspaces SET peer_count = peer_count + 1, peers_version = peers_version + 1 WHERE id = NEW.workspace_id;
END;
CREATE TRIGGER peers_count_delete AFTER DELETE ON peers BEGIN
  UPDATE workspaces SET peer_count = peer_count - 1, peers_version = peers_version + 1 WHERE id = OLD.workspace_id;
END;
CREATE TRIGGER peers_version_update AFTER UPDATE ON peers BEGIN
  UPDATE workspaces SET peers_version = peers_version + 1 WHERE id = NEW.workspace_id;
END;

-- "sessions of a peer" must not scan every membership of the workspace
DROP INDEX session_peers_peer;
CREATE INDEX session_peers_peer ON session_peers (workspace_id, peer_id, session_id);
