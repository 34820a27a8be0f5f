/**
 * Everything the broker's operations share, wired once in app.ts. Operations are plain functions
 * of this context (provision.ts, execute.ts, manage.ts), so each file holds one of them.
 */
import type { Queryable } from "@metaharness/db";
import { MhError } from "@metaharness/errors";
import { requireSessionId } from "@metaharness/events";
import type { Logger } from "@metaharness/service-kit/logging";
import type { SandboxBrokerConfig } from "../config.js";
import type { CallOutcome } from "../db/calls.js";
import type { Launcher } from "../driver/launcher.js";
import { LocalSandbox } from "../driver/local-sandbox.js";
import type { SandboxEventSink } from "../events/sink.js";
import type { HandRegistry } from "../hands/registry.js";
import type { WarmPool } from "../pool/warm-pool.js";
import type { Limits } from "../resources.js";
import type { ProxyConnection } from "../remotes/proxy-client.js";
import type { LiveSandboxes, Revived } from "./live.js";
import type { Layers } from "../layers/layers.js";
import type { LayerMount } from "../layers/mount.js";
import type { Workspaces } from "../workspaces/open-store.js";

export interface BrokerContext {
  readonly config: SandboxBrokerConfig;
  readonly pool: Queryable;
  readonly logger: Logger;
  readonly launcher: Launcher;
  readonly live: LiveSandboxes;
  readonly hands: HandRegistry;
  readonly warm: WarmPool;
  readonly events: SandboxEventSink;
  /** This process among the broker's lives: a call "running" under another one was interrupted. */
  readonly incarnation: string;
  /** Calls in flight in this process, by "<sandbox>/<call>", so a repeat waits for the first. */
  readonly inflight: Map<string, Promise<CallOutcome>>;
  /** The credential vault proxy (repositories, ALLOWLIST egress); undefined when not configured. */
  readonly proxy: ProxyConnection | undefined;
  /** Ledger writes not yet done (answers do not wait for them; shutdown does). */
  readonly pendingWrites: Set<Promise<void>>;
  /** Environment package layers (layers/). */
  readonly layers: Layers;
  /** Workspace snapshots (workspace.ts, workspaces/); undefined when MH_WORKSPACE_STORE is off. */
  readonly workspaces: Workspaces | undefined;
  /** Revivals under way, by sandbox id (revive.ts). */
  readonly reviving: Map<string, Promise<Revived | undefined>>;
}

export function startLocalSandbox(
  ctx: Omit<BrokerContext, "warm" | "inflight" | "pendingWrites" | "layers" | "workspaces" | "reviving">,
  id: string,
  limits: Limits,
  layer?: LayerMount,
): Promise<LocalSandbox> {
  const { config } = ctx;
  return LocalSandbox.start({
    id,
    limits,
    launcher: ctx.launcher,
    logger: ctx.logger,
    startTimeoutMs: config.startTimeoutMs,
    maxConcurrentCalls: config.maxConcurrentCalls,
    maxTimeoutMs: config.maxCallTimeoutMs,
    outputCapBytes: config.outputCapBytes,
    maxFileBytes: config.maxFileBytes,
    ...(layer === undefined ? {} : { layer }),
  });
}

/**
 * A session id a sandbox may be given to: well formed, and not ended as far as the session log
 * says (terminated, or unknown to it). A log that cannot answer now does not hold provisioning
 * up: the sweep of ended sessions (session-ends.ts) releases such a sandbox later.
 */
export async function requireLiveSession(ctx: BrokerContext, value: string, field: string): Promise<string> {
  const sessionId = requireSessionId(value, field);
  if ((await ctx.events.sessionEnded(sessionId)) === true) {
    throw new MhError("FAILED_PRECONDITION", `${field}: session ${sessionId} has ended (terminated, or unknown to the session log): it takes no sandbox`, { field });
  }
  return sessionId;
}

export function requireField(value: string, field: string): string {
  if (value === "") throw new MhError("INVALID_ARGUMENT", `${field}: required`, { field });
  if (value.length > 256) throw new MhError("INVALID_ARGUMENT", `${field}: at most 256 characters`, { field });
  // Checked before anything starts: Postgres cannot store it, and Provision writes its row last.
  if (value.includes("\u0000")) throw new MhError("INVALID_ARGUMENT", `${field}: must not hold a NUL character`, { field });
  return value;
}
