-- A collection's conclusions (one observer's about one observed peer) counted per level, kept by
-- triggers in the writing transaction: the total of the conclusions list that the SDK sends for a
-- collection, and the dream schedule's count of explicit conclusions after each derived batch,
-- counted the collection's rows. Soft-deleted conclusions are not counted.
--
-- Inserts and deletes are counted once per statement, from its transition table, one row per
-- collection and level in key order: a row-level trigger's upsert per conclusion doubled the
-- time of a bulk insert (50,000 conclusions, 100 a statement: 6.9 s -> 12.2 s). A writer of
-- conclusions locks its collections' count rows: those that store conclusions take them all
-- first, in key order (MemoryStore.lockConclusionCounts), and each trigger takes its rows in key
-- order; a deadlock left (a purge against a delete of several collections) is run again by the
-- driver (docs/decisions/0018-concurrent-writers-postgres.md). Updates (soft delete, a changed
-- level) are counted row by row: a trigger with a column list cannot have transition tables.
CREATE TABLE conclusion_counts (
  workspace_id TEXT NOT NULL,
  observer_id TEXT NOT NULL,
  observed_id TEXT NOT NULL,
  level TEXT NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, observer_id, observed_id, level),
  FOREIGN KEY (workspace_id, observer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE
);
INSERT INTO conclusion_counts (workspace_id, observer_id, observed_id, level, n)
  SELECT workspace_id, observer_id, observed_id, level, COUNT(*) FROM conclusions WHERE deleted_at IS NULL
  GROUP BY workspace_id, observer_id, observed_id, level;

CREATE FUNCTION engram_conclusion_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO conclusion_counts (workspace_id, observer_id, observed_id, level, n)
    SELECT workspace_id, observer_id, observed_id, level, COUNT(*) FROM inserted WHERE deleted_at IS NULL
    GROUP BY workspace_id, observer_id, observed_id, level ORDER BY workspace_id, observer_id, observed_id, level
  ON CONFLICT (workspace_id, observer_id, observed_id, level) DO UPDATE SET n = conclusion_counts.n + excluded.n;
  RETURN NULL;
END $$;
CREATE TRIGGER conclusion_counts_insert AFTER INSERT ON conclusions
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION engram_conclusion_counts_inserted();

CREATE FUNCTION engram_conclusion_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d record;
BEGIN
  -- one count row at a time, in key order (an UPDATE ... FROM takes its rows in no set order)
  FOR d IN SELECT workspace_id, observer_id, observed_id, level, COUNT(*) AS n FROM deleted WHERE deleted_at IS NULL
           GROUP BY workspace_id, observer_id, observed_id, level ORDER BY workspace_id, observer_id, observed_id, level LOOP
    UPDATE conclusion_counts SET n = n - d.n
    WHERE workspace_id = d.workspace_id AND observer_id = d.observer_id AND observed_id = d.observed_id AND level = d.level;
  END LOOP;
  RETURN NULL;
END $$;
CREATE TRIGGER conclusion_counts_delete AFTER DELETE ON conclusions
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION engram_conclusion_counts_deleted();

CREATE FUNCTION engram_conclusion_counts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.deleted_at IS NULL THEN
    UPDATE conclusion_counts SET n = n - 1
    WHERE workspace_id = OLD.workspace_id AND observer_id = OLD.observer_id AND observed_id = OLD.observed_id AND level = OLD.level;
  END IF;
  IF NEW.deleted_at IS NULL THEN
    INSERT INTO conclusion_counts (workspace_id, observer_id, observed_id, level, n) VALUES (NEW.workspace_id, NEW.observer_id, NEW.observed_id, NEW.level, 1)
    ON CONFLICT (workspace_id, observer_id, observed_id, level) DO UPDATE SET n = conclusion_counts.n + 1;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER conclusion_counts_update AFTER UPDATE OF workspace_id, observer_id, observed_id, level, deleted_at ON conclusions
  FOR EACH ROW EXECUTE FUNCTION engram_conclusion_counts_updated();
