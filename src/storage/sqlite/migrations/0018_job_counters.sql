-- Queue status counts the finished summary and dream jobs of a workspace from these counters,
-- kept by the trigger below, so its cost follows the open jobs and the number of queues (one per
-- session summarised, one per collection dreamt about), not every job finished in the last day
-- (a workspace taking 100 messages a second finishes about 400,000 summary jobs a day). A counted
-- kind that is added later needs its name in the trigger. A summary queue's counters belong to
-- its session and go with it; every counter goes with its workspace.
CREATE TABLE job_counters (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  queue_key TEXT NOT NULL,
  session_id TEXT,
  completed INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, kind, queue_key),
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX job_counters_session ON job_counters (workspace_id, session_id);

-- A job counts once, when it first finishes (done, or dead after its last attempt). A summary
-- queue's key is 'summary:<workspace>:<session>'. A job finishing after its workspace or session
-- was deleted has nothing left to count in.
CREATE TRIGGER jobs_count_finished AFTER UPDATE OF status ON jobs
WHEN NEW.status IN ('done', 'dead') AND OLD.status NOT IN ('done', 'dead') AND NEW.workspace_id IS NOT NULL
  AND NEW.kind IN ('reasoning.summarize', 'reasoning.dream', 'reasoning.dream.auto')
BEGIN
  INSERT INTO job_counters (workspace_id, kind, queue_key, session_id, completed, failed)
  SELECT NEW.workspace_id, NEW.kind, NEW.queue_key, k.session_id, NEW.status = 'done', NEW.status = 'dead'
  FROM (SELECT CASE WHEN NEW.kind = 'reasoning.summarize' THEN substr(NEW.queue_key, length(NEW.workspace_id) + 10) END AS session_id) k
  WHERE EXISTS (SELECT 1 FROM workspaces w WHERE w.id = NEW.workspace_id)
    AND (k.session_id IS NULL OR EXISTS (SELECT 1 FROM sessions s WHERE s.workspace_id = NEW.workspace_id AND s.id = k.session_id))
  ON CONFLICT (workspace_id, kind, queue_key) DO UPDATE SET completed = completed + excluded.completed, failed = failed + excluded.failed;
END;

INSERT INTO job_counters (workspace_id, kind, queue_key, session_id, completed, failed)
SELECT j.workspace_id, j.kind, j.queue_key, j.session_id, SUM(j.status = 'done'), SUM(j.status = 'dead')
FROM (
  SELECT workspace_id, kind, queue_key, status,
    CASE WHEN kind = 'reasoning.summarize' THEN substr(queue_key, length(workspace_id) + 10) END AS session_id
  FROM jobs
  WHERE status IN ('done', 'dead') AND workspace_id IS NOT NULL AND kind IN ('reasoning.summarize', 'reasoning.dream', 'reasoning.dream.auto')
) j
WHERE EXISTS (SELECT 1 FROM workspaces w WHERE w.id = j.workspace_id)
  AND (j.session_id IS NULL OR EXISTS (SELECT 1 FROM sessions s WHERE s.workspace_id = j.workspace_id AND s.id = j.session_id))
GROUP BY j.workspace_id, j.kind, j.queue_key, j.session_id;
