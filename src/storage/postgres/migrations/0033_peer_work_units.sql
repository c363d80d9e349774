-- Queue status filtered by peer (a client waiting for a peer's work to finish) read every work
-- unit of the workspace's last day and kept the peer's in JavaScript: 130 ms where 20,000
-- sessions had work in the last day (bench/queue-status.ts). It now reads the units the peer is
-- the observed peer of through these, and the units of the sessions it is a member of through
-- the session indexes (reasoning-store.ts, unitRows). The observed peer leads: led by the
-- workspace, the planner without statistics yet (a new database) took these for a session's
-- status too, walking the workspace's units (204 ms for one observer's among 5,000 sessions).
CREATE INDEX representation_counters_observed ON representation_counters (observed_id, workspace_id, hour);
CREATE INDEX representation_items_open_observed ON representation_items (observed_id, workspace_id) WHERE processed_at IS NULL;
