-- A workspace's open and dead-lettered jobs, newest first, a page at a time
-- (POST /v3/workspaces/{w}/queue/jobs/list): done jobs, the bulk of the table, are left out.
CREATE INDEX jobs_workspace_listed ON jobs (workspace_id, status, pk) WHERE status IN ('pending', 'running', 'dead');
