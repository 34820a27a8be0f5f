-- Where the tokens of a session's repository resources are kept: the session's own vault in the
-- credential vault proxy (created when the first token arrives) and, for each resource with a
-- token, the id of its git_token credential there. Ids only: a token is never stored here.
ALTER TABLE gw_sessions ADD COLUMN credential_vault_id text;
ALTER TABLE gw_sessions ADD COLUMN resource_credentials jsonb NOT NULL DEFAULT '{}'::jsonb;
