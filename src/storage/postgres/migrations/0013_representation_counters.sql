-- Queue status counts a unit's processed items from these counters, kept by markItems, so its
-- cost follows the open work and the number of units, not every item ever processed.
CREATE TABLE representation_counters (
  workspace_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  observed_id TEXT NOT NULL,
  observers JSONB NOT NULL,
  completed BIGINT NOT NULL DEFAULT 0,
  failed BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, session_id, observed_id, observers),
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE
);
INSERT INTO representation_counters (workspace_id, session_id, observed_id, observers, completed, failed)
SELECT workspace_id, session_id, observed_id, observers,
  SUM(CASE WHEN error IS NULL THEN 1 ELSE 0 END), SUM(CASE WHEN error IS NOT NULL THEN 1 ELSE 0 END)
FROM representation_items WHERE processed_at IS NOT NULL
GROUP BY workspace_id, session_id, observed_id, observers;
