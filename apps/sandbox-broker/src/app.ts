/**
 * Wires the sandbox broker: Postgres and migrations, recovery from the previous run (its sandboxes
 * are gone: LOST, "broker restarted"; its running calls were interrupted), the bubblewrap
 * launcher, hands, warm pool, reaper and the gRPC server. Used by main.ts and by tests, which
 * start it in-process on port 0.
 */
import { migrate, openDb } from "@metaharness/db";
import { randomBytes } from "node:crypto";
import { MhError } from "@metaharness/errors";
import { SandboxBrokerService, SandboxState } from "@metaharness/proto";
import { ServiceTokens } from "@metaharness/service-kit/auth";
import { loadGrpcTls, readServiceToken, startGrpcServer, type GrpcTls } from "@metaharness/service-kit/grpc";
import { Cleanups } from "@metaharness/service-kit/lifecycle";
import type { Logger } from "@metaharness/service-kit/logging";
import { ROLES } from "./auth/policy.js";
import { startLocalSandbox, type BrokerContext } from "./broker/context.js";
import { LiveSandboxes } from "./broker/live.js";
import { Reaper } from "./broker/reaper.js";
import { SessionEnds } from "./broker/session-ends.js";
import type { SandboxBrokerConfig } from "./config.js";
import { interruptAfterRestart } from "./db/calls.js";
import { loseAfterRestart } from "./db/sandboxes.js";
import { sandboxLost } from "./metrics.js";
import { Launcher } from "./driver/launcher.js";
import { LocalSandbox } from "./driver/local-sandbox.js";
import { NO_EVENTS, SessionLogSink, type SandboxEventSink } from "./events/sink.js";
import { HandRegistry } from "./hands/registry.js";
import { WarmPool } from "./pool/warm-pool.js";
import { Layers } from "./layers/layers.js";
import { defaultLimits } from "./resources.js";
import { sandboxBrokerService } from "./service.js";
import { connectCredentialProxy, type ProxyConnection } from "./remotes/proxy-client.js";
import { SHUTDOWN_REASON } from "./broker/revive.js";
import { pause } from "./broker/workspace.js";
import { openWorkspaceStore, type Workspaces } from "./workspaces/open-store.js";
import { Retention } from "./workspaces/retention.js";
import { Snapshots } from "./workspaces/snapshots.js";


const MIGRATIONS = new URL("../migrations/", import.meta.url);
export const RESTART_REASON = "broker restarted";
export { SHUTDOWN_REASON };

export interface SandboxBrokerHandle {
  readonly port: number;
  readonly address: string;
  /** How limits are enforced on this machine (also each sandbox's `limits`). */
  readonly limits: string;
  readonly warmPool: WarmPool;
  /** The host pid of a local sandbox's process (tests kill it to play the OOM killer). */
  pidOf(sandboxId: string): number | undefined;
  /** Stops accepting calls, releases every sandbox ("broker shut down"), closes. Idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Where sandbox events go; by default the session log at MH_SESSION_LOG_ADDR, if set. */
  readonly events?: SandboxEventSink;
}

/** Where sandbox events go: the session log at MH_SESSION_LOG_ADDR, if set, with this broker's token for it. */
async function sessionLogSink(config: SandboxBrokerConfig, tls: GrpcTls, logger: Logger): Promise<SandboxEventSink> {
  if (config.sessionLogAddr === undefined) return NO_EVENTS;
  if (config.sessionLogTokenFile === undefined) {
    throw new MhError("FAILED_PRECONDITION", "MH_SESSION_LOG_ADDR needs MH_SESSION_LOG_TOKEN_FILE (this broker's service token for the log)");
  }
  const token = await readServiceToken(config.sessionLogTokenFile);
  return new SessionLogSink(config.sessionLogAddr, { token, credentials: tls.client }, logger);
}

