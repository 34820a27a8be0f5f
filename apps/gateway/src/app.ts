/**
 * Wires a gateway: its database and migrations, API keys from config, clients of the session
 * log and the harness, the HTTP server and its routes. Used by main.ts and by tests, which start
 * it in-process on port 0; `deps` lets an embedding process pass clients it already has.
 */
import { migrate, openDb, type Db } from "@metaharness/db";
import {
  CredentialVaultProxyClient,
  CredentialVaultProxyService,
  HarnessClient,
  HarnessService,
  SandboxBrokerClient,
  SandboxBrokerService,
  SessionLogClient,
  SessionLogService,
} from "@metaharness/proto";
import { MhError } from "@metaharness/errors";
import { createClient, loadGrpcTls, promisify, readServiceToken } from "@metaharness/service-kit/grpc";
import { Cleanups } from "@metaharness/service-kit/lifecycle";
import type { Logger } from "@metaharness/service-kit/logging";
import { bootstrapApiKeys } from "./auth/api-keys.js";
import { Principals } from "./auth/principals.js";
import type { CredentialProxyRpc, HarnessRpc, SandboxBrokerRpc, SessionLogRpc } from "./clients.js";
import type { GatewayConfig } from "./config.js";
import type { RouteDoc } from "./http/route-doc.js";
import { Router } from "./http/router.js";
import { createServer } from "./http/server.js";
import { registerAgentRoutes } from "./agents/routes.js";
import { registerCredentialRoutes } from "./vaults/credential-routes.js";
import { registerEnvironmentKeyRoutes } from "./environments/key-routes.js";
import { registerEnvironmentRoutes } from "./environments/routes.js";
import { registerEventRoutes } from "./events/routes.js";
import { registerMetaRoutes } from "./http/meta-routes.js";
import { LeaseHints } from "./sessions/lease-hints.js";
import { registerResourceRoutes } from "./sessions/resource-routes.js";
import { registerTransferRoute } from "./sessions/transfer.js";
import { registerSessionRoutes } from "./sessions/routes.js";
import { registerStreamRoute } from "./events/stream-route.js";
import { registerThreadRoutes } from "./events/thread-routes.js";
import { registerVaultRoutes } from "./vaults/routes.js";
import { registerWorkRoutes } from "./work/routes.js";
import { AgentStore } from "./agents/store.js";
import { EnvironmentKeyStore } from "./environments/key-store.js";
import { EnvironmentStore } from "./environments/store.js";
import { SessionStore, type SessionTarget } from "./sessions/store.js";
import { TargetCache } from "./sessions/target-cache.js";
import { sourcesCache } from "./sessions/sources.js";
import { StreamRegistry } from "./events/stream-registry.js";
import { loadUiConfig, type UiConfig } from "./ui/config.js";
import { registerUiRoutes } from "./ui/routes.js";
import { WorkQueue } from "./work/queue.js";
import { PackageLayers } from "./environments/package-layers.js";
import { HandKindCheck } from "./environments/hand.js";
import { WorkSignals } from "./work/signals.js";
import { startWorkPurge } from "./work/purge.js";

const MIGRATIONS = new URL("../migrations/", import.meta.url);

export interface GatewayDeps {
  readonly db?: Db;
  readonly log?: SessionLogRpc;
  readonly harness?: HarnessRpc;
  readonly credentials?: CredentialProxyRpc;
  readonly broker?: SandboxBrokerRpc;
}

/**
 * config.ts's settings, and the session page's (ui/config.ts): read from the environment when
 * not given, as main.ts does; an embedding process that passes every setting passes these too.
 */
export type GatewaySettings = GatewayConfig & { readonly ui?: UiConfig };

export interface GatewayHandle {
  /** `http://host:port`, the SDK's baseURL. */
  readonly url: string;
  readonly port: number;
  readonly db: Db;
  /** The routes served, as declared (the source of /openapi.json and docs/api.md's tables). */
  readonly routes: readonly RouteDoc[];
  /** Ends open event streams, stops serving, closes connections. Idempotent. */
  stop(): Promise<void>;
}

