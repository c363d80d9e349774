-- Versions that change whenever a cached list page could: a session's messages (added, removed
-- or changed) and, per workspace, the sessions of its peers (a membership added or removed, a
-- session changed or removed). A page cached with a version is served only while one point
-- lookup reads the same version back.
ALTER TABLE sessions ADD COLUMN messages_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE workspaces ADD COLUMN sessions_version BIGINT NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION engram_count_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE sessions SET message_count = message_count + 1, messages_version = messages_version + 1
    WHERE workspace_id = NEW.workspace_id AND id = NEW.session_id;
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE sessions SET message_count = message_count - 1, messages_version = messages_version + 1
    WHERE workspace_id = OLD.workspace_id AND id = OLD.session_id;
  ELSE
    UPDATE sessions SET messages_version = messages_version + 1 WHERE workspace_id = OLD.workspace_id AND id = OLD.session_id;
    IF NEW.workspace_id IS DISTINCT FROM OLD.workspace_id OR NEW.session_id IS DISTINCT FROM OLD.session_id THEN
      UPDATE sessions SET messages_version = messages_version + 1 WHERE workspace_id = NEW.workspace_id AND id = NEW.session_id;
    END IF;
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER messages_count ON messages;
CREATE TRIGGER messages_count AFTER INSERT OR DELETE OR UPDATE ON messages FOR EACH ROW EXECUTE FUNCTION engram_count_messages();

CREATE FUNCTION engram_sessions_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE workspaces SET sessions_version = sessions_version + 1 WHERE id = COALESCE(NEW.workspace_id, OLD.workspace_id);
  RETURN NULL;
END $$;
CREATE TRIGGER session_peers_version AFTER INSERT OR DELETE ON session_peers FOR EACH ROW EXECUTE FUNCTION engram_sessions_version();
CREATE TRIGGER sessions_version AFTER DELETE OR UPDATE OF id, is_active, metadata, configuration, created_at ON sessions
  FOR EACH ROW EXECUTE FUNCTION engram_sessions_version();
