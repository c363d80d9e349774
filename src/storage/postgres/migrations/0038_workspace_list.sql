-- The list of workspaces took its `total` from a count of every workspace on each page, and its
-- deep pages stepped over every workspace before them. One row now keeps the number of
-- workspaces and a version of the list, written by triggers in the transaction that adds or
-- removes a workspace, so a page's total is one row read and deep pages start after the last row
-- of an earlier page read at the same version (seek-points.ts). A workspace's metadata or
-- configuration does not move it in the list and leaves the version alone; its creation time
-- never changes.
-- The row is the last one a writer of workspaces locks (a delete takes the workspace's own rows
-- first, a create holds nothing of another workspace), so it adds no lock cycle; creations of
-- workspaces wait for each other's commit, which is rare next to everything else written.
-- Writers of an older version still running are held off while the workspaces are counted.
LOCK TABLE workspaces IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE workspace_list (
  one BOOLEAN PRIMARY KEY CHECK (one),
  workspace_count BIGINT NOT NULL,
  version BIGINT NOT NULL
);
INSERT INTO workspace_list (one, workspace_count, version) SELECT TRUE, COUNT(*), 0 FROM workspaces;

-- Once per statement, from its transition table: a statement that stores many workspaces writes
-- the row once (a row trigger would leave a dead version of it per workspace until vacuum), and
-- one that stores none (get-or-create of an existing workspace) does not write it at all.
CREATE FUNCTION engram_workspace_list_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  added BIGINT := (SELECT COUNT(*) FROM inserted);
BEGIN
  IF added > 0 THEN
    UPDATE workspace_list SET workspace_count = workspace_count + added, version = version + 1;
  END IF;
  RETURN NULL;
END $$;
CREATE FUNCTION engram_workspace_list_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  removed BIGINT := (SELECT COUNT(*) FROM deleted);
BEGIN
  IF removed > 0 THEN
    UPDATE workspace_list SET workspace_count = workspace_count - removed, version = version + 1;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER workspace_list_inserted AFTER INSERT ON workspaces REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION engram_workspace_list_inserted();
CREATE TRIGGER workspace_list_deleted AFTER DELETE ON workspaces REFERENCING OLD TABLE AS deleted
  FOR EACH STATEMENT EXECUTE FUNCTION engram_workspace_list_deleted();
