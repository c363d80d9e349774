-- Unfiltered message pages read this counter instead of counting the session's messages.
ALTER TABLE sessions ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET message_count = (
  SELECT COUNT(*) FROM messages m WHERE m.workspace_id = sessions.workspace_id AND m.session_id = sessions.id
);

CREATE TRIGGER messages_count_insert AFTER INSERT ON messages BEGIN
  UPDATE sessions SET message_count = message_count + 1 WHERE workspace_id = NEW.workspace_id AND id = NEW.session_id;
END;
CREATE TRIGGER messages_count_delete AFTER DELETE ON messages BEGIN
  UPDATE sessions SET message_count = message_count - 1 WHERE workspace_id = OLD.workspace_id AND id = OLD.session_id;
END;

-- Full-text index over message content (external content: the text lives only in messages).
CREATE VIRTUAL TABLE messages_fts USING fts5(content, content = 'messages', content_rowid = 'pk', tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO messages_fts (rowid, content) SELECT pk, content FROM messages;
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts (rowid, content) VALUES (NEW.pk, NEW.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', OLD.pk, OLD.content);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', OLD.pk, OLD.content);
  INSERT INTO messages_fts (rowid, content) VALUES (NEW.pk, NEW.content);
END;
