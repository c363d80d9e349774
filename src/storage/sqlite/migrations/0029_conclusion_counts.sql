-- A collection's conclusions (one observer's about one observed peer) counted per level, kept by
-- triggers in the writing transaction: the total of the conclusions list that the SDK sends for a
-- collection, and the dream schedule's count of explicit conclusions after each derived batch,
-- counted the collection's rows (docs/decisions/0004-totals-kept-by-triggers.md).
-- Soft-deleted conclusions are not counted.
CREATE TABLE conclusion_counts (
  workspace_id TEXT NOT NULL,
  observer_id TEXT NOT NULL,
  observed_id TEXT NOT NULL,
  level TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, observer_id, observed_id, level),
  FOREIGN KEY (workspace_id, observer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE
) WITHOUT ROWID;
INSERT INTO conclusion_counts (workspace_id, observer_id, observed_id, level, n)
  SELECT workspace_id, observer_id, observed_id, level, COUNT(*) FROM conclusions WHERE deleted_at IS NULL
  GROUP BY workspace_id, observer_id, observed_id, level;

CREATE TRIGGER conclusion_counts_insert AFTER INSERT ON conclusions WHEN NEW.deleted_at IS NULL BEGIN
  INSERT INTO conclusion_counts (workspace_id, observer_id, observed_id, level, n) VALUES (NEW.workspace_id, NEW.observer_id, NEW.observed_id, NEW.level, 1)
  ON CONFLICT (workspace_id, observer_id, observed_id, level) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER conclusion_counts_delete AFTER DELETE ON conclusions WHEN OLD.deleted_at IS NULL BEGIN
  UPDATE conclusion_counts SET n = n - 1
  WHERE workspace_id = OLD.workspace_id AND observer_id = OLD.observer_id AND observed_id = OLD.observed_id AND level = OLD.level;
END;
CREATE TRIGGER conclusion_counts_update AFTER UPDATE OF workspace_id, observer_id, observed_id, level, deleted_at ON conclusions BEGIN
  UPDATE conclusion_counts SET n = n - 1
  WHERE OLD.deleted_at IS NULL
    AND workspace_id = OLD.workspace_id AND observer_id = OLD.observer_id AND observed_id = OLD.observed_id AND level = OLD.level;
  INSERT INTO conclusion_counts (workspace_id, observer_id, observed_id, level, n)
    SELECT NEW.workspace_id, NEW.observer_id, NEW.observed_id, NEW.level, 1 WHERE NEW.deleted_at IS NULL
  ON CONFLICT (workspace_id, observer_id, observed_id, level) DO UPDATE SET n = n + 1;
END;
