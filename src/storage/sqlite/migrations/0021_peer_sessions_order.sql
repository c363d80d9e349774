-- The sessions of a peer are listed by the sessions' creation (then insertion) order. That order
-- lived only on the sessions, so every page sorted all of the peer's memberships: an assistant
-- that is a member of every session cost more with every session (3.3 ms a page at 10,000).
-- Each membership now carries its session's created_at and pk (a session keeps both for good),
-- and an index hands a peer's memberships out in that order, so a page reads what it returns.
ALTER TABLE session_peers ADD COLUMN session_created_at INTEGER;
ALTER TABLE session_peers ADD COLUMN session_pk INTEGER;
UPDATE session_peers SET
  session_created_at = (SELECT s.created_at FROM sessions s WHERE s.workspace_id = session_peers.workspace_id AND s.id = session_peers.session_id),
  session_pk = (SELECT s.pk FROM sessions s WHERE s.workspace_id = session_peers.workspace_id AND s.id = session_peers.session_id);
CREATE INDEX session_peers_peer_order ON session_peers (workspace_id, peer_id, session_created_at, session_pk);
-- filled by the database on every insert, whoever writes the membership
CREATE TRIGGER session_peers_session_order AFTER INSERT ON session_peers
  WHEN NEW.session_created_at IS NULL OR NEW.session_pk IS NULL BEGIN
  UPDATE session_peers SET
    session_created_at = (SELECT s.created_at FROM sessions s WHERE s.workspace_id = NEW.workspace_id AND s.id = NEW.session_id),
    session_pk = (SELECT s.pk FROM sessions s WHERE s.workspace_id = NEW.workspace_id AND s.id = NEW.session_id)
  WHERE workspace_id = NEW.workspace_id AND session_id = NEW.session_id AND peer_id = NEW.peer_id;
END;