export async function startSandboxBroker(
  config: SandboxBrokerConfig,
  logger: Logger,
  options: StartOptions = {},
): Promise<SandboxBrokerHandle> {
  const cleanups = new Cleanups(logger);
  const stop = (): Promise<void> => cleanups.stop();
  try {
    // First: a broker that cannot tell its callers apart must not open its port.
    const tokens = await ServiceTokens.load(config.serviceTokensFile, ROLES);
    const tls = await loadGrpcTls(config);
    const pool = await openDb(config.databaseUrl, {
      poolSize: config.poolSize,
      onIdleError: (err) => logger.warn({ err }, "idle Postgres connection failed"),
      applicationName: "sandbox-broker",
      pgOptions: `-c synchronous_commit=${config.pgSynchronousCommit}`,
    });
    cleanups.push(() => pool.end());
    const applied = await migrate(pool, "sandbox-broker", MIGRATIONS);
    if (applied.length > 0) logger.info({ applied }, "applied migrations");

    const events = options.events ?? (await sessionLogSink(config, tls, logger));
    cleanups.push(() => events.close(5_000));

    let proxy: ProxyConnection | undefined;
    if (config.credentialProxyAddr !== undefined) {
      if (config.credentialProxyTokenFile === undefined) {
        throw new MhError("FAILED_PRECONDITION", "MH_CREDENTIAL_PROXY_ADDR needs MH_CREDENTIAL_PROXY_TOKEN_FILE (this broker's service token)");
      }
      const connected = await connectCredentialProxy(config.credentialProxyAddr, config.credentialProxyTokenFile, tls);
      cleanups.push(() => Promise.resolve(connected.close()));
      proxy = connected;
    }

    const incarnation = randomBytes(8).toString("hex");
    const lost = await loseAfterRestart(pool, config.brokerId, RESTART_REASON);
    sandboxLost("broker_restarted", lost.length);
    const interrupted = await interruptAfterRestart(pool, config.brokerId, incarnation);
    for (const row of lost) events.lost(row.sessionId, row.sandboxId, RESTART_REASON);
    if (lost.length > 0 || interrupted > 0) {
      logger.warn({ lost: lost.length, interrupted_calls: interrupted }, "sandboxes of the previous run are lost");
    }

    const launcher = await Launcher.create({
      bwrapPath: config.bwrapPath,
      cgroupMode: config.cgroupMode,
      cgroupParent: config.cgroupParent,
      brokerId: config.brokerId,
      tmpBytes: config.tmpBytes,
      uids: { base: config.sandboxUidBase, count: config.sandboxUidCount },
      logger,
    });
    cleanups.push(() => launcher.stop());
    // Stopping runs these steps in reverse: refuse new calls, stop the reaper and the pool, end
    // every sandbox (which ends the calls still running in them), then wait for the drain and
    // the ledger writes still under way.
    let draining: Promise<void> | undefined;
    const pendingWrites = new Set<Promise<void>>();
    cleanups.push(async () => {
      await draining;
      await Promise.allSettled(pendingWrites);
    });

    // Hands hang up only after their sandboxes were released (not lost) below.
    const hands = new HandRegistry();
    cleanups.push(() => Promise.resolve(hands.closeAll(SHUTDOWN_REASON)));
    // The warm pool refills into any place the cap frees (it is made below: the pool's room needs `live`).
    // Workspace snapshots, when a store is configured (MH_WORKSPACE_STORE).
    const opened = await openWorkspaceStore(config, logger);
    let workspaces: Workspaces | undefined;
    if (opened !== undefined) {
      cleanups.push(() => Promise.resolve(opened.close()));
      const snapshots = new Snapshots(opened.store, { quotaBytes: config.workspaceMaxBytes, logger: logger.child({ component: "workspaces" }) });
      const retention = new Retention(opened.store, events, {
        intervalMs: config.workspaceRetentionCheckMs,
        logger: logger.child({ component: "workspaces" }),
        forget: (hashes) => snapshots.forgetChunks(hashes),
      });
      retention.start();
      cleanups.push(() => retention.stop());
      workspaces = { snapshots, retention };
      logger.info({ store: opened.store.description, quota_bytes: config.workspaceMaxBytes }, "workspace snapshots on");
    }
    let refill = (): void => undefined;
    const live = new LiveSandboxes({ pool, events, logger, onRoom: () => refill(), onEnded: (id) => workspaces?.snapshots.forget(id) });
    cleanups.push(() => live.endAll(SandboxState.SANDBOX_STATE_RELEASED, SHUTDOWN_REASON));
    const base = { config, pool, logger, launcher, live, hands, events, incarnation, proxy };
    const warmRoom = (): number => Math.min(config.warmPoolSize, config.maxSandboxes - live.committed);
    const warm = new WarmPool(warmRoom, (id) => startLocalSandbox(base, id, defaultLimits(config)), logger);
    warm.fill();
    refill = () => warm.refillSoon();
    cleanups.push(() => warm.stop());
    const layers = new Layers({
      dir: config.layerDir,
      brokerId: config.brokerId,
      bwrapPath: config.bwrapPath,
      buildTimeoutMs: config.layerBuildTimeoutMs,
      maxBytes: config.layerMaxBytes,
      buildsAtOnce: config.layerBuildsAtOnce,
      logger: logger.child({ component: "layers" }),
    });
    await layers.open();
    cleanups.push(() => layers.stop());
    const ctx: BrokerContext = { ...base, warm, inflight: new Map(), pendingWrites, layers, workspaces, reviving: new Map() };

    const reaper = new Reaper(live, config.reapIntervalMs, (s) => (workspaces !== undefined && s.runtime instanceof LocalSandbox ? pause(ctx, s) : false));
    reaper.start();
    cleanups.push(() => Promise.resolve(reaper.stop()));
    const sessionEnds = new SessionEnds(live, events, config.sessionCheckMs, logger);
    sessionEnds.start();
    cleanups.push(() => sessionEnds.stop());

    const server = await startGrpcServer({
      host: config.host,
      port: config.port,
      healthPort: config.healthPort,
      logger,
      credentials: tls.server,
      services: [{ name: "metaharness.v1.SandboxBroker", definition: SandboxBrokerService, implementation: sandboxBrokerService(ctx, { tokens, logger }) }],
    });
    cleanups.push(() => {
      draining = server.shutdown(10_000);
      return Promise.resolve();
    });
    logger.info({ port: server.port, tls: tls.serving, limits: launcher.limitsDescription, warm_pool: config.warmPoolSize }, "sandbox-broker serving");
    return {
      port: server.port,
      address: server.address,
      limits: launcher.limitsDescription,
      warmPool: warm,
      pidOf: (id) => {
        const runtime = live.get(id)?.runtime;
        return runtime instanceof LocalSandbox ? runtime.pid : undefined;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
