-- A v1 user's sessions are listed in insertion order (the sessions' pk). Every page read all the
-- user's memberships, looked up each session and sorted them (6 to 9 ms a page for a user of
-- 10,000 sessions). The memberships carry their session's pk (0021): an index hands a user's
-- memberships out in that order, so a page reads what it returns, and deep pages start from
-- remembered points. The session's id is in the index too, so the memberships are read from it
-- alone.
CREATE INDEX session_peers_peer_session_pk ON session_peers (workspace_id, peer_id, session_pk, session_id);
