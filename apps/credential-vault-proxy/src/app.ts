/**
 * Wires the credential vault proxy: Postgres and migrations, the master keyring, the service
 * tokens, the session log client, the gRPC service (every RPC guarded by caller and role) and
 * the remote HTTP endpoint for sandbox git and egress traffic. Used by main.ts and by tests,
 * which start it in-process on port 0.
 */
import { randomBytes } from "node:crypto";
import { MhError } from "@metaharness/errors";
import { SessionLogClient, SessionLogService, CredentialVaultProxyService, type CredentialVaultProxyServer } from "@metaharness/proto";
import { ServiceTokens } from "@metaharness/service-kit/auth";
import { createClient, loadGrpcTls, promisify, readServiceToken, startGrpcServer } from "@metaharness/service-kit/grpc";
import { Cleanups } from "@metaharness/service-kit/lifecycle";
import type { Logger } from "@metaharness/service-kit/logging";
import { migrate, openDb, type Db } from "@metaharness/db";
import { ROLES } from "./auth/policy.js";
import type { CredentialProxyConfig } from "./config.js";
import { loadMasterKeyring, type MasterKeyring } from "./crypto/master-keys.js";
import { connectEgress } from "./egress/egress-connect.js";
import { forwardEgress } from "./egress/egress-forward.js";
import { EgressInterceptor } from "./egress/egress-intercept.js";
import { unrestrictedLimits } from "./egress/egress-scope.js";
import { SandboxCas } from "./egress/sandbox-ca.js";
import { upstreamTrust } from "./egress/upstream-trust.js";
import { forwardGit } from "./git/git-forward.js";
import { startRemoteServer } from "./http/remote-server.js";
import { McpCallLedger } from "./mcp/call-ledger.js";
import { McpProxy } from "./mcp/mcp-proxy.js";
import { EgressPolicy } from "./net/egress-policy.js";
import { refreshGrant, type Refresher } from "./mcp/oauth-refresh.js";
import { OAuthTokenSource } from "./mcp/token-source.js";
import { credentialRpcs } from "./service/credential-rpcs.js";
import { mcpRpcs } from "./service/mcp-rpcs.js";
import { remoteRpcs } from "./service/remote-rpcs.js";
import { vaultRpcs } from "./service/vault-rpcs.js";
import { SessionCredentials } from "./session/session-credentials.js";
import { SessionVaults } from "./session/session-vaults.js";
import { dataKeysByMasterKey } from "./store/rotation.js";

const MIGRATIONS = new URL("../migrations/", import.meta.url);

export interface CredentialProxyHandle {
  readonly port: number;
  readonly address: string;
  /** The remote HTTP endpoint (git and egress), as the broker reaches it. */
  readonly remoteUrl: string;
  readonly db: Db;
  readonly keyring: MasterKeyring;
  readonly tokens: OAuthTokenSource;
  /** Stops serving and closes connections. Idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Replaces the refresh-token grant (tests count or fail refreshes). */
  readonly refresher?: Refresher;
}

