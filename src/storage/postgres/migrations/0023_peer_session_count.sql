-- The total of a page of a peer's sessions counted the peer's memberships in an index: one
-- entry per membership, for an assistant in every session. The trigger that bumps a peer's
-- sessions_version when a membership comes or goes (0016) now keeps its count too.
ALTER TABLE peers ADD COLUMN session_count BIGINT NOT NULL DEFAULT 0;
UPDATE peers p SET session_count = c.n
  FROM (SELECT workspace_id, peer_id, COUNT(*) AS n FROM session_peers GROUP BY workspace_id, peer_id) c
  WHERE p.workspace_id = c.workspace_id AND p.id = c.peer_id;

CREATE OR REPLACE FUNCTION engram_peer_sessions_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  moved boolean := TG_OP = 'UPDATE' AND (NEW.workspace_id, NEW.peer_id) IS DISTINCT FROM (OLD.workspace_id, OLD.peer_id);
BEGIN
  IF TG_OP = 'DELETE' OR moved THEN
    UPDATE peers SET sessions_version = sessions_version + 1, session_count = session_count - 1 WHERE workspace_id = OLD.workspace_id AND id = OLD.peer_id;
  ELSIF TG_OP = 'UPDATE' THEN
    UPDATE peers SET sessions_version = sessions_version + 1 WHERE workspace_id = OLD.workspace_id AND id = OLD.peer_id;
  END IF;
  IF TG_OP = 'INSERT' OR moved THEN
    UPDATE peers SET sessions_version = sessions_version + 1, session_count = session_count + 1 WHERE workspace_id = NEW.workspace_id AND id = NEW.peer_id;
  END IF;
  RETURN NULL;
END $$;
