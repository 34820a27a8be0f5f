-- What the Managed Agents API needs of vaults and credentials: when each last changed, archiving
-- (an archived credential keeps its row, its secret is erased), credential metadata, and a keyset
-- for paging a vault's credentials.

ALTER TABLE vaults ADD COLUMN updated_at timestamptz;
UPDATE vaults SET updated_at = created_at;
ALTER TABLE vaults ALTER COLUMN updated_at SET NOT NULL;
ALTER TABLE vaults ALTER COLUMN updated_at SET DEFAULT now();
ALTER TABLE vaults ADD COLUMN archived_at timestamptz;

ALTER TABLE credentials ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE credentials ADD COLUMN archived_at timestamptz;
-- Keyset for ListCredentials paging (oldest first); existing rows are numbered as they come.
ALTER TABLE credentials ADD COLUMN ord bigserial NOT NULL;
CREATE INDEX credentials_vault_ord ON credentials (vault_id, ord);