export async function startGateway(config: GatewaySettings, logger: Logger, deps: GatewayDeps = {}): Promise<GatewayHandle> {
  const cleanups = new Cleanups(logger);
  const stop = (): Promise<void> => cleanups.stop();
  try {
    let db = deps.db;
    if (db === undefined) {
      const opened = await openDb(config.databaseUrl, {
        poolSize: config.poolSize,
        onIdleError: (err) => logger.warn({ err }, "idle Postgres connection failed"),
        applicationName: "gateway",
      });
      cleanups.push(() => opened.end());
      db = opened;
    }
    const applied = await migrate(db, "gateway", MIGRATIONS);
    if (applied.length > 0) logger.info({ applied }, "applied migrations");
    const { revoked } = await bootstrapApiKeys(db, config.apiKeys);
    if (revoked > 0) logger.info({ revoked }, "revoked API keys no longer in MH_GATEWAY_API_KEYS");
    if (config.apiKeys.length === 0) logger.warn("MH_GATEWAY_API_KEYS lists no key: only keys other instances configured in this database work");
    const principals = new Principals(db, config.keyCacheMs);

    // The gateway serves HTTP; these are its calls to the services (TLS with MH_GRPC_TLS_CA_FILE).
    const tls = await loadGrpcTls(config);
    let log = deps.log;
    if (log === undefined) {
      const raw = createClient(SessionLogClient, config.sessionLogAddress, {
        bearerToken: await readServiceToken(config.sessionLogTokenFile),
        credentials: tls.client,
      });
      cleanups.push(() => Promise.resolve(raw.close()));
      log = promisify(raw, SessionLogService);
    }
    let harness = deps.harness;
    if (harness === undefined) {
      const raw = createClient(HarnessClient, config.harnessAddress, {
        bearerToken: await readServiceToken(config.harnessTokenFile),
        credentials: tls.client,
      });
      cleanups.push(() => Promise.resolve(raw.close()));
      harness = promisify(raw, HarnessService);
    }
    let credentials = deps.credentials;
    if (credentials === undefined && config.credentialProxyAddress !== undefined) {
      if (config.credentialProxyTokenFile === undefined) {
        throw new MhError("FAILED_PRECONDITION", "MH_CREDENTIAL_PROXY_ADDR needs MH_CREDENTIAL_PROXY_TOKEN_FILE (this gateway's service token)");
      }
      const bearerToken = await readServiceToken(config.credentialProxyTokenFile);
      const raw = createClient(CredentialVaultProxyClient, config.credentialProxyAddress, { bearerToken, credentials: tls.client });
      cleanups.push(() => Promise.resolve(raw.close()));
      credentials = promisify(raw, CredentialVaultProxyService);
    }

    let broker = deps.broker;
    if (broker === undefined && config.sandboxBrokerAddress !== undefined) {
      if (config.sandboxBrokerTokenFile === undefined) {
        throw new MhError("FAILED_PRECONDITION", "MH_SANDBOX_BROKER_ADDR needs MH_SANDBOX_BROKER_TOKEN_FILE (this gateway's service token)");
      }
      const bearerToken = await readServiceToken(config.sandboxBrokerTokenFile);
      const raw = createClient(SandboxBrokerClient, config.sandboxBrokerAddress, { bearerToken, credentials: tls.client });
      cleanups.push(() => Promise.resolve(raw.close()));
      broker = promisify(raw, SandboxBrokerService);
    }

    const app = createServer({ logger, bodyLimitBytes: config.bodyLimitBytes });
    cleanups.push(() => app.close());
    const streams = new StreamRegistry(config.maxStreamsPerTenant);
    // Registered after app.close so it runs first: open streams end, then the server closes.
    cleanups.push(() => Promise.resolve(streams.closeAll()));

    const workSignals = new WorkSignals(db, logger);
    await workSignals.start();
    // Registered after app.close so it runs first: long polls answer, then the server closes.
    cleanups.push(() => workSignals.stop());

    const stopPurge = startWorkPurge(db, logger, {
      retentionSeconds: config.workRetentionSeconds,
      everyMs: config.workPurgeEveryMs,
      now: () => new Date(),
    });
    cleanups.push(stopPurge);

    const router = new Router(app, { principals, requireBetaHeader: config.requireBetaHeader });
    // Each noun's routes get the stores, clients and settings they use, nothing else.
    const now = (): Date => new Date();
    // The agents and environments sessions.create reads, kept while this instance hears their changes.
    const sources = sourcesCache(config.targetCacheMs);
    await sources.listen(db, logger);
    cleanups.push(() => sources.stop());
    const agents = new AgentStore(db, () => sources.forgetAll());
    const environments = new EnvironmentStore(db, () => sources.forgetAll());
    // Sessions' target fields kept in memory while this instance hears their changes.
    const targets = new TargetCache<SessionTarget>(config.targetCacheMs);
    await targets.listen(db, logger);
    cleanups.push(() => targets.stop());
    const sessions = new SessionStore(db, targets);
    const work = new WorkQueue(db);
    const hands = { log, work, workSignals, now };
    const input = { log, harness, wakeTimeoutMs: config.wakeTimeoutMs, wakeSkipLeaseMs: config.wakeSkipLeaseMs, leaseHints: new LeaseHints() };
    const stream = { log, sessions, work, streams, heartbeatMs: config.heartbeatMs, now };
    registerAgentRoutes(router, { agents, now });
    registerEnvironmentRoutes(router, { environments, layers: new PackageLayers(broker), hands: new HandKindCheck(broker), now });
    registerEnvironmentKeyRoutes(router, { environments, environmentKeys: new EnvironmentKeyStore(db), now });
    registerWorkRoutes(router, { ...hands, db, environments, sessions, workLeaseTtlSeconds: config.workLeaseTtlSeconds });
    const ui = config.ui ?? loadUiConfig();
    registerSessionRoutes(router, { ...hands, ...input, db, sources, agents, sessions, credentials, prices: ui.prices });
    registerResourceRoutes(router, { sessions, log, credentials, now });
    registerTransferRoute(router, { sessions, broker, now });
    registerEventRoutes(router, { ...hands, ...input, sessions });
    registerStreamRoute(router, stream);
    registerVaultRoutes(router, credentials);
    registerCredentialRoutes(router, { credentials, now });
    registerThreadRoutes(router, stream);
    registerMetaRoutes(router, db);
    registerUiRoutes(app, { log, sessions }, { principals, ...ui });

    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address();
    const port = typeof address === "object" && address !== null ? address.port : config.port;
    const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
    logger.info({ url, tenants: new Set(config.apiKeys.map((k) => k.tenant)).size }, "gateway serving");
    return { url, port, db, routes: router.routes, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
