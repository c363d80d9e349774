-- `pk` is the private row id: it breaks created_at ties in list order and is never returned.

CREATE TABLE workspaces (
  pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  metadata JSONB NOT NULL DEFAULT '{}',
  configuration JSONB NOT NULL DEFAULT '{}',
  created_at TIMESTAMPTZ NOT NULL,
  -- kept by triggers so unfiltered list pages report `total` without counting rows
  peer_count BIGINT NOT NULL DEFAULT 0,
  active_session_count BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX workspaces_created ON workspaces (created_at, pk);
CREATE INDEX workspaces_metadata ON workspaces USING GIN (metadata jsonb_path_ops);

CREATE TABLE peers (
  pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id TEXT NOT NULL,
  metadata JSONB NOT NULL DEFAULT '{}',
  configuration JSONB NOT NULL DEFAULT '{}',
  created_at TIMESTAMPTZ NOT NULL,
  UNIQUE (workspace_id, id)
);
CREATE INDEX peers_workspace_created ON peers (workspace_id, created_at, pk);
CREATE INDEX peers_metadata ON peers USING GIN (metadata jsonb_path_ops);

CREATE TABLE sessions (
  pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id TEXT NOT NULL,
  is_active BOOLEAN NOT NULL DEFAULT TRUE,
  metadata JSONB NOT NULL DEFAULT '{}',
  configuration JSONB NOT NULL DEFAULT '{}',
  created_at TIMESTAMPTZ NOT NULL,
  UNIQUE (workspace_id, id)
);
CREATE INDEX sessions_workspace_active_created ON sessions (workspace_id, is_active, created_at, pk);
CREATE INDEX sessions_metadata ON sessions USING GIN (metadata jsonb_path_ops);

CREATE TABLE session_peers (
  workspace_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  peer_id TEXT NOT NULL,
  configuration JSONB NOT NULL DEFAULT '{}',
  joined_at TIMESTAMPTZ NOT NULL,
  left_at TIMESTAMPTZ,
  PRIMARY KEY (workspace_id, session_id, peer_id),
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE,
  FOREIGN KEY (workspace_id, peer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX session_peers_peer ON session_peers (workspace_id, peer_id);

CREATE TABLE webhook_endpoints (
  pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  UNIQUE (workspace_id, url)
);

-- Messages: designed now so sessions, clone and purge account for them.
CREATE TABLE messages (
  pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  peer_id TEXT NOT NULL,
  content TEXT NOT NULL,
  metadata JSONB NOT NULL DEFAULT '{}',
  token_count INTEGER NOT NULL DEFAULT 0,
  created_at TIMESTAMPTZ NOT NULL,
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE,
  FOREIGN KEY (workspace_id, peer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX messages_session_seq ON messages (workspace_id, session_id, pk);
CREATE INDEX messages_peer ON messages (workspace_id, peer_id, pk);

CREATE FUNCTION engram_count_peers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE workspaces SET peer_count = peer_count + 1 WHERE id = NEW.workspace_id;
  ELSE
    UPDATE workspaces SET peer_count = peer_count - 1 WHERE id = OLD.workspace_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER peers_count AFTER INSERT OR DELETE ON peers FOR EACH ROW EXECUTE FUNCTION engram_count_peers();

CREATE FUNCTION engram_count_sessions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE delta INTEGER := 0;
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.is_active THEN delta := 1; END IF;
  ELSIF TG_OP = 'DELETE' THEN
    IF OLD.is_active THEN delta := -1; END IF;
  ELSIF NEW.is_active IS DISTINCT FROM OLD.is_active THEN
    delta := CASE WHEN NEW.is_active THEN 1 ELSE -1 END;
  END IF;
  IF delta <> 0 THEN
    UPDATE workspaces SET active_session_count = active_session_count + delta
    WHERE id = COALESCE(NEW.workspace_id, OLD.workspace_id);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER sessions_count AFTER INSERT OR DELETE OR UPDATE OF is_active ON sessions
  FOR EACH ROW EXECUTE FUNCTION engram_count_sessions();
