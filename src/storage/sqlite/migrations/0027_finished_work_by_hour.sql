-- Queue status counted every piece of work a session ever finished, so its cost and its answer
-- grew with the workspace's history (220 ms and 1.4 MB at 20,000 sessions). Finished work is now
-- counted by the hour it finished in, and queue status reads the last day's hours only, as the
-- reference counts completed work only since its periodic cleanup. The hours older than a day are
-- purged with the finished jobs. Counts already kept are put in the hour of this migration, so
-- they are shown for one more day.

-- the finished summary and dream jobs (0018), per queue and hour
DROP TRIGGER jobs_count_finished;
CREATE TABLE job_counters_by_hour (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  hour INTEGER NOT NULL,
  queue_key TEXT NOT NULL,
  session_id TEXT,
  completed INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, kind, hour, queue_key),
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE
);
INSERT INTO job_counters_by_hour (workspace_id, kind, hour, queue_key, session_id, completed, failed)
SELECT workspace_id, kind, unixepoch() / 3600, queue_key, session_id, completed, failed FROM job_counters;
DROP TABLE job_counters;
ALTER TABLE job_counters_by_hour RENAME TO job_counters;
CREATE INDEX job_counters_session ON job_counters (workspace_id, session_id);
CREATE INDEX job_counters_hour ON job_counters (hour);

-- finished_at is in microseconds; a job counts in the hour it finished in
CREATE TRIGGER jobs_count_finished AFTER UPDATE OF status ON jobs
WHEN NEW.status IN ('done', 'dead') AND OLD.status NOT IN ('done', 'dead') AND NEW.workspace_id IS NOT NULL
  AND NEW.kind IN ('reasoning.summarize', 'reasoning.dream', 'reasoning.dream.auto')
BEGIN
  INSERT INTO job_counters (workspace_id, kind, hour, queue_key, session_id, completed, failed)
  SELECT NEW.workspace_id, NEW.kind, COALESCE(NEW.finished_at / 3600000000, unixepoch() / 3600), NEW.queue_key, k.session_id,
    NEW.status = 'done', NEW.status = 'dead'
  FROM (SELECT CASE WHEN NEW.kind = 'reasoning.summarize' THEN substr(NEW.queue_key, length(NEW.workspace_id) + 10) END AS session_id) k
  WHERE EXISTS (SELECT 1 FROM workspaces w WHERE w.id = NEW.workspace_id)
    AND (k.session_id IS NULL OR EXISTS (SELECT 1 FROM sessions s WHERE s.workspace_id = NEW.workspace_id AND s.id = k.session_id))
  ON CONFLICT (workspace_id, kind, hour, queue_key) DO UPDATE SET completed = completed + excluded.completed, failed = failed + excluded.failed;
END;

-- the processed representation items (0013), per unit and hour, kept by markItems
CREATE TABLE representation_counters_by_hour (
  workspace_id TEXT NOT NULL,
  hour INTEGER NOT NULL,
  session_id TEXT NOT NULL,
  observed_id TEXT NOT NULL,
  observers TEXT NOT NULL,
  completed INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, hour, session_id, observed_id, observers),
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE
);
INSERT INTO representation_counters_by_hour (workspace_id, hour, session_id, observed_id, observers, completed, failed)
SELECT workspace_id, unixepoch() / 3600, session_id, observed_id, observers, completed, failed FROM representation_counters;
DROP TABLE representation_counters;
ALTER TABLE representation_counters_by_hour RENAME TO representation_counters;
-- a session's counters: its deletion's cascade and a status filtered by session
CREATE INDEX representation_counters_session ON representation_counters (workspace_id, session_id, hour);
CREATE INDEX representation_counters_hour ON representation_counters (hour);
