-- The queue depth at /metrics counts the jobs of each status through an index instead of
-- grouping the whole table (a day of finished jobs): open ones through jobs_claimable, finished
-- ones through jobs_finished, and the dead-lettered ones (kept until someone looks at them,
-- usually few) through this one.
CREATE INDEX jobs_dead ON jobs (kind) WHERE status = 'dead';
