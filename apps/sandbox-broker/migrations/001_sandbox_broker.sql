-- The sandbox broker's records: every sandbox it provisioned (so after a restart it knows which
-- are gone and says so) and the ledger of tool calls (so a repeated call_id returns the first
-- outcome and runs nothing). Applied once, in a transaction, by src/db/migrate.ts.

CREATE TABLE sandboxes (
  sandbox_id   text PRIMARY KEY,
  session_id   text NOT NULL,
  -- The broker process family that runs it (MH_BROKER_ID): only it can reach the process.
  broker_id    text NOT NULL,
  -- "bubblewrap" or "external:<kind>".
  driver       text NOT NULL,
  -- For external hands, the hand the sandbox is bound to.
  hand_id      text NOT NULL DEFAULT '',
  -- metaharness.v1.SandboxState: 1 ready, 2 released, 3 lost.
  state        smallint NOT NULL CHECK (state IN (1, 2, 3)),
  -- metaharness.v1.Resources with defaults filled in and file contents left out.
  resources    bytea NOT NULL,
  -- How the limits are enforced (Sandbox.limits).
  limits       text NOT NULL DEFAULT '',
  reason       text NOT NULL DEFAULT '',
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz NOT NULL DEFAULT now(),
  ended_at     timestamptz
);

CREATE INDEX sandboxes_by_session ON sandboxes (session_id, created_at);
CREATE INDEX sandboxes_ready_by_broker ON sandboxes (broker_id) WHERE state = 1;

CREATE TABLE sandbox_calls (
  sandbox_id  text NOT NULL REFERENCES sandboxes (sandbox_id) ON DELETE CASCADE,
  -- The tool_use_id: the idempotency key of the call.
  call_id     text NOT NULL,
  session_id  text NOT NULL,
  name        text NOT NULL,
  status      text NOT NULL CHECK (status IN ('running', 'done')),
  -- The broker process that ran it; a running call of an earlier incarnation was interrupted.
  incarnation text NOT NULL,
  -- UTF-8 bytes, not text: command output may hold NUL, which text columns refuse.
  output      bytea NOT NULL DEFAULT ''::bytea,
  is_error    boolean NOT NULL DEFAULT false,
  exit_code   integer NOT NULL DEFAULT 0,
  duration_ms integer NOT NULL DEFAULT 0,
  truncated   boolean NOT NULL DEFAULT false,
  started_at  timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  PRIMARY KEY (sandbox_id, call_id)
);

CREATE INDEX sandbox_calls_running ON sandbox_calls (sandbox_id) WHERE status = 'running';
