/**
 * The whole system for the attack suite, in-process on real Postgres, Kafka and bubblewrap: the
 * session log (with its relay on a test topic), the credential vault proxy, the sandbox broker and
 * a harness, each logging at trace level into one capture; the offline model playing the
 * attacker; and the outside world the session's credentials are for (a token-protected git
 * server, an OAuth token endpoint and an MCP server, an HTTP API behind a bearer token).
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { gzipSync } from "node:zlib";
import type { AddressInfo } from "node:net";
import { loadConfig as harnessConfig, startHarness, type HarnessHandle } from "@metaharness/harness";
import { startOfflineModel, type OfflineModel, type Scenario } from "@metaharness/offline-model";
import { HarnessClient, HarnessService, SandboxBrokerClient, SandboxBrokerService, SessionLogClient, SessionLogService } from "@metaharness/proto";
import { loadConfig as brokerConfig, startSandboxBroker, type SandboxBrokerHandle } from "@metaharness/sandbox-broker";
import { createClient, promisify, type PromiseClient } from "@metaharness/service-kit/grpc";
import { loadConfig as logConfig, startSessionLog, type SessionLogHandle } from "@metaharness/session-log";
import { startGitServer, type GitServer } from "../support/git-server.js";
import { startMcpServer, type TestMcpServer } from "../support/mcp-server.js";
import { startOAuthServer, type OAuthServer } from "../support/oauth-server.js";
import { createTestDatabase } from "../support/postgres.js";
import { BROKER_ROLES, brokerEnv } from "../support/sandbox-broker.js";
import { writeServiceTokens } from "../support/service-tokens.js";
import { LOG_ROLES, type LogRole } from "../support/session-log.js";
import { deleteTopic, KAFKA_BROKERS } from "../support/topics.js";
import { startTestVault, type TestVault } from "../support/vault.js";
import { captureTopic, type TopicCapture } from "./capture.js";
import { startEchoGitHost, type EchoGitHost } from "./echo-git-host.js";
import { startRedirectHost, type RedirectHost } from "./redirect-host.js";
import { LogCapture } from "../support/log-capture.js";

export const GIT_TOKEN = `ghs_attack_${randomBytes(12).toString("hex")}`;
export const API_BEARER = `sk_attack_${randomBytes(12).toString("hex")}`;
export const CLIENT_SECRET = `cs_attack_${randomBytes(12).toString("hex")}`;
/** The static MCP bearer of the redirecting host's MCP server. */
export const MCP_BEARER = `mb_attack_${randomBytes(12).toString("hex")}`;
// 127.0.0.2: a loopback address outside the sandbox's NO_PROXY, standing in for a remote API.
export const API_HOST_IP = "127.0.0.2";

export interface Stack {
  readonly logs: LogCapture;
  readonly topic: TopicCapture;
  readonly log: PromiseClient<typeof SessionLogService>;
  readonly broker: PromiseClient<typeof SandboxBrokerService>;
  readonly brokerHandle: SandboxBrokerHandle;
  readonly harness: PromiseClient<typeof HarnessService>;
  readonly vault: TestVault;
  readonly git: GitServer;
  /** A host that echoes the git credential back (echo-git-host.ts), in front of `git`. */
  readonly echoGit: EchoGitHost;
  /** A git and MCP host that redirects everything to another host (redirect-host.ts). */
  readonly redirect: RedirectHost;
  readonly oauth: OAuthServer;
  readonly mcp: TestMcpServer;
  /** host:port of the HTTP API the session's http_bearer is for. */
  readonly api: string;
  /** What that API received: every request's headers. */
  readonly apiSeen: Array<Record<string, unknown>>;
  readonly model: OfflineModel;
  readonly logPort: number;
  stop(): Promise<void>;
}

export interface Targets {
  readonly gitUrl: string;
  readonly echoGitUrl: string;
  readonly redirectUrl: string;
  readonly mcpUrl: string;
  readonly api: string;
  readonly vaultPort: number;
  readonly vaultRemote: string;
}

