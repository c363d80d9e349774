-- The sessions of a peer are listed by the sessions' creation (then insertion) order. That order
-- lived only on the sessions, so every page sorted all of the peer's memberships: an assistant
-- that is a member of every session cost more with every session.
-- Each membership now carries its session's created_at and pk (a session keeps both for good),
-- and an index hands a peer's memberships out in that order, so a page reads what it returns.
ALTER TABLE session_peers ADD COLUMN session_created_at TIMESTAMPTZ;
ALTER TABLE session_peers ADD COLUMN session_pk BIGINT;
UPDATE session_peers m SET session_created_at = s.created_at, session_pk = s.pk
  FROM sessions s WHERE s.workspace_id = m.workspace_id AND s.id = m.session_id;
CREATE INDEX session_peers_peer_order ON session_peers (workspace_id, peer_id, session_created_at, session_pk);
-- filled by the database on every insert, whoever writes the membership
CREATE FUNCTION engram_session_peers_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.session_created_at IS NULL OR NEW.session_pk IS NULL THEN
    SELECT s.created_at, s.pk INTO NEW.session_created_at, NEW.session_pk
      FROM sessions s WHERE s.workspace_id = NEW.workspace_id AND s.id = NEW.session_id;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER session_peers_session_order BEFORE INSERT ON session_peers
  FOR EACH ROW EXECUTE FUNCTION engram_session_peers_order();
