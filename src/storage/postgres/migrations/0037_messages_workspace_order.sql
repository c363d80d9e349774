-- A workspace's messages in write order, for its searches: they walk the workspace's newest
-- messages (dialect's messageSearch), not the primary key past other workspaces' newer ones.
CREATE INDEX messages_workspace_seq ON messages (workspace_id, pk);
