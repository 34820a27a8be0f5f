/**
 * Which role may call which RPC: least privilege, written once. The admin (the gateway) manages
 * vaults and credentials and rotates the master key; the harness calls MCP tools for a session;
 * the broker opens git and egress paths for a sandbox. No role reads a secret, because no RPC
 * returns one. The record is keyed by the generated service definition, so a new RPC does not
 * compile until it is given its roles here.
 */
import type { CredentialVaultProxyService } from "@metaharness/proto";
import type { Policy } from "@metaharness/service-kit/auth";

/** The roles a service token file of the proxy may give its callers. */
export const ROLES = ["admin", "harness", "broker"] as const;
export type Role = (typeof ROLES)[number];

export type RpcName = keyof CredentialVaultProxyService;

export const POLICY: Policy<RpcName, Role> = {
  createVault: ["admin"],
  getVault: ["admin"],
  listVaults: ["admin"],
  updateVault: ["admin"],
  archiveVault: ["admin"],
  deleteVault: ["admin"],
  putCredential: ["admin"],
  getCredential: ["admin"],
  listCredentials: ["admin"],
  updateCredential: ["admin"],
  archiveCredential: ["admin"],
  deleteCredential: ["admin"],
  validateMcpCredential: ["admin"],
  rotateMasterKey: ["admin"],
  listMcpTools: ["harness"],
  callMcpTool: ["harness"],
  openGitRemote: ["broker"],
  closeSandboxRemotes: ["broker"],
  openEgress: ["broker"],
};
