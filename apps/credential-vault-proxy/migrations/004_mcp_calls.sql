-- The ledger of MCP tool calls: CallMcpTool is idempotent by (session_id, call_id), the id of the
-- harness's tool-use event, so a harness that takes a session over after another died never makes
-- the same call twice. A call is claimed (status 'running', by the proxy process that runs it:
-- owner) before it goes upstream, and holds its outcome once done. While it runs, its owner
-- touches heartbeat_at every few seconds: a running call whose heartbeat stopped belongs to a dead
-- proxy. A call whose attempt failed before it was sent is deleted, so it can be tried again.
-- Rows older than the retention are deleted by the proxy.
CREATE TABLE mcp_calls (
  session_id  text        NOT NULL,
  call_id     text        NOT NULL,
  server_url  text        NOT NULL,
  name        text        NOT NULL,
  status      text        NOT NULL CHECK (status IN ('running', 'done')),
  owner       text        NOT NULL,
  result_text jsonb,
  is_error    boolean     NOT NULL DEFAULT false,
  started_at  timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  PRIMARY KEY (session_id, call_id)
);
CREATE INDEX mcp_calls_started ON mcp_calls (started_at);
CREATE INDEX mcp_calls_running ON mcp_calls (owner) WHERE status = 'running';
