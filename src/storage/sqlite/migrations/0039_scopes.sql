-- Scopes (shared/reference/scopes.md): a scope named x is a peer named `scope.x` whose `kind` is
-- 'scope' (NULL for every ordinary peer). The kind is what makes it a scope: a legacy peer that
-- holds such a name without it is an ordinary peer.
ALTER TABLE peers ADD COLUMN kind TEXT CHECK (kind IS NULL OR kind = 'scope');

-- peer_count now counts ordinary peers only (the default peers list leaves scopes out) and
-- scope_count the scopes, so both lists' totals stay a row read.
ALTER TABLE workspaces ADD COLUMN scope_count INTEGER NOT NULL DEFAULT 0;
DROP TRIGGER peers_count_insert;
DROP TRIGGER peers_count_delete;
CREATE TRIGGER peers_count_insert AFTER INSERT ON peers BEGIN
  UPDATE workspaces SET
    peer_count = peer_count + (NEW.kind IS NULL),
    scope_count = scope_count + (NEW.kind IS NOT NULL),
    peers_version = peers_version + 1
  WHERE id = NEW.workspace_id;
END;
CREATE TRIGGER peers_count_delete AFTER DELETE ON peers BEGIN
  UPDATE workspaces SET
    peer_count = peer_count - (OLD.kind IS NULL),
    scope_count = scope_count - (OLD.kind IS NOT NULL),
    peers_version = peers_version + 1
  WHERE id = OLD.workspace_id;
END;
CREATE INDEX peers_kind_created ON peers (workspace_id, kind, created_at, pk) WHERE kind IS NOT NULL;

-- A scope's copies of conclusions made by a backfill name the conclusion they copy.
ALTER TABLE conclusions ADD COLUMN copied_from TEXT;

-- The backfill state of each session a scope was asked to copy (GET .../scopes/{x}/status).
CREATE TABLE scope_backfills (
  workspace_id TEXT NOT NULL,
  scope_peer_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'completed', 'failed')),
  updated_at INTEGER NOT NULL,
  docs_copied INTEGER,
  PRIMARY KEY (workspace_id, scope_peer_id, session_id),
  FOREIGN KEY (workspace_id, scope_peer_id) REFERENCES peers (workspace_id, id) ON DELETE CASCADE,
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX scope_backfills_session ON scope_backfills (workspace_id, session_id);
