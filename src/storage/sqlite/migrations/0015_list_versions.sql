-- Versions that change whenever a cached list page could: a session's messages (added, removed
-- or changed) and, per workspace, the sessions of its peers (a membership added or removed, a
-- session changed or removed). A page cached with a version is served only while one point
-- lookup reads the same version back.
ALTER TABLE sessions ADD COLUMN messages_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workspaces ADD COLUMN sessions_version INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER messages_count_insert;
DROP TRIGGER messages_count_delete;
CREATE TRIGGER messages_count_insert AFTER INSERT ON messages BEGIN
  UPDATE sessions SET message_count = message_count + 1, messages_version = messages_version + 1
  WHERE workspace_id = NEW.workspace_id AND id = NEW.session_id;
END;
CREATE TRIGGER messages_count_delete AFTER DELETE ON messages BEGIN
  UPDATE sessions SET message_count = message_count - 1, messages_version = messages_version + 1
  WHERE workspace_id = OLD.workspace_id AND id = OLD.session_id;
END;
CREATE TRIGGER messages_version_update AFTER UPDATE ON messages BEGIN
  UPDATE sessions SET messages_version = messages_version + 1 WHERE workspace_id = OLD.workspace_id AND id = OLD.session_id;
  UPDATE sessions SET messages_version = messages_version + 1
  WHERE workspace_id = NEW.workspace_id AND id = NEW.session_id AND (NEW.workspace_id <> OLD.workspace_id OR NEW.session_id <> OLD.session_id);
END;

CREATE TRIGGER session_peers_version_insert AFTER INSERT ON session_peers BEGIN
  UPDATE workspaces SET sessions_version = sessions_version + 1 WHERE id = NEW.workspace_id;
END;
CREATE TRIGGER session_peers_version_delete AFTER DELETE ON session_peers BEGIN
  UPDATE workspaces SET sessions_version = sessions_version + 1 WHERE id = OLD.workspace_id;
END;
CREATE TRIGGER sessions_version_update AFTER UPDATE OF id, is_active, metadata, configuration, created_at ON sessions BEGIN
  UPDATE workspaces SET sessions_version = sessions_version + 1 WHERE id = NEW.workspace_id;
END;
CREATE TRIGGER sessions_version_delete AFTER DELETE ON sessions BEGIN
  UPDATE workspaces SET sessions_version = sessions_version + 1 WHERE id = OLD.workspace_id;
END;
