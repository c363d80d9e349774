-- The version of "the sessions of a peer" moves from the workspace to each peer: a membership
-- added or removed bumps only that peer, and a session changed or removed bumps only its
-- members, so one peer's change leaves the other peers' cached pages valid. Writers adding peers
-- to sessions of one workspace no longer all update the same workspace row.
ALTER TABLE peers ADD COLUMN sessions_version INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER session_peers_version_insert;
DROP TRIGGER session_peers_version_delete;
DROP TRIGGER sessions_version_update;
DROP TRIGGER sessions_version_delete;
ALTER TABLE workspaces DROP COLUMN sessions_version;

-- bumping a peer's sessions_version is not a change of the peer: the peers list stays cached
DROP TRIGGER peers_version_update;
CREATE TRIGGER peers_version_update AFTER UPDATE OF workspace_id, id, metadata, configuration, created_at, v1_id ON peers BEGIN
  UPDATE workspaces SET peers_version = peers_version + 1 WHERE id = NEW.workspace_id;
END;

CREATE TRIGGER session_peers_version_insert AFTER INSERT ON session_peers BEGIN
  UPDATE peers SET sessions_version = sessions_version + 1 WHERE workspace_id = NEW.workspace_id AND id = NEW.peer_id;
END;
CREATE TRIGGER session_peers_version_delete AFTER DELETE ON session_peers BEGIN
  UPDATE peers SET sessions_version = sessions_version + 1 WHERE workspace_id = OLD.workspace_id AND id = OLD.peer_id;
END;
CREATE TRIGGER session_peers_version_update AFTER UPDATE OF workspace_id, session_id, peer_id ON session_peers BEGIN
  UPDATE peers SET sessions_version = sessions_version + 1
  WHERE (workspace_id = OLD.workspace_id AND id = OLD.peer_id) OR (workspace_id = NEW.workspace_id AND id = NEW.peer_id);
END;
-- A session's members, under its old id and its new one. A deleted session's memberships go
-- with it (ON DELETE CASCADE), which fires the membership delete trigger above for each member.
CREATE TRIGGER sessions_version_update AFTER UPDATE OF workspace_id, id, is_active, metadata, configuration, created_at ON sessions BEGIN
  UPDATE peers SET sessions_version = sessions_version + 1
  WHERE (workspace_id = OLD.workspace_id AND id IN (SELECT peer_id FROM session_peers WHERE workspace_id = OLD.workspace_id AND session_id = OLD.id))
     OR (workspace_id = NEW.workspace_id AND id IN (SELECT peer_id FROM session_peers WHERE workspace_id = NEW.workspace_id AND session_id = NEW.id));
END;
