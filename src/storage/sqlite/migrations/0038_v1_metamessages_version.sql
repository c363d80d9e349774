-- A version of a v1 user's list of metamessages, so its deep pages start after the last row of an
-- earlier page read at the same version (seek-points.ts) instead of stepping over every
-- metamessage before them. The list is in insertion order, so only a metamessage added, removed
-- or given another owner moves it: the statements that keep the user's metamessage_count (0028)
-- bump the version too, on the row they already write.
ALTER TABLE peers ADD COLUMN metamessages_version INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER metamessages_count_insert;
DROP TRIGGER metamessages_count_delete;
DROP TRIGGER metamessages_count_update;
CREATE TRIGGER metamessages_count_insert AFTER INSERT ON metamessages BEGIN
  UPDATE peers SET metamessage_count = metamessage_count + 1, metamessages_version = metamessages_version + 1
  WHERE workspace_id = NEW.workspace_id AND id = NEW.peer_id;
END;
CREATE TRIGGER metamessages_count_delete AFTER DELETE ON metamessages BEGIN
  UPDATE peers SET metamessage_count = metamessage_count - 1, metamessages_version = metamessages_version + 1
  WHERE workspace_id = OLD.workspace_id AND id = OLD.peer_id;
END;
CREATE TRIGGER metamessages_count_update AFTER UPDATE OF workspace_id, peer_id ON metamessages
WHEN NEW.workspace_id IS NOT OLD.workspace_id OR NEW.peer_id IS NOT OLD.peer_id BEGIN
  UPDATE peers SET metamessage_count = metamessage_count - 1, metamessages_version = metamessages_version + 1
  WHERE workspace_id = OLD.workspace_id AND id = OLD.peer_id;
  UPDATE peers SET metamessage_count = metamessage_count + 1, metamessages_version = metamessages_version + 1
  WHERE workspace_id = NEW.workspace_id AND id = NEW.peer_id;
END;
