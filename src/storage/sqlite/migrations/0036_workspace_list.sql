-- The list of workspaces took its `total` from a count of every workspace on each page, and its
-- deep pages stepped over every workspace before them. One row now keeps the number of
-- workspaces and a version of the list, written by triggers in the transaction that adds or
-- removes a workspace, so a page's total is one row read and deep pages start after the last row
-- of an earlier page read at the same version (seek-points.ts). A workspace's metadata or
-- configuration does not move it in the list and leaves the version alone; its creation time
-- never changes.
CREATE TABLE workspace_list (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  workspace_count INTEGER NOT NULL,
  version INTEGER NOT NULL
);
INSERT INTO workspace_list (one, workspace_count, version) SELECT 1, COUNT(*), 0 FROM workspaces;
CREATE TRIGGER workspace_list_insert AFTER INSERT ON workspaces BEGIN
  UPDATE workspace_list SET workspace_count = workspace_count + 1, version = version + 1;
END;
CREATE TRIGGER workspace_list_delete AFTER DELETE ON workspaces BEGIN
  UPDATE workspace_list SET workspace_count = workspace_count - 1, version = version + 1;
END;
