-- Sessions' own vaults: where the gateway keeps the tokens of a session's repository resources.
-- Only that session draws credentials from its vault (whatever vault_ids other sessions name), and
-- ListVaults leaves them out, so a tenant's own vaults are not mixed with them. One per session.
ALTER TABLE vaults ADD COLUMN session_id text NOT NULL DEFAULT '';
CREATE UNIQUE INDEX vaults_session ON vaults (session_id) WHERE session_id <> '';
