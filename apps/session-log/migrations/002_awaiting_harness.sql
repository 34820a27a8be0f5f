-- Whether the session has input no harness has answered yet: set by every user.* event, cleared
-- when a harness goes idle. With status RUNNING and no live lease it finds sessions whose harness
-- died (ListSessions orphaned=true), so another one can resume them.
ALTER TABLE sessions ADD COLUMN awaiting_harness boolean NOT NULL DEFAULT false;
CREATE INDEX sessions_orphan_candidates ON sessions (lease_expires_at)
  WHERE status = 2 OR awaiting_harness;
