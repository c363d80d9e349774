-- A session's change bumps its members' sessions_version (0016). The members were named by two
-- IN subqueries joined with OR, which PostgreSQL plans as a scan of every peer of the store, each
-- checked against both (1 ms at 10,000 peers, on every session update and deactivation, growing
-- with the table). As one UNION of the two member lists, the peers are read by key.
CREATE OR REPLACE FUNCTION engram_session_members_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM peers p
  WHERE (p.workspace_id, p.id) IN (
    SELECT m.workspace_id, m.peer_id FROM session_peers m WHERE m.workspace_id = OLD.workspace_id AND m.session_id = OLD.id
    UNION
    SELECT m.workspace_id, m.peer_id FROM session_peers m WHERE m.workspace_id = NEW.workspace_id AND m.session_id = NEW.id)
  ORDER BY p.workspace_id, p.id FOR NO KEY UPDATE;
  UPDATE peers p SET sessions_version = sessions_version + 1
  WHERE (p.workspace_id, p.id) IN (
    SELECT m.workspace_id, m.peer_id FROM session_peers m WHERE m.workspace_id = OLD.workspace_id AND m.session_id = OLD.id
    UNION
    SELECT m.workspace_id, m.peer_id FROM session_peers m WHERE m.workspace_id = NEW.workspace_id AND m.session_id = NEW.id);
  RETURN NULL;
END $$;
