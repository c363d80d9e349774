-- A version of a workspace's list of active sessions, so deep pages of it start after the last
-- row of an earlier page read at the same version (seek-points.ts) instead of stepping over every
-- session before them. It changes with anything that moves a session in that list: an active
-- session added or removed, a session (de)activated, an active session's creation time changed.
-- The first three already update the workspace's row (active_session_count), so the version costs
-- no extra write there. A session's metadata or configuration does not move it and leaves the
-- version alone.
ALTER TABLE workspaces ADD COLUMN active_sessions_version INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER sessions_count_insert;
DROP TRIGGER sessions_count_delete;
DROP TRIGGER sessions_count_update;
CREATE TRIGGER sessions_count_insert AFTER INSERT ON sessions WHEN NEW.is_active = 1 BEGIN
  UPDATE workspaces SET active_session_count = active_session_count + 1, active_sessions_version = active_sessions_version + 1
  WHERE id = NEW.workspace_id;
END;
CREATE TRIGGER sessions_count_delete AFTER DELETE ON sessions WHEN OLD.is_active = 1 BEGIN
  UPDATE workspaces SET active_session_count = active_session_count - 1, active_sessions_version = active_sessions_version + 1
  WHERE id = OLD.workspace_id;
END;
CREATE TRIGGER sessions_count_update AFTER UPDATE OF is_active ON sessions WHEN NEW.is_active <> OLD.is_active BEGIN
  UPDATE workspaces SET active_session_count = active_session_count + (CASE WHEN NEW.is_active = 1 THEN 1 ELSE -1 END),
    active_sessions_version = active_sessions_version + 1
  WHERE id = NEW.workspace_id;
END;
CREATE TRIGGER sessions_list_moved AFTER UPDATE OF workspace_id, created_at ON sessions
WHEN (NEW.is_active = 1 OR OLD.is_active = 1) AND (NEW.workspace_id <> OLD.workspace_id OR NEW.created_at <> OLD.created_at) BEGIN
  UPDATE workspaces SET active_sessions_version = active_sessions_version + 1 WHERE id IN (OLD.workspace_id, NEW.workspace_id);
END;
