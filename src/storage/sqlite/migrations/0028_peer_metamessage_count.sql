-- The total of a page of a v1 user's metamessages counted them in the user's index (one entry
-- per metamessage). Triggers now keep the count on the user's peer row, as 0023 keeps its
-- sessions'; a metamessage's owner does not change, but a change of it is counted all the same.
ALTER TABLE peers ADD COLUMN metamessage_count INTEGER NOT NULL DEFAULT 0;
UPDATE peers SET metamessage_count = (SELECT COUNT(*) FROM metamessages mm WHERE mm.workspace_id = peers.workspace_id AND mm.peer_id = peers.id);

CREATE TRIGGER metamessages_count_insert AFTER INSERT ON metamessages BEGIN
  UPDATE peers SET metamessage_count = metamessage_count + 1 WHERE workspace_id = NEW.workspace_id AND id = NEW.peer_id;
END;
CREATE TRIGGER metamessages_count_delete AFTER DELETE ON metamessages BEGIN
  UPDATE peers SET metamessage_count = metamessage_count - 1 WHERE workspace_id = OLD.workspace_id AND id = OLD.peer_id;
END;
CREATE TRIGGER metamessages_count_update AFTER UPDATE OF workspace_id, peer_id ON metamessages
WHEN NEW.workspace_id IS NOT OLD.workspace_id OR NEW.peer_id IS NOT OLD.peer_id BEGIN
  UPDATE peers SET metamessage_count = metamessage_count - 1 WHERE workspace_id = OLD.workspace_id AND id = OLD.peer_id;
  UPDATE peers SET metamessage_count = metamessage_count + 1 WHERE workspace_id = NEW.workspace_id AND id = NEW.peer_id;
END;
