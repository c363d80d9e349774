-- A version of a workspace's list of active sessions, so deep pages of it start after the last
-- row of an earlier page read at the same version (seek-points.ts) instead of stepping over every
-- session before them. It changes with anything that moves a session in that list: an active
-- session added or removed, a session (de)activated, an active session's creation time changed.
-- The first three already update the workspace's row (active_session_count), so the version costs
-- no extra write there. A session's metadata or configuration does not move it and leaves the
-- version alone.
ALTER TABLE workspaces ADD COLUMN active_sessions_version BIGINT NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION engram_count_sessions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE delta INTEGER := 0;
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.is_active THEN delta := 1; END IF;
  ELSIF TG_OP = 'DELETE' THEN
    IF OLD.is_active THEN delta := -1; END IF;
  ELSIF NEW.is_active IS DISTINCT FROM OLD.is_active THEN
    delta := CASE WHEN NEW.is_active THEN 1 ELSE -1 END;
  END IF;
  IF delta <> 0 THEN
    UPDATE workspaces SET active_session_count = active_session_count + delta, active_sessions_version = active_sessions_version + 1
    WHERE id = COALESCE(NEW.workspace_id, OLD.workspace_id);
  ELSIF TG_OP = 'UPDATE' AND (NEW.is_active OR OLD.is_active)
    AND (NEW.workspace_id, NEW.created_at) IS DISTINCT FROM (OLD.workspace_id, OLD.created_at) THEN
    UPDATE workspaces SET active_sessions_version = active_sessions_version + 1 WHERE id IN (OLD.workspace_id, NEW.workspace_id);
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER sessions_count ON sessions;
CREATE TRIGGER sessions_count AFTER INSERT OR DELETE OR UPDATE OF is_active, workspace_id, created_at ON sessions
  FOR EACH ROW EXECUTE FUNCTION engram_count_sessions();