export async function startCredentialProxy(
  config: CredentialProxyConfig,
  logger: Logger,
  options: StartOptions = {},
): Promise<CredentialProxyHandle> {
  const cleanups = new Cleanups(logger);
  const stop = (): Promise<void> => cleanups.stop();
  try {
    const keyring = await loadMasterKeyring(config.masterKeyFile, config.previousMasterKeyFiles, (w) =>
      logger.warn({ file: w.file }, `master key file ${w.problem}`),
    );
    const serviceTokens = await ServiceTokens.load(config.serviceTokensFile, ROLES);
    const tls = await loadGrpcTls(config);
    const db = await openDb(config.databaseUrl, {
      poolSize: config.poolSize,
      onIdleError: (err) => logger.warn({ err }, "idle Postgres connection failed"),
      applicationName: "credential-vault-proxy",
    });
    cleanups.push(() => db.end());
    const applied = await migrate(db, "credential-vault-proxy", MIGRATIONS);
    if (applied.length > 0) logger.info({ applied }, "applied migrations");
    await reportKeys(db, keyring, logger);

    const rawLog = createClient(SessionLogClient, config.sessionLogAddr, {
      bearerToken: await readServiceToken(config.sessionLogTokenFile),
      credentials: tls.client,
    });
    cleanups.push(() => Promise.resolve(rawLog.close()));
    const vaults = new SessionVaults(promisify(rawLog, SessionLogService), db, config.sessionCacheMs, logger);
    const credentials = new SessionCredentials(db, vaults, keyring);
    const egress = new EgressPolicy(config.allowPrivateNetworks);
    cleanups.push(() => egress.close());
    const publicOnly = new EgressPolicy(false, false);
    cleanups.push(() => publicOnly.close());
    const unrestricted = unrestrictedLimits(config.egressUnrestrictedPorts, config.egressDeniedHosts);
    const cas = new SandboxCas(keyring);
    const sendDeps = {
      credentials,
      egress,
      publicOnly,
      upstreamCa: await upstreamTrust(config.egressTrustFile, config.egressExtraTrustFile),
      upstreamScheme: config.egressUpstreamScheme,
      maxRequestBytes: config.maxRequestBytes,
      timeoutMs: config.upstreamTimeoutMs,
    };
    const interceptor = new EgressInterceptor({ ...sendDeps, cas });
    cleanups.push(() => Promise.resolve(interceptor.close()));
    const tokens = new OAuthTokenSource({
      db,
      keyring,
      refresh: options.refresher ?? refreshGrant(config.tokenEndpointTimeoutMs, egress.fetch),
      skewMs: config.refreshSkewMs,
      logger,
    });
    const mcp = new McpProxy({ credentials, tokens, fetch: egress.fetch, timeoutMs: config.mcpTimeoutMs, logger });
    const ledger = new McpCallLedger({
      db,
      owner: randomBytes(8).toString("hex"),
      retentionMs: config.mcpCallRetentionMs,
      logger,
    });
    cleanups.push(() => ledger.close());

    const remoteDeps = { db, credentials, egress, maxRequestBytes: config.maxRequestBytes, timeoutMs: config.upstreamTimeoutMs, logger };
    const remote = await startRemoteServer({
      host: config.remoteHost,
      port: config.remotePort,
      tokens: serviceTokens,
      git: (req, res, url) => forwardGit(remoteDeps, req, res, url),
      egress: (req, res, url) => forwardEgress({ ...sendDeps, db, unrestricted, logger }, req, res, url),
      connect: (req, socket, head) => connectEgress({ ...remoteDeps, unrestricted, intercept: interceptor.intercept }, req, socket, head),
      logger: logger.child({ component: "remote" }),
      tls: tls.httpsServer,
    });
    cleanups.push(() => remote.close());
    const remoteUrl = (config.remoteAdvertisedUrl ?? `${tls.serving ? "https" : "http"}://${config.remoteHost}:${remote.port}`).replace(/\/+$/, "");
    if (tls.serving && !remoteUrl.startsWith("https://")) {
      throw new MhError("FAILED_PRECONDITION", "MH_REMOTE_HTTP_URL must be https:// when the proxy serves TLS (MH_GRPC_TLS_CERT_FILE)", {
        field: "MH_REMOTE_HTTP_URL",
      });
    }

    const guard = { tokens: serviceTokens, logger };
    // Typed as the generated server: an RPC without a handler does not compile.
    const implementation: CredentialVaultProxyServer = {
      ...vaultRpcs({ ...guard, db, keyring, vaults }),
      ...credentialRpcs({ ...guard, db, keyring, validation: { db, keyring, tokens, fetch: egress.fetch, timeoutMs: config.mcpTimeoutMs, logger } }),
      ...mcpRpcs({ ...guard, mcp, ledger }),
      ...remoteRpcs({ ...guard, db, vaults, baseUrl: () => remoteUrl, ttlSeconds: config.remoteTtlSeconds, unrestricted, cas }),
    };
    const server = await startGrpcServer({
      host: config.host,
      port: config.port,
      healthPort: config.healthPort,
      logger,
      credentials: tls.server,
      services: [
        {
          name: "metaharness.v1.CredentialVaultProxy",
          definition: CredentialVaultProxyService,
          implementation,
        },
      ],
    });
    cleanups.push(() => server.shutdown(5000));
    logger.info({ port: server.port, tls: tls.serving, remote: remoteUrl, master_key_id: keyring.active.id }, "credential-vault-proxy serving");
    return { port: server.port, address: server.address, remoteUrl, db, keyring, tokens, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Says which master keys the stored data keys need, and loudly if one of them is not loaded. */
async function reportKeys(db: Db, keyring: MasterKeyring, logger: Logger): Promise<void> {
  const inUse = await dataKeysByMasterKey(db);
  const missing = [...inUse.keys()].filter((id) => keyring.get(id) === undefined);
  const stale = [...inUse.keys()].filter((id) => id !== keyring.active.id && keyring.get(id) !== undefined);
  logger.info({ active: keyring.active.id, loaded: keyring.ids, data_keys: Object.fromEntries(inUse) }, "master keys loaded");
  if (missing.length > 0) logger.error({ missing }, "some credentials are wrapped by master keys that are not loaded: they cannot be used");
  if (stale.length > 0) logger.warn({ stale }, "some credentials are still wrapped by previous master keys: run RotateMasterKey");
}