export async function startStack(scenario: (t: Targets) => Scenario): Promise<Stack> {
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  try {
    const logs = new LogCapture();
    const topicName = `mh-security-${randomBytes(4).toString("hex")}`;
    const logDb = await createTestDatabase("mh_security_log");
    stops.push(() => logDb.drop());
    stops.push(() => deleteTopic(topicName));
    const logTokens = await writeServiceTokens(LOG_ROLES);
    stops.push(() => logTokens.dispose());
    const logHandle: SessionLogHandle = await startSessionLog(
      logConfig({
        MH_SERVICE_TOKENS_FILE: logTokens.file,
        MH_DATABASE_URL: logDb.url,
        MH_GRPC_PORT: "0",
        MH_KAFKA_BROKERS: KAFKA_BROKERS,
        MH_KAFKA_TOPIC: topicName,
        MH_KAFKA_TOPIC_PARTITIONS: "3",
        MH_RELAY_POLL_MS: "100",
        MH_RELAY_ENABLED: "true",
      }),
      logs.logger("session-log"),
    );
    stops.push(() => logHandle.stop());
    // Bound to port 0: the port it got is the one every other service is given.
    const logPort = logHandle.port;
    const logAs = (role: LogRole) => ({ MH_SESSION_LOG_ADDR: `127.0.0.1:${logPort}`, MH_SESSION_LOG_TOKEN_FILE: logTokens.tokenFile[role] });
    const topic = await captureTopic(topicName);
    stops.push(() => topic.close());
    const rawLog = createClient(SessionLogClient, `127.0.0.1:${logHandle.port}`, { bearerToken: logTokens.tokens.admin });
    stops.push(() => Promise.resolve(rawLog.close()));

    const vault = await startTestVault({
      sessionLog: logAs("proxy"),
      logger: logs.logger("credential-vault-proxy"),
      env: { MH_EGRESS_UPSTREAM_SCHEME: "http" },
    });
    stops.push(() => vault.stop());

    const git = await startGitServer({ username: "x-access-token", token: GIT_TOKEN });
    stops.push(() => git.close());
    await git.seed("org/app.git", { "README.md": "the app\n" });
    await git.seed("org/other.git", { "OTHER.md": "another team's code\n" });
    const echoGit = await startEchoGitHost(git.url);
    stops.push(() => echoGit.close());
    const redirect = await startRedirectHost();
    stops.push(() => redirect.close());
    const oauth = await startOAuthServer({ clientId: "mh-agent", clientSecret: CLIENT_SECRET, method: "client_secret_basic" });
    stops.push(() => oauth.close());
    const mcp = await startMcpServer((t) => oauth.isValid(t));
    stops.push(() => mcp.close());
    const apiSeen: Array<Record<string, unknown>> = [];
    const apiServer: Server = createServer((req, res) => {
      apiSeen.push({ ...req.headers });
      const said = `api says hi; you sent ${req.headers.authorization ?? "nothing"}`;
      // Echoes in content codings the sandbox could decode itself (issue 25, hole 2): x-gzip, gzip twice, and one the proxy cannot read.
      if (req.url === "/x-gzip") res.writeHead(200, { "content-encoding": "x-gzip" }).end(gzipSync(said));
      else if (req.url === "/gzip-gzip") res.writeHead(200, { "content-encoding": "gzip, gzip" }).end(gzipSync(gzipSync(said)));
      else if (req.url === "/compress") res.writeHead(200, { "content-encoding": "compress" }).end(said);
      else res.writeHead(200, { "content-type": "text/plain" }).end(said);
    });
    await new Promise<void>((resolve) => apiServer.listen(0, API_HOST_IP, resolve));
    stops.push(() => new Promise((resolve) => apiServer.close(resolve)));
    const api = `${API_HOST_IP}:${(apiServer.address() as AddressInfo).port}`;

    const brokerDb = await createTestDatabase("mh_security_sbx");
    stops.push(() => brokerDb.drop());
    const brokerTokens = await writeServiceTokens(BROKER_ROLES);
    stops.push(() => brokerTokens.dispose());
    const harnessTokens = await writeServiceTokens(["admin"] as const);
    stops.push(() => harnessTokens.dispose());
    const brokerHandle = await startSandboxBroker(
      brokerConfig(
        brokerEnv(brokerDb.url, `sec-${randomBytes(4).toString("hex")}`, {
          ...logAs("broker"),
          MH_CREDENTIAL_PROXY_ADDR: vault.address,
          MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.broker,
          MH_SERVICE_TOKENS_FILE: brokerTokens.file,
        }),
      ),
      logs.logger("sandbox-broker"),
    );
    stops.push(() => brokerHandle.stop());
    const rawBroker = createClient(SandboxBrokerClient, `127.0.0.1:${brokerHandle.port}`, { bearerToken: brokerTokens.tokens.admin });
    stops.push(() => Promise.resolve(rawBroker.close()));

    const targets: Targets = {
      gitUrl: git.url,
      echoGitUrl: echoGit.url,
      redirectUrl: redirect.url,
      mcpUrl: mcp.url,
      api,
      vaultPort: vault.handle.port,
      vaultRemote: vault.handle.remoteUrl,
    };
    const model = await startOfflineModel({ scenarios: [scenario(targets)] });
    stops.push(() => model.close());
    const harness: HarnessHandle = await startHarness(
      harnessConfig({
        MH_GRPC_PORT: "0",
        ...logAs("harness"),
        MH_SERVICE_TOKENS_FILE: harnessTokens.file,
        MH_SANDBOX_BROKER_ADDR: `127.0.0.1:${brokerHandle.port}`,
        MH_SANDBOX_BROKER_TOKEN_FILE: brokerTokens.tokenFile.harness,
        MH_CREDENTIAL_PROXY_ADDR: vault.address,
        MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.harness,
        MH_MODEL_BASE_URL: model.url,
        MH_MODEL: "claude-offline-test",
      }),
      logs.logger("harness"),
    );
    stops.push(() => harness.stop());
    const rawHarness = createClient(HarnessClient, `127.0.0.1:${harness.port}`, { bearerToken: harnessTokens.tokens.admin });
    stops.push(() => Promise.resolve(rawHarness.close()));

    return {
      logs,
      topic,
      log: promisify(rawLog, SessionLogService),
      broker: promisify(rawBroker, SandboxBrokerService),
      brokerHandle,
      harness: promisify(rawHarness, HarnessService),
      vault,
      git,
      echoGit,
      redirect,
      oauth,
      mcp,
      api,
      apiSeen,
      model,
      logPort,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
