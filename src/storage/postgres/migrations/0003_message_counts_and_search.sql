-- Unfiltered message pages read this counter instead of counting the session's messages.
ALTER TABLE sessions ADD COLUMN message_count BIGINT NOT NULL DEFAULT 0;
UPDATE sessions SET message_count = (
  SELECT COUNT(*) FROM messages m WHERE m.workspace_id = sessions.workspace_id AND m.session_id = sessions.id
);

CREATE FUNCTION engram_count_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE sessions SET message_count = message_count + 1 WHERE workspace_id = NEW.workspace_id AND id = NEW.session_id;
  ELSE
    UPDATE sessions SET message_count = message_count - 1 WHERE workspace_id = OLD.workspace_id AND id = OLD.session_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER messages_count AFTER INSERT OR DELETE ON messages FOR EACH ROW EXECUTE FUNCTION engram_count_messages();

-- Full-text index over message content; queries use the same expression.
CREATE INDEX messages_search ON messages USING GIN (to_tsvector('simple', content));
CREATE INDEX messages_metadata ON messages USING GIN (metadata jsonb_path_ops);
