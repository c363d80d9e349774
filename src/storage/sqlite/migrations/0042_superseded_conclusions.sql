-- Facts over time (docs/reasoning.md, "Facts over time"). `valid_from`: when the fact became true
-- (the newest source message's time; NULL on rows stored before this migration, read as their
-- creation time). A superseded conclusion is retired the way a deleted one is (`deleted_at` set, in
-- the same statement as `superseded_at` and `superseded_by`, the conclusion that replaces it), so
-- every default read, index, count, full-text match and vector search leaves it out at no extra
-- cost. Deleted rows are those with `deleted_at` set and no `superseded_at`.
ALTER TABLE conclusions ADD COLUMN valid_from INTEGER;
ALTER TABLE conclusions ADD COLUMN superseded_at INTEGER;
ALTER TABLE conclusions ADD COLUMN superseded_by TEXT;

-- Lists with include_superseded (current and superseded, newest first), in the order of the
-- default lists' indexes. The predicate (not deleted, or superseded) is written as the reads with
-- include_superseded write it, and so that `deleted_at IS NULL` does not imply it: SQLite and
-- PostgreSQL took a partial index of `deleted_at IS NULL OR superseded_at IS NOT NULL` (or of its
-- NOT form, on PostgreSQL) for the default reads too, which then walked superseded rows. The predicate (not deleted, or superseded) is written as the reads with
-- include_superseded write it, and so that `deleted_at IS NULL` does not imply it: SQLite and
-- PostgreSQL took a partial index of `deleted_at IS NULL OR superseded_at IS NOT NULL` (or of its
-- NOT form, on PostgreSQL) for the default reads too, which then walked superseded rows.
CREATE INDEX conclusions_workspace_known ON conclusions (workspace_id, created_at, pk) WHERE coalesce(superseded_at, deleted_at) IS NULL OR superseded_at IS NOT NULL;
CREATE INDEX conclusions_pair_known ON conclusions (workspace_id, observer_id, observed_id, created_at, pk) WHERE coalesce(superseded_at, deleted_at) IS NULL OR superseded_at IS NOT NULL;
-- A history walks back from a conclusion to the ones it superseded.
CREATE INDEX conclusions_superseded_by ON conclusions (workspace_id, superseded_by) WHERE superseded_by IS NOT NULL;

-- The superseded conclusions of each collection and level, kept as `n` is: the total of a list
-- with include_superseded is n + s. Superseding a conclusion also sets its `deleted_at`, so the
-- existing update trigger takes it out of `n` and adds to `v` in the same statement.
ALTER TABLE conclusion_counts ADD COLUMN s INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER conclusion_counts_supersede AFTER UPDATE OF superseded_at ON conclusions
  WHEN (OLD.superseded_at IS NULL) <> (NEW.superseded_at IS NULL) BEGIN
  UPDATE conclusion_counts SET s = s + (CASE WHEN NEW.superseded_at IS NULL THEN -1 ELSE 1 END), v = v + 1
  WHERE workspace_id = NEW.workspace_id AND observer_id = NEW.observer_id AND observed_id = NEW.observed_id AND level = NEW.level;
END;
CREATE TRIGGER conclusion_counts_superseded_delete AFTER DELETE ON conclusions WHEN OLD.superseded_at IS NOT NULL BEGIN
  UPDATE conclusion_counts SET s = s - 1, v = v + 1
  WHERE workspace_id = OLD.workspace_id AND observer_id = OLD.observer_id AND observed_id = OLD.observed_id AND level = OLD.level;
END;

-- A scope's copies of a conclusion (copied_from), found when the original is superseded, through
-- conclusions_copied_from (made by the peer deletion migration before this one).
