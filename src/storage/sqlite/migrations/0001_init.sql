-- Timestamps are INTEGER microseconds since the Unix epoch (UTC); JSON objects are TEXT.
-- `pk` is the private row id: it breaks created_at ties in list order and is never returned.

CREATE TABLE workspaces (
  pk INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  metadata TEXT NOT NULL DEFAULT '{}',
  configuration TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  -- kept by triggers so unfiltered list pages report `total` without counting rows
  peer_count INTEGER NOT NULL DEFAULT 0,
  active_session_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX workspaces_created ON workspaces (created_at, pk);

CREATE TABLE peers (
  pk INTEGER PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT '{}',
  configuration TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  UNIQUE (workspace_id, id)
);
CREATE INDEX peers_workspace_created ON peers (workspace_id, created_at, pk);

CREATE TABLE sessions (
  pk INTEGER PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id TEXT NOT NULL,
  is_active INTEGER NOT NULL DEFAULT 1,
  metadata TEXT NOT NULL DEFAULT '{}',
  configuration TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  UNIQUE (workspace_id, id)
);
CREATE INDEX sessions_workspace_active_created ON sessions (workspace_id, is_active, created_at, pk);

-- One row per (session, peer), kept after the peer leaves (left_at set).
CREATE TABLE session_peers (
  workspace_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  peer_id TEXT NOT NULL,
  configuration TEXT NOT NULL DEFAULT '{}',
  joined_at INTEGER NOT NULL,
  left_at INTEGER,
  PRIMARY KEY (workspace_id, session_id, peer_id),
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE,
  FOREIGN KEY (workspace_id, peer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX session_peers_peer ON session_peers (workspace_id, peer_id);

CREATE TABLE webhook_endpoints (
  pk INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (workspace_id, url)
);

-- Messages: designed now so sessions, clone and purge account for them.
CREATE TABLE messages (
  pk INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  peer_id TEXT NOT NULL,
  content TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT '{}',
  token_count INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE,
  FOREIGN KEY (workspace_id, peer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX messages_session_seq ON messages (workspace_id, session_id, pk);
CREATE INDEX messages_peer ON messages (workspace_id, peer_id, pk);

CREATE TRIGGER peers_count_insert AFTER INSERT ON peers BEGIN
  UPDATE workspaces SET peer_count = peer_count + 1 WHERE id = NEW.workspace_id;
END;
CREATE TRIGGER peers_count_delete AFTER DELETE ON peers BEGIN
  UPDATE workspaces SET peer_count = peer_count - 1 WHERE id = OLD.workspace_id;
END;
CREATE TRIGGER sessions_count_insert AFTER INSERT ON sessions WHEN NEW.is_active = 1 BEGIN
  UPDATE workspaces SET active_session_count = active_session_count + 1 WHERE id = NEW.workspace_id;
END;
CREATE TRIGGER sessions_count_delete AFTER DELETE ON sessions WHEN OLD.is_active = 1 BEGIN
  UPDATE workspaces SET active_session_count = active_session_count - 1 WHERE id = OLD.workspace_id;
END;
CREATE TRIGGER sessions_count_update AFTER UPDATE OF is_active ON sessions WHEN NEW.is_active <> OLD.is_active BEGIN
  UPDATE workspaces SET active_session_count = active_session_count + (CASE WHEN NEW.is_active = 1 THEN 1 ELSE -1 END)
  WHERE id = NEW.workspace_id;
END;
