/**
 * What route modules share: the router, the stores and the clients of the services behind the
 * gateway. One object, passed to each module's register function.
 */
import type { Db } from "@metaharness/db";
import type { CredentialVaultProxyService, HarnessService, SessionLogService } from "@metaharness/proto";
import type { PromiseClient } from "@metaharness/service-kit";
import type { Router } from "./router.js";
import type { PackageLayers } from "../environments/package-layers.js";
import type { AgentStore } from "../agents/store.js";
import type { EnvironmentKeyStore } from "../environments/key-store.js";
import type { EnvironmentStore } from "../environments/store.js";
import type { SessionStore } from "../sessions/store.js";
import type { StreamRegistry } from "../events/stream-registry.js";
import type { WorkQueue } from "../work/queue.js";
import type { WorkSignals } from "../work/signals.js";

export type SessionLogRpc = PromiseClient<typeof SessionLogService>;
export type HarnessRpc = PromiseClient<typeof HarnessService>;
export type CredentialProxyRpc = PromiseClient<typeof CredentialVaultProxyService>;

export interface RouteContext {
  readonly router: Router;
  readonly agents: AgentStore;
  readonly environments: EnvironmentStore;
  readonly environmentKeys: EnvironmentKeyStore;
  readonly sessions: SessionStore;
  /** The gateway's database, for work item leases (work/lease.ts). */
  readonly db: Db;
  readonly work: WorkQueue;
  readonly workSignals: WorkSignals;
  /** The lease a heartbeat extends unless it asks for another (MH_GATEWAY_WORK_LEASE_TTL_SECONDS). */
  readonly workLeaseTtlSeconds: number;
  readonly log: SessionLogRpc;
  readonly harness: HarnessRpc;
  /** Undefined when this deployment runs without a credential vault proxy. */
  readonly credentials: CredentialProxyRpc | undefined;
  /** Environments' package layers, built by the sandbox broker. */
  readonly layers: PackageLayers;
  readonly streams: StreamRegistry;
  readonly wakeTimeoutMs: number;
  readonly heartbeatMs: number;
  /** The clock; tests may pin it. */
  now(): Date;
}
