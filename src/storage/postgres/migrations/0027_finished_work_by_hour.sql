-- Queue status counted every piece of work a session ever finished, so its cost and its answer
-- grew with the workspace's history (220 ms and 1.4 MB at 20,000 sessions on SQLite). Finished
-- work is now counted by the hour it finished in (hours since 1970, UTC), and queue status reads
-- the last day's hours only, as the reference counts completed work only since its periodic
-- cleanup. The hours older than a day are purged with the finished jobs. Counts already kept are
-- put in the hour of this migration, so they are shown for one more day.

-- the finished summary and dream jobs (0018), per queue and hour
ALTER TABLE job_counters ADD COLUMN hour BIGINT;
UPDATE job_counters SET hour = floor(extract(epoch FROM now()) / 3600);
ALTER TABLE job_counters ALTER COLUMN hour SET NOT NULL;
ALTER TABLE job_counters DROP CONSTRAINT job_counters_pkey;
ALTER TABLE job_counters ADD PRIMARY KEY (workspace_id, kind, hour, queue_key);
CREATE INDEX job_counters_hour ON job_counters (hour);

CREATE OR REPLACE FUNCTION engram_count_finished_job() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  session TEXT := CASE WHEN NEW.kind = 'reasoning.summarize' THEN substr(NEW.queue_key, length(NEW.workspace_id) + 10) END;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.id = NEW.workspace_id)
     OR (session IS NOT NULL AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.workspace_id = NEW.workspace_id AND s.id = session)) THEN
    RETURN NULL;
  END IF;
  INSERT INTO job_counters (workspace_id, kind, hour, queue_key, session_id, completed, failed)
  VALUES (NEW.workspace_id, NEW.kind, floor(extract(epoch FROM COALESCE(NEW.finished_at, now())) / 3600), NEW.queue_key, session,
    CASE WHEN NEW.status = 'done' THEN 1 ELSE 0 END, CASE WHEN NEW.status = 'dead' THEN 1 ELSE 0 END)
  ON CONFLICT (workspace_id, kind, hour, queue_key)
  DO UPDATE SET completed = job_counters.completed + excluded.completed, failed = job_counters.failed + excluded.failed;
  RETURN NULL;
EXCEPTION WHEN foreign_key_violation THEN
  RETURN NULL;
END $$;

-- the processed representation items (0013), per unit and hour, kept by markItems
ALTER TABLE representation_counters ADD COLUMN hour BIGINT;
UPDATE representation_counters SET hour = floor(extract(epoch FROM now()) / 3600);
ALTER TABLE representation_counters ALTER COLUMN hour SET NOT NULL;
ALTER TABLE representation_counters DROP CONSTRAINT representation_counters_pkey;
ALTER TABLE representation_counters ADD PRIMARY KEY (workspace_id, hour, session_id, observed_id, observers);
-- a session's counters: its deletion's cascade and a status filtered by session
CREATE INDEX representation_counters_session ON representation_counters (workspace_id, session_id, hour);
CREATE INDEX representation_counters_hour ON representation_counters (hour);
