-- v1 lists an app's users in insertion order (pk): without an index on it every page sorted all
-- of the app's users. This one hands them out in that order.
CREATE INDEX peers_workspace_pk ON peers (workspace_id, pk);
