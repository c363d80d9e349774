-- A worker claims each kind of job on its own (its lane). The claim walked every queue with open
-- jobs for every lane, so with many queues (one per session, peer pair or webhook endpoint) a
-- worker spent most of its time walking queues of other kinds, or of its own kind that had
-- nothing due. These let a lane walk only the queues that hold an open job of its kind, and
-- skip the walk when no job of its kind is due and no lease of its kind has run out.
CREATE INDEX jobs_open_kind ON jobs (kind, queue_key) WHERE status IN ('pending', 'running');
CREATE INDEX jobs_claimable ON jobs (kind, status, run_after) WHERE status IN ('pending', 'running');
