-- Conclusions narrowed by session or by observed peer, newest first, walked the workspace's or the
-- collection's whole index checking each row: a session's context with `limit_to_session` and a
-- representation of a session (21 ms on SQLite, 72 ms on PostgreSQL, for one session of a
-- collection of 40,000), a list filtered by session or by observed peer (bench/README.md,
-- "Conclusions of a session, a peer, some ids").
-- A collection's conclusions of one session, in order:
CREATE INDEX conclusions_pair_session_created ON conclusions (workspace_id, observer_id, observed_id, session_id, created_at, pk) WHERE deleted_at IS NULL;
-- The indexes of the cascades from sessions and observed peers, now also in order (they keep
-- every row, deleted ones too, for the cascades):
DROP INDEX conclusions_session;
CREATE INDEX conclusions_session ON conclusions (workspace_id, session_id, created_at, pk);
DROP INDEX conclusions_observed;
CREATE INDEX conclusions_observed ON conclusions (workspace_id, observed_id, created_at, pk);
