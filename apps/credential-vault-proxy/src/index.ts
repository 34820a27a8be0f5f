/**
 * The credential vault proxy as a library: tests and the single-process `mh dev` start it in-process.
 */
export { startCredentialProxy, type CredentialProxyHandle, type StartOptions } from "./app.js";
export { loadConfig, type CredentialProxyConfig } from "./config.js";
export { newMasterKeyText, masterKeyFrom, MASTER_KEY_BYTES } from "./crypto/master-keys.js";
export { POLICY, ROLES, type Role } from "./auth/policy.js";
export type { Refresher, Refreshed } from "./mcp/oauth-refresh.js";
export { refreshGrant } from "./mcp/oauth-refresh.js";
