-- The work queue: background work written in the same transaction as the change causing it.
-- A job runs after `run_after`; while running it is leased until `locked_until`, and a job whose
-- lease ran out (its worker died) can be claimed again. Jobs sharing a `queue_key` run one at a
-- time in pk order (e.g. deliveries to one webhook endpoint).
CREATE TABLE jobs (
  pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  workspace_id TEXT,
  queue_key TEXT NOT NULL,
  payload JSONB NOT NULL DEFAULT '{}',
  status TEXT NOT NULL DEFAULT 'pending',
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  run_after TIMESTAMPTZ NOT NULL,
  locked_until TIMESTAMPTZ,
  last_error TEXT,
  created_at TIMESTAMPTZ NOT NULL,
  finished_at TIMESTAMPTZ
);
CREATE INDEX jobs_runnable ON jobs (status, run_after, pk);
CREATE INDEX jobs_queue ON jobs (queue_key, status, pk);
CREATE INDEX jobs_workspace ON jobs (workspace_id, kind, status);
