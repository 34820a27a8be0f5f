-- The session log: sessions, their append-only events, and the transactional outbox that the
-- relay drains to Kafka. Applied once, in a transaction, by src/db/migrate.ts.

CREATE TABLE sessions (
  session_id       text PRIMARY KEY,
  -- Keyset for ListSessions paging (newest first) without comparing timestamps.
  ord              bigserial NOT NULL UNIQUE,
  tenant           text NOT NULL DEFAULT '',
  labels           jsonb NOT NULL DEFAULT '{}'::jsonb,
  metadata         jsonb NOT NULL,
  -- metaharness.v1.SessionStatus: 1 idle, 2 running, 3 terminated.
  status           smallint NOT NULL DEFAULT 1,
  last_seq         bigint NOT NULL DEFAULT 0,
  lease_holder     text,
  lease_epoch      bigint NOT NULL DEFAULT 0,
  lease_expires_at timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX sessions_by_tenant ON sessions (tenant, ord DESC);
CREATE INDEX sessions_by_labels ON sessions USING gin (labels jsonb_path_ops);

CREATE TABLE events (
  session_id text NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
  seq        bigint NOT NULL,
  event_id   text NOT NULL,
  type       text NOT NULL,
  created_at timestamptz NOT NULL,
  -- The whole metaharness.v1.Event, protobuf-encoded, exactly as served and published.
  body       bytea NOT NULL,
  PRIMARY KEY (session_id, seq),
  UNIQUE (session_id, event_id)
);

-- Filtered slices (GetEvents with types) stay proportional to the slice.
CREATE INDEX events_by_type ON events (session_id, type, seq);

CREATE TABLE outbox (
  id         bigserial PRIMARY KEY,
  -- hash(session_id) mod the relay's shard count: a relay instance owns whole shards, so one
  -- session's events are always published by one relay, in order.
  shard      smallint NOT NULL,
  session_id text NOT NULL,
  seq        bigint NOT NULL
);

CREATE INDEX outbox_by_shard ON outbox (shard, id);
