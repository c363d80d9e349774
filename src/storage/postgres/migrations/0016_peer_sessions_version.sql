-- The version of "the sessions of a peer" moves from the workspace to each peer: a membership
-- added or removed bumps only that peer, and a session changed or removed bumps only its
-- members, so one peer's change leaves the other peers' cached pages valid. Writers adding peers
-- to sessions of one workspace no longer all update the same workspace row.
ALTER TABLE peers ADD COLUMN sessions_version BIGINT NOT NULL DEFAULT 0;

DROP TRIGGER session_peers_version ON session_peers;
DROP TRIGGER sessions_version ON sessions;
DROP FUNCTION engram_sessions_version();
ALTER TABLE workspaces DROP COLUMN sessions_version;

-- bumping a peer's sessions_version is not a change of the peer: the peers list stays cached
DROP TRIGGER peers_count ON peers;
CREATE TRIGGER peers_count AFTER INSERT OR DELETE OR UPDATE OF workspace_id, id, metadata, configuration, created_at, v1_id ON peers
  FOR EACH ROW EXECUTE FUNCTION engram_count_peers();

CREATE FUNCTION engram_peer_sessions_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    UPDATE peers SET sessions_version = sessions_version + 1 WHERE workspace_id = OLD.workspace_id AND id = OLD.peer_id;
  END IF;
  IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND (NEW.workspace_id, NEW.peer_id) IS DISTINCT FROM (OLD.workspace_id, OLD.peer_id)) THEN
    UPDATE peers SET sessions_version = sessions_version + 1 WHERE workspace_id = NEW.workspace_id AND id = NEW.peer_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER session_peers_version AFTER INSERT OR DELETE OR UPDATE OF workspace_id, session_id, peer_id ON session_peers
  FOR EACH ROW EXECUTE FUNCTION engram_peer_sessions_version();

-- A session's members, under its old id and its new one, locked in id order first so that two
-- transactions bumping overlapping members wait for each other instead of deadlocking. A deleted
-- session's memberships go with it (ON DELETE CASCADE), which fires the membership trigger above.
CREATE FUNCTION engram_session_members_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM peers p
  WHERE (p.workspace_id = OLD.workspace_id AND p.id IN (SELECT m.peer_id FROM session_peers m WHERE m.workspace_id = OLD.workspace_id AND m.session_id = OLD.id))
     OR (p.workspace_id = NEW.workspace_id AND p.id IN (SELECT m.peer_id FROM session_peers m WHERE m.workspace_id = NEW.workspace_id AND m.session_id = NEW.id))
  ORDER BY p.workspace_id, p.id FOR NO KEY UPDATE;
  UPDATE peers p SET sessions_version = sessions_version + 1
  WHERE (p.workspace_id = OLD.workspace_id AND p.id IN (SELECT m.peer_id FROM session_peers m WHERE m.workspace_id = OLD.workspace_id AND m.session_id = OLD.id))
     OR (p.workspace_id = NEW.workspace_id AND p.id IN (SELECT m.peer_id FROM session_peers m WHERE m.workspace_id = NEW.workspace_id AND m.session_id = NEW.id));
  RETURN NULL;
END $$;
CREATE TRIGGER sessions_version AFTER UPDATE OF workspace_id, id, is_active, metadata, configuration, created_at ON sessions
  FOR EACH ROW EXECUTE FUNCTION engram_session_members_version();
