-- peers_version changes whenever a peer of the workspace is added, changed or removed, so a
-- cached page of peers is known to be current with one point lookup.
ALTER TABLE workspaces ADD COLUMN peers_version BIGINT NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION engram_count_peers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE workspaces SET peer_count = peer_count + 1, peers_version = peers_version + 1 WHERE id = NEW.workspace_id;
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE workspaces SET peer_count = peer_count - 1, peers_version = peers_version + 1 WHERE id = OLD.workspace_id;
  ELSE
    UPDATE workspaces SET peers_version = peers_version + 1 WHERE id = NEW.workspace_id;
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER peers_count ON peers;
CREATE TRIGGER peers_count AFTER INSERT OR DELETE OR UPDATE ON peers FOR EACH ROW EXECUTE FUNCTION engram_count_peers();

-- "sessions of a peer" must not scan every membership of the workspace
DROP INDEX session_peers_peer;
CREATE INDEX session_peers_peer ON session_peers (workspace_id, peer_id, session_id);
