-- A version of each collection's conclusions list, so deep pages of a workspace's or a
-- collection's conclusions start after the last row of an earlier page read at the same version
-- (seek-points.ts) instead of stepping over every conclusion before them. `v` counts every change
-- of a count row's conclusions that moves one in or out of the list or along its order (added,
-- deleted, soft-deleted, moved to another collection or level, its creation time changed): a
-- scope's version is the sum of its rows' `v` (the rows are kept at n = 0, so the sum only grows).
-- It is written in the same statements as `n`, on the rows they already lock, so it costs no extra
-- write and no other lock order.
ALTER TABLE conclusion_counts ADD COLUMN v BIGINT NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION engram_conclusion_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO conclusion_counts (workspace_id, observer_id, observed_id, level, n, v)
    SELECT workspace_id, observer_id, observed_id, level, COUNT(*), 1 FROM inserted WHERE deleted_at IS NULL
    GROUP BY workspace_id, observer_id, observed_id, level ORDER BY workspace_id, observer_id, observed_id, level
  ON CONFLICT (workspace_id, observer_id, observed_id, level) DO UPDATE SET n = conclusion_counts.n + excluded.n, v = conclusion_counts.v + 1;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION engram_conclusion_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d record;
BEGIN
  -- one count row at a time, in key order (an UPDATE ... FROM takes its rows in no set order)
  FOR d IN SELECT workspace_id, observer_id, observed_id, level, COUNT(*) AS n FROM deleted WHERE deleted_at IS NULL
           GROUP BY workspace_id, observer_id, observed_id, level ORDER BY workspace_id, observer_id, observed_id, level LOOP
    UPDATE conclusion_counts SET n = n - d.n, v = v + 1
    WHERE workspace_id = d.workspace_id AND observer_id = d.observer_id AND observed_id = d.observed_id AND level = d.level;
  END LOOP;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION engram_conclusion_counts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.deleted_at IS NULL THEN
    UPDATE conclusion_counts SET n = n - 1, v = v + 1
    WHERE workspace_id = OLD.workspace_id AND observer_id = OLD.observer_id AND observed_id = OLD.observed_id AND level = OLD.level;
  END IF;
  IF NEW.deleted_at IS NULL THEN
    INSERT INTO conclusion_counts (workspace_id, observer_id, observed_id, level, n, v) VALUES (NEW.workspace_id, NEW.observer_id, NEW.observed_id, NEW.level, 1, 1)
    ON CONFLICT (workspace_id, observer_id, observed_id, level) DO UPDATE SET n = conclusion_counts.n + 1, v = conclusion_counts.v + 1;
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER conclusion_counts_update ON conclusions;
CREATE TRIGGER conclusion_counts_update AFTER UPDATE OF workspace_id, observer_id, observed_id, level, deleted_at, created_at ON conclusions
  FOR EACH ROW EXECUTE FUNCTION engram_conclusion_counts_updated();
