/**
 * Starts the real credential vault proxy in-process on port 0, on a fresh database of the real
 * Postgres, with a master key file and a service tokens file in a private temp directory, and
 * gives clients that present each role's token (admin, harness, broker) or none at all.
 * `restart` starts another life on the same database (e.g. with a new master key).
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CredentialVaultProxyClient,
  CredentialVaultProxyService,
  CredentialType,
  type AgentConfig,
  type Credential,
  type SessionMetadata,
} from "@metaharness/proto";
import { createClient, loadGrpcTls, promisify, type PromiseClient } from "@metaharness/service-kit/grpc";
import { createLogger, type Logger } from "@metaharness/service-kit/logging";
import {
  loadConfig,
  newMasterKeyText,
  startCredentialProxy,
  type CredentialProxyConfig,
  type CredentialProxyHandle,
  type StartOptions,
} from "@metaharness/credential-vault-proxy";
import { createTestDatabase, type TestDatabase } from "./postgres.js";

export type VaultClient = PromiseClient<typeof CredentialVaultProxyService>;
export type RoleName = "admin" | "harness" | "broker";

export interface TestVault {
  readonly db: TestDatabase;
  readonly dir: string;
  readonly handle: CredentialProxyHandle;
  readonly config: CredentialProxyConfig;
  readonly address: string;
  /** Every role's service token (files a harness or broker reads: see tokenFile). */
  readonly tokens: Readonly<Record<RoleName, string>>;
  readonly tokenFile: Readonly<Record<RoleName, string>>;
  readonly masterKeyFile: string;
  client(role: RoleName | "none" | { token: string }): VaultClient;
  /** Another instance on the same database and files, running alongside this one. */
  startReplica(env?: Record<string, string>): Promise<TestVault>;
  /** Stops this life and starts another on the same database with `env` on top. */
  restart(env?: Record<string, string>, options?: StartOptions): Promise<TestVault>;
  /** Writes a fresh master key file in the private dir; returns its path. */
  newKeyFile(name: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startTestVault(opts: {
  /** MH_SESSION_LOG_ADDR and MH_SESSION_LOG_TOKEN_FILE (a token of the log's role proxy). */
  sessionLog: Record<string, string>;
  env?: Record<string, string>;
  logger?: Logger;
  options?: StartOptions;
}): Promise<TestVault> {
  const db = await createTestDatabase("mh_vault_test");
  const dir = await mkdtemp(join(tmpdir(), "mh-vault-test-"));
  const cleanup = async (): Promise<void> => {
    await rm(dir, { recursive: true, force: true });
    await db.drop();
  };
  try {
    const tokens = { admin: token(), harness: token(), broker: token() };
    const tokenFile = { admin: join(dir, "admin.token"), harness: join(dir, "harness.token"), broker: join(dir, "broker.token") };
    for (const role of ["admin", "harness", "broker"] as const) await writeFile(tokenFile[role], `${tokens[role]}\n`, { mode: 0o600 });
    const services = [
      { name: "gateway", role: "admin", token: tokens.admin },
      { name: "harness", role: "harness", token: tokens.harness },
      { name: "sandbox-broker", role: "broker", token: tokens.broker },
    ];
    await writeFile(join(dir, "services.json"), JSON.stringify({ services }), { mode: 0o600 });
    const masterKeyFile = join(dir, "master-1.key");
    await writeFile(masterKeyFile, newMasterKeyText(), { mode: 0o600 });
    const baseEnv: Record<string, string> = {
      MH_DATABASE_URL: db.url,
      MH_GRPC_PORT: "0",
      MH_REMOTE_HTTP_PORT: "0",
      ...opts.sessionLog,
      MH_MASTER_KEY_FILE: masterKeyFile,
      MH_SERVICE_TOKENS_FILE: join(dir, "services.json"),
      MH_LOG_LEVEL: process.env["MH_TEST_LOG_LEVEL"] ?? "silent",
      // The tests' MCP servers, token endpoints and git remotes listen on 127.0.0.1.
      MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS: "true",
      ...opts.env,
    };
    // Every life still running (a main one and its replicas), to stop them all at the end.
    const running = new Set<() => Promise<void>>();
    const life = async (env: Record<string, string>, options: StartOptions | undefined): Promise<TestVault> => {
      const config = loadConfig({ ...baseEnv, ...env });
      const logger = opts.logger ?? createLogger({ service: "credential-vault-proxy", level: config.logLevel });
      const handle = await startCredentialProxy(config, logger, options);
      const address = `127.0.0.1:${handle.port}`;
      const raws: Array<{ close(): void }> = [];
      // The tests' clients speak whatever the proxy is set to (MH_GRPC_TLS_*), with its own certificate.
      const credentials = (await loadGrpcTls(config)).client;
      const client = (role: RoleName | "none" | { token: string }): VaultClient => {
        const bearerToken = role === "none" ? undefined : typeof role === "string" ? tokens[role] : role.token;
        const raw = createClient(CredentialVaultProxyClient, address, { credentials, ...(bearerToken === undefined ? {} : { bearerToken }) });
        raws.push(raw);
        return promisify(raw, CredentialVaultProxyService);
      };
      const stopLife = async (): Promise<void> => {
        running.delete(stopLife);
        raws.splice(0).forEach((r) => r.close());
        await handle.stop();
      };
      running.add(stopLife);
      return {
        db,
        dir,
        handle,
        config,
        address,
        tokens,
        tokenFile,
        masterKeyFile,
        client,
        startReplica: (more = {}) => life({ ...env, ...more }, options),
        restart: async (more = {}, o) => {
          await stopLife();
          return life({ ...env, ...more }, o ?? options);
        },
        newKeyFile: async (name) => {
          const path = join(dir, name);
          await writeFile(path, newMasterKeyText(), { mode: 0o600 });
          return path;
        },
        stop: async () => {
          for (const stopOne of [...running]) await stopOne();
          await cleanup();
        },
      };
    };
    return await life({}, opts.options);
  } catch (err) {
    await cleanup().catch(() => undefined);
    throw err;
  }
}

function token(): string {
  return `mhsvc_${randomBytes(24).toString("base64url")}`;
}

/** PutCredential for a git_token. */
export async function putGitToken(admin: VaultClient, vaultId: string, urlPrefix: string, secret: string, username = ""): Promise<Credential> {
  const { credential } = await admin.putCredential({
    vaultId,
    credentialId: "",
    type: CredentialType.CREDENTIAL_TYPE_GIT_TOKEN,
    displayName: "git",
    config: { $case: "gitToken", value: { urlPrefix, host: "", username } },
    secret: { token: secret, accessToken: "", refreshToken: "", clientSecret: "" },
    metadata: {},
  });
  return credential!;
}

/** A new vault holding an http_bearer credential for `host` ("host" or "host:port"); its id. */
export async function vaultWithBearer(admin: VaultClient, host: string, token: string): Promise<string> {
  const vaultId = await newVault(admin);
  await admin.putCredential({
    vaultId,
    credentialId: "",
    type: CredentialType.CREDENTIAL_TYPE_HTTP_BEARER,
    displayName: `api of ${host}`,
    config: { $case: "httpBearer", value: { host, headerName: "" } },
    secret: { token, accessToken: "", refreshToken: "", clientSecret: "" },
    metadata: {},
  });
  return vaultId;
}

/** A vault for a tenant (empty by default). */
export async function newVault(admin: VaultClient, displayName = "test", tenant = ""): Promise<string> {
  const { vault } = await admin.createVault({ tenant, displayName, metadata: {}, sessionId: "" });
  return vault!.vaultId;
}

/** SessionMetadata naming `vaultIds` and an agent with `tools`. */
export function metadataWithVaults(vaultIds: string[], agent: Partial<AgentConfig> = {}): SessionMetadata {
  return { workspaceFork: undefined,
    agentId: "agent_test",
    agentVersion: 1,
    tenant: "",
    labels: {},
    harness: "",
    environmentId: "",
    vaultIds,
    title: "",
    repositories: [],
    agent: { model: "", system: "", tools: [], tokenBudget: 0, contextStrategy: "", contextWindowTokens: 0, maxTokens: 0, explicitTools: false, listPrice: undefined, budget: undefined, ...agent },
    environment: undefined,
  };
}
