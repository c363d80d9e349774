-- Dead-lettered jobs are kept for JOB_DEAD_RETENTION_DAYS, then purged like finished ones: this
-- index serves that purge (by age), and the queue depth at /metrics, which now counts the jobs
-- of each status through an index instead of grouping the whole table (a day of finished jobs):
-- open ones through jobs_claimable, finished ones through jobs_finished, dead ones through this.
CREATE INDEX jobs_dead ON jobs (finished_at) WHERE status = 'dead';
