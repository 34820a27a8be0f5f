-- Self-hosted environments: the keys their workers hold, and the work queue they poll. A work
-- item is a session needing hands: queued when a self-hosted session gets input and has no live
-- item, claimed by a poll (FOR UPDATE SKIP LOCKED, so instances and workers never hand one out
-- twice), acknowledged, then kept by heartbeats; a lease that lapses makes it pollable again.

CREATE TABLE gw_environment_keys (
  key_id          text PRIMARY KEY,          -- envkey_...
  key_hash        text NOT NULL UNIQUE,      -- sha256 of the key, hex; the key itself is never stored
  environment_id  text NOT NULL REFERENCES gw_environments (environment_id) ON DELETE CASCADE,
  tenant          text NOT NULL,
  created_at      timestamptz NOT NULL,
  revoked_at      timestamptz
);
CREATE INDEX gw_environment_keys_by_environment ON gw_environment_keys (environment_id);

CREATE TABLE gw_work (
  work_id              text PRIMARY KEY,
  tenant               text NOT NULL,
  environment_id       text NOT NULL REFERENCES gw_environments (environment_id) ON DELETE CASCADE,
  session_id           text NOT NULL,
  state                text NOT NULL,      -- queued, starting, active, stopping, stopped
  metadata             jsonb NOT NULL,
  created_at           timestamptz NOT NULL,
  acknowledged_at      timestamptz,
  started_at           timestamptz,
  latest_heartbeat_at  timestamptz,
  stop_requested_at    timestamptz,
  stopped_at           timestamptz,
  delivery             integer NOT NULL DEFAULT 0,  -- how many polls handed it out
  delivered_at         timestamptz,                 -- when the current delivery was handed out
  worker_id            text,                        -- Anthropic-Worker-ID of that poll
  lease_expires_at     timestamptz,
  lease_ttl_seconds    integer
);
-- What a poll may claim, oldest first.
CREATE INDEX gw_work_queue ON gw_work (environment_id, created_at, work_id) WHERE state IN ('queued', 'starting', 'active');
CREATE INDEX gw_work_by_environment ON gw_work (environment_id, created_at, work_id);
-- At most one live item per session: the session's hands.
CREATE UNIQUE INDEX gw_work_live_session ON gw_work (session_id) WHERE state IN ('queued', 'starting', 'active');

-- The sessions tokens handed out with each delivery (in the item's `secret`). A token of an
-- earlier delivery still names its item, so its heartbeat is told the lease was lost (412).
CREATE TABLE gw_work_tokens (
  token_hash  text PRIMARY KEY,
  work_id     text NOT NULL REFERENCES gw_work (work_id) ON DELETE CASCADE,
  delivery    integer NOT NULL,
  created_at  timestamptz NOT NULL
);

-- Workers that polled lately (Anthropic-Worker-ID), for the queue's stats.
CREATE TABLE gw_work_pollers (
  environment_id  text NOT NULL REFERENCES gw_environments (environment_id) ON DELETE CASCADE,
  worker_id       text NOT NULL,
  last_poll_at    timestamptz NOT NULL,
  PRIMARY KEY (environment_id, worker_id)
);
