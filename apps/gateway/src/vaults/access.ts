/**
 * The tenant's vaults and credentials, held by the credential vault proxy. The proxy trusts the
 * gateway (role admin) with every vault; tenants are the gateway's to enforce: every call first
 * reads the vault and answers 404 unless it is the caller's, exactly as for a vault that does
 * not exist. A gateway deployed without a proxy answers every call with
 * `credential_vault_unconfigured`.
 */
import type {
  Credential,
  PutCredentialRequest,
  UpdateCredentialRequest,
  ValidateMcpCredentialResponse,
  Vault,
} from "@metaharness/proto";
import { ApiError, notFound } from "../errors/api-error.js";
import type { CredentialProxyRpc } from "../clients.js";
import { proxied } from "./proxy-errors.js";

export function unconfigured(field?: string): ApiError {
  const what = "this deployment runs the gateway without a credential vault proxy (MH_CREDENTIAL_PROXY_ADDR), so vaults are not available";
  return new ApiError("credential_vault_unconfigured", field === undefined ? `${what[0]!.toUpperCase()}${what.slice(1)}.` : `${field}: ${what}.`);
}

/** `call`, with a not_found answer said as "no such <kind>" (the same for another tenant's object). */
async function orNotFound<T>(call: Promise<T>, kind: string, id: string): Promise<T> {
  try {
    return await proxied(call);
  } catch (err) {
    if (err instanceof ApiError && err.error === "not_found") throw notFound(kind, id);
    throw err;
  }
}

export class VaultAccess {
  constructor(private readonly rpc: CredentialProxyRpc | undefined) {}

  get configured(): boolean {
    return this.rpc !== undefined;
  }

  private proxy(): CredentialProxyRpc {
    if (this.rpc === undefined) throw unconfigured();
    return this.rpc;
  }

  /** The tenant's vault; 404 for a vault of another tenant, as for one that does not exist. */
  async vault(tenant: string, vaultId: string): Promise<Vault> {
    const { vault } = await orNotFound(this.proxy().getVault({ vaultId }), "vault", vaultId);
    // A session's own vault (its repositories' tokens, sessions/repository-tokens.ts) is no tenant vault.
    if (vault === undefined || vault.tenant !== tenant || vault.sessionId !== "") throw notFound("vault", vaultId);
    return vault;
  }

  async createVault(tenant: string, displayName: string, metadata: Record<string, string>): Promise<Vault> {
    const { vault } = await proxied(this.proxy().createVault({ tenant, displayName, metadata, sessionId: "" }));
    return required(vault);
  }

  listVaults(tenant: string, q: { pageSize: number; pageToken: string; includeArchived: boolean }): Promise<{ vaults: Vault[]; nextPageToken: string }> {
    return proxied(this.proxy().listVaults({ tenant, ...q }));
  }

  async updateVault(tenant: string, vaultId: string, change: { displayName: string | undefined; upsert: Record<string, string>; remove: string[] }): Promise<Vault> {
    await this.vault(tenant, vaultId);
    const { vault } = await orNotFound(
      this.proxy().updateVault({ vaultId, displayName: change.displayName, metadata: { upsert: change.upsert, remove: change.remove } }),
      "vault",
      vaultId,
    );
    return required(vault);
  }

  async archiveVault(tenant: string, vaultId: string): Promise<Vault> {
    await this.vault(tenant, vaultId);
    return required((await orNotFound(this.proxy().archiveVault({ vaultId }), "vault", vaultId)).vault);
  }

  async deleteVault(tenant: string, vaultId: string): Promise<void> {
    await this.vault(tenant, vaultId);
    await orNotFound(this.proxy().deleteVault({ vaultId }), "vault", vaultId);
  }

  async createCredential(tenant: string, req: PutCredentialRequest): Promise<Credential> {
    await this.vault(tenant, req.vaultId);
    return required((await proxied(this.proxy().putCredential(req))).credential);
  }

  async credential(tenant: string, vaultId: string, credentialId: string): Promise<Credential> {
    await this.vault(tenant, vaultId);
    return required((await orNotFound(this.proxy().getCredential({ vaultId, credentialId }), "credential", credentialId)).credential);
  }

  async listCredentials(
    tenant: string,
    vaultId: string,
    q: { pageSize: number; pageToken: string; includeArchived: boolean },
  ): Promise<{ credentials: Credential[]; nextPageToken: string }> {
    await this.vault(tenant, vaultId);
    return orNotFound(this.proxy().listCredentials({ vaultId, ...q }), "vault", vaultId);
  }

  async updateCredential(tenant: string, req: UpdateCredentialRequest): Promise<Credential> {
    await this.vault(tenant, req.vaultId);
    return required((await orNotFound(this.proxy().updateCredential(req), "credential", req.credentialId)).credential);
  }

  async archiveCredential(tenant: string, vaultId: string, credentialId: string): Promise<Credential> {
    await this.vault(tenant, vaultId);
    return required((await orNotFound(this.proxy().archiveCredential({ vaultId, credentialId }), "credential", credentialId)).credential);
  }

  async deleteCredential(tenant: string, vaultId: string, credentialId: string): Promise<void> {
    await this.vault(tenant, vaultId);
    await orNotFound(this.proxy().deleteCredential({ vaultId, credentialId }), "credential", credentialId);
  }

  async validateCredential(tenant: string, vaultId: string, credentialId: string): Promise<ValidateMcpCredentialResponse> {
    await this.vault(tenant, vaultId);
    return orNotFound(this.proxy().validateMcpCredential({ vaultId, credentialId }), "credential", credentialId);
  }
}

function required<T>(value: T | undefined): T {
  if (value === undefined) throw new ApiError("internal", "The credential vault proxy answered without the object.");
  return value;
}
