/**
 * What route modules share: the router, the stores and the clients of the services behind the
 * gateway. One object, passed to each module's register function.
 */
import type { CredentialVaultProxyService, HarnessService, SessionLogService } from "@metaharness/proto";
import type { PromiseClient } from "@metaharness/service-kit";
import type { Router } from "../http/router.js";
import type { AgentStore } from "../store/agents.js";
import type { EnvironmentStore } from "../store/environments.js";
import type { SessionStore } from "../store/sessions.js";
import type { StreamRegistry } from "../stream/registry.js";

export type SessionLogRpc = PromiseClient<typeof SessionLogService>;
export type HarnessRpc = PromiseClient<typeof HarnessService>;
export type CredentialProxyRpc = PromiseClient<typeof CredentialVaultProxyService>;

export interface RouteContext {
  readonly router: Router;
  readonly agents: AgentStore;
  readonly environments: EnvironmentStore;
  readonly sessions: SessionStore;
  readonly log: SessionLogRpc;
  readonly harness: HarnessRpc;
  /** Undefined when this deployment runs without a credential vault proxy. */
  readonly credentials: CredentialProxyRpc | undefined;
  readonly streams: StreamRegistry;
  readonly wakeTimeoutMs: number;
  readonly heartbeatMs: number;
  /** The clock; tests may pin it. */
  now(): Date;
}
