-- The open jobs (pending or running) of each queue in order: a claim looks only at the first
-- one of each queue instead of at every pending job behind a running one. The indexes that
-- served the former claim go; finished jobs get their own for the periodic purge.
DROP INDEX jobs_runnable;
DROP INDEX jobs_queue;
CREATE INDEX jobs_open ON jobs (queue_key, pk) WHERE status IN ('pending', 'running');
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE status = 'done';
