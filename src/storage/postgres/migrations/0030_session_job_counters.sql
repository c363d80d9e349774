-- A session's queue status read the summary counters of every session of the workspace and kept
-- one (176 ms for one session of a workspace whose 20,000 sessions had summaries in the last
-- day, SQLite). It now reads the session's own through this index: the session, the kind and
-- the hours, as representation_counters_session has them. It also serves the session's deletion
-- cascade, as the index it replaces did.
DROP INDEX job_counters_session;
CREATE INDEX job_counters_session ON job_counters (workspace_id, session_id, kind, hour);
