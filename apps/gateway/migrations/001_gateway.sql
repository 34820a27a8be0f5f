-- The gateway's own objects: API keys, agents with their versions, environments, and the HTTP
-- view of sessions (title, metadata, resources, the agent snapshot as the API shows it). Events and
-- session status live in the session log. Tables are prefixed gw_ so the gateway can share a
-- database with the session log. Timestamps are written by the gateway (millisecond precision), so
-- pagination cursors that carry them compare exactly.

CREATE TABLE gw_api_keys (
  key_hash    text PRIMARY KEY,          -- sha256 of the key, hex; the key itself is never stored
  tenant      text NOT NULL,
  source      text NOT NULL,             -- 'config' (MH_GATEWAY_API_KEYS) or 'admin'
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);

CREATE TABLE gw_agents (
  agent_id     text PRIMARY KEY,
  tenant       text NOT NULL,
  version      integer NOT NULL,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  archived_at  timestamptz
);
CREATE INDEX gw_agents_by_tenant ON gw_agents (tenant, created_at, agent_id);

-- One row per version: the agent's configurable fields as the API returns them.
CREATE TABLE gw_agent_versions (
  agent_id    text NOT NULL REFERENCES gw_agents (agent_id) ON DELETE CASCADE,
  version     integer NOT NULL,
  body        jsonb NOT NULL,
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (agent_id, version)
);

CREATE TABLE gw_environments (
  environment_id  text PRIMARY KEY,
  tenant          text NOT NULL,
  body            jsonb NOT NULL,        -- name, description, config, metadata, scope
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  archived_at     timestamptz
);
CREATE INDEX gw_environments_by_tenant ON gw_environments (tenant, created_at, environment_id);

CREATE TABLE gw_sessions (
  session_id        text PRIMARY KEY,
  tenant            text NOT NULL,
  agent_id          text NOT NULL,
  agent_version     integer NOT NULL,
  agent             jsonb NOT NULL,      -- the agent snapshot (BetaManagedAgentsSessionAgent)
  environment_id    text NOT NULL,
  environment_type  text NOT NULL,       -- 'cloud' or 'self_hosted', as when the session was created
  title             text,
  metadata          jsonb NOT NULL,
  resources         jsonb NOT NULL,
  vault_ids         jsonb NOT NULL,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  archived_at       timestamptz,
  -- Usage and activity folded from the session log's events up to usage_through_seq.
  usage_through_seq            bigint NOT NULL DEFAULT 0,
  input_tokens                 bigint NOT NULL DEFAULT 0,
  output_tokens                bigint NOT NULL DEFAULT 0,
  cache_creation_input_tokens  bigint NOT NULL DEFAULT 0,
  cache_read_input_tokens      bigint NOT NULL DEFAULT 0,
  active_ms                    bigint NOT NULL DEFAULT 0,
  running_since                timestamptz,
  ended_at                     timestamptz
);
CREATE INDEX gw_sessions_by_tenant ON gw_sessions (tenant, created_at, session_id);
CREATE INDEX gw_sessions_by_agent ON gw_sessions (tenant, agent_id, agent_version);
