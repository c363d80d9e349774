-- A version of each collection's conclusions list, so deep pages of a workspace's or a
-- collection's conclusions start after the last row of an earlier page read at the same version
-- (seek-points.ts) instead of stepping over every conclusion before them. `v` counts every change
-- of a count row's conclusions that moves one in or out of the list or along its order (added,
-- deleted, soft-deleted, moved to another collection or level, its creation time changed): a
-- scope's version is the sum of its rows' `v` (the rows are kept at n = 0, so the sum only grows).
-- It is written in the same statements as `n`, so it costs no extra write.
ALTER TABLE conclusion_counts ADD COLUMN v INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER conclusion_counts_insert;
DROP TRIGGER conclusion_counts_delete;
DROP TRIGGER conclusion_counts_update;
CREATE TRIGGER conclusion_counts_insert AFTER INSERT ON conclusions WHEN NEW.deleted_at IS NULL BEGIN
  INSERT INTO conclusion_counts (workspace_id, observer_id, observed_id, level, n, v) VALUES (NEW.workspace_id, NEW.observer_id, NEW.observed_id, NEW.level, 1, 1)
  ON CONFLICT (workspace_id, observer_id, observed_id, level) DO UPDATE SET n = n + 1, v = v + 1;
END;
CREATE TRIGGER conclusion_counts_delete AFTER DELETE ON conclusions WHEN OLD.deleted_at IS NULL BEGIN
  UPDATE conclusion_counts SET n = n - 1, v = v + 1
  WHERE workspace_id = OLD.workspace_id AND observer_id = OLD.observer_id AND observed_id = OLD.observed_id AND level = OLD.level;
END;
CREATE TRIGGER conclusion_counts_update AFTER UPDATE OF workspace_id, observer_id, observed_id, level, deleted_at, created_at ON conclusions BEGIN
  UPDATE conclusion_counts SET n = n - 1, v = v + 1
  WHERE OLD.deleted_at IS NULL
    AND workspace_id = OLD.workspace_id AND observer_id = OLD.observer_id AND observed_id = OLD.observed_id AND level = OLD.level;
  INSERT INTO conclusion_counts (workspace_id, observer_id, observed_id, level, n, v)
    SELECT NEW.workspace_id, NEW.observer_id, NEW.observed_id, NEW.level, 1, 1 WHERE NEW.deleted_at IS NULL
  ON CONFLICT (workspace_id, observer_id, observed_id, level) DO UPDATE SET n = n + 1, v = v + 1;
END;
