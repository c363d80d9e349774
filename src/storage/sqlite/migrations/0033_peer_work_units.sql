-- Queue status filtered by peer (a client waiting for a peer's work to finish) read every work
-- unit of the workspace's last day and kept the peer's in JavaScript: 130 ms where 20,000
-- sessions had work in the last day (bench/queue-status.ts). It now reads the units the peer is
-- the observed peer of through these, and the units of the sessions it is a member of through
-- the session indexes (reasoning-store.ts, unitRows). The open items' index holds the columns the
-- count groups by, so that SQLite's planner takes it over the workspace's walk of
-- representation_items_open.
CREATE INDEX representation_counters_observed ON representation_counters (workspace_id, observed_id, hour);
CREATE INDEX representation_items_open_observed ON representation_items (workspace_id, observed_id, session_id, observers) WHERE processed_at IS NULL;
