-- Representation work (reasoning.md R2): one row per (message, observed peer) waiting for the
-- deriver. A unit is a (workspace, session, observed peer); its open rows are processed in message
-- order by one job at a time (queue key representation:<workspace>:<session>:<observed>).
CREATE TABLE representation_items (
  pk INTEGER PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  observed_id TEXT NOT NULL,
  message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  message_pk INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  observers TEXT NOT NULL,
  custom_instructions TEXT,
  created_at INTEGER NOT NULL,
  processed_at INTEGER,
  error TEXT,
  UNIQUE (workspace_id, session_id, observed_id, message_id)
);
CREATE INDEX representation_items_open ON representation_items (workspace_id, session_id, observed_id, message_pk) WHERE processed_at IS NULL;
CREATE INDEX representation_items_message ON representation_items (message_id);

-- Session summaries (reasoning.md R3): the newest of each kind, with the message it covers up to.
CREATE TABLE session_summaries (
  workspace_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  summary_type TEXT NOT NULL CHECK (summary_type IN ('short', 'long')),
  content TEXT NOT NULL,
  message_id TEXT NOT NULL,
  message_seq INTEGER NOT NULL,
  token_count INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, session_id, summary_type),
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE
);
