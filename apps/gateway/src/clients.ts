/**
 * The gateway's clients of the services behind it, as the nouns that call them type them. app.ts
 * makes them (or takes them from an embedding process); each function receives only the ones it
 * calls.
 */
import type { CredentialVaultProxyService, HarnessService, SandboxBrokerService, SessionLogService } from "@metaharness/proto";
import type { PromiseClient } from "@metaharness/service-kit/grpc";

export type SessionLogRpc = PromiseClient<typeof SessionLogService>;
export type HarnessRpc = PromiseClient<typeof HarnessService>;
export type CredentialProxyRpc = PromiseClient<typeof CredentialVaultProxyService>;
export type SandboxBrokerRpc = PromiseClient<typeof SandboxBrokerService>;
