-- A version of a v1 user's list of metamessages, so its deep pages start after the last row of an
-- earlier page read at the same version (seek-points.ts) instead of stepping over every
-- metamessage before them. The list is in insertion order, so only a metamessage added, removed
-- or given another owner moves it: the statements that keep the user's metamessage_count (0028)
-- bump the version too, on the row they already write (no other lock).
ALTER TABLE peers ADD COLUMN metamessages_version BIGINT NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION engram_peer_metamessage_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND (NEW.workspace_id, NEW.peer_id) IS NOT DISTINCT FROM (OLD.workspace_id, OLD.peer_id) THEN
    RETURN NULL;
  END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    UPDATE peers SET metamessage_count = metamessage_count - 1, metamessages_version = metamessages_version + 1
    WHERE workspace_id = OLD.workspace_id AND id = OLD.peer_id;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    UPDATE peers SET metamessage_count = metamessage_count + 1, metamessages_version = metamessages_version + 1
    WHERE workspace_id = NEW.workspace_id AND id = NEW.peer_id;
  END IF;
  RETURN NULL;
END $$;
