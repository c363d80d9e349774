-- Dreams (reasoning.md R6): per collection (observer, observed) when its last dream ended and how
-- many explicit conclusions it had then; the next automatic dream is due after
-- DREAM_DOCUMENT_THRESHOLD more. The due time itself is the run_after of the pending dream job.
CREATE TABLE collection_dreams (
  workspace_id TEXT NOT NULL,
  observer_id TEXT NOT NULL,
  observed_id TEXT NOT NULL,
  last_dream_at TIMESTAMPTZ NOT NULL,
  explicit_at_last_dream INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, observer_id, observed_id),
  FOREIGN KEY (workspace_id, observer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE
);

-- Every session the sources of a derived conclusion came from (NULL for conclusions drawn from one
-- session's messages): a session allowlist shows the conclusion only when it holds all of them.
ALTER TABLE conclusions ADD COLUMN source_session_ids JSONB;
