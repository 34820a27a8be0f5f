-- The credential vault: vaults, their credentials (config in clear, secret encrypted with a
-- per-credential data key that a master key wraps), and the remotes (git, egress) opened for
-- sandboxes. Applied once, in a transaction, by @metaharness/db's migrate().

CREATE TABLE vaults (
  vault_id     text PRIMARY KEY,
  -- Keyset for ListVaults paging (oldest first).
  ord          bigserial NOT NULL UNIQUE,
  tenant       text NOT NULL DEFAULT '',
  display_name text NOT NULL DEFAULT '',
  metadata     jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX vaults_tenant ON vaults (tenant, ord);

CREATE TABLE credentials (
  credential_id     text PRIMARY KEY,
  vault_id          text NOT NULL REFERENCES vaults (vault_id) ON DELETE CASCADE,
  -- metaharness.v1.CredentialType: 1 git_token, 2 mcp_oauth, 3 http_bearer.
  type              smallint NOT NULL,
  display_name      text NOT NULL DEFAULT '',
  -- The non-secret configuration, as the proto message's JSON (GitTokenCredential, ...).
  config            jsonb NOT NULL,
  -- AES-256-GCM: the secret under the data key, the data key under master key master_key_id.
  secret_ciphertext bytea NOT NULL,
  wrapped_key       bytea NOT NULL,
  master_key_id     text NOT NULL,
  -- Grows each time the secret changes (a put, a token refresh): a refresh triggered by a token
  -- the server rejected happens only if nobody replaced that token meanwhile.
  secret_version    integer NOT NULL DEFAULT 1,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX credentials_vault ON credentials (vault_id, type);
CREATE INDEX credentials_master_key ON credentials (master_key_id);

CREATE TABLE remotes (
  -- sha256 of the capability the broker holds; the capability itself is never stored.
  capability_hash bytea PRIMARY KEY,
  -- "git" or "egress".
  kind            text NOT NULL,
  session_id      text NOT NULL,
  sandbox_id      text NOT NULL,
  -- Repository URLs (git) or allowed host patterns (egress).
  scope           jsonb NOT NULL,
  expires_at      timestamptz NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX remotes_sandbox ON remotes (session_id, sandbox_id);
CREATE INDEX remotes_expiry ON remotes (expires_at);
