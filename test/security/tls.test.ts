/**
 * Links between services over mutual TLS: the session log, the credential vault proxy and the
 * sandbox broker each serve with their own certificate and ask callers for one from the same CA.
 * A sandbox pushes to a repository through the broker, which relays to the proxy's remote endpoint
 * (now https://) with its service token; on none of these links does a token travel in clear, and
 * a caller that holds the right token but no certificate, or speaks plaintext, gets nowhere.
 */
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CredentialVaultProxyClient, CredentialVaultProxyService, ListVaultsRequest, SessionLogClient, SessionLogService, GetSessionRequest } from "@metaharness/proto";
import { SERVICE_AUTH_HEADER } from "@metaharness/service-kit/auth";
import { createClient, PLAINTEXT, promisify, type GrpcTls } from "@metaharness/service-kit/grpc";
import { startGitServer, type GitServer } from "../support/git-server.js";
import { provision, run, startTestBroker, type TestBroker } from "../support/sandbox-broker.js";
import { startTestLog, type TestLog } from "../support/session-log.js";
import { callerTls, mintDevCerts, type DevCerts } from "../support/tls.js";
import { metadataWithVaults, newVault, putGitToken, startTestVault, type TestVault } from "../support/vault.js";

const TOKEN = "ghs_tlstest_0a1b2c3d4e5f6a7b8c9d";

let certs: DevCerts;
let log: TestLog;
let vault: TestVault;
let broker: TestBroker;
let git: GitServer;

beforeAll(async () => {
  certs = await mintDevCerts(["log", "proxy", "broker", "someone"]);
  log = await startTestLog({ MH_RELAY_ENABLED: "false", ...certs.env("log") });
  vault = await startTestVault({ sessionLog: log.reach("proxy"), env: certs.env("proxy") });
  broker = await startTestBroker({
    MH_CREDENTIAL_PROXY_ADDR: vault.address,
    MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.broker,
    ...log.reach("broker"),
    ...certs.env("broker"),
  });
  git = await startGitServer({ username: "x-access-token", token: TOKEN });
  await git.seed("org/app.git", { "README.md": "over TLS\n" });
});

afterAll(async () => {
  await broker?.stop();
  await git?.close();
  await vault?.stop();
  await log?.stop();
  await certs?.dispose();
});

/** A client holding `name`'s certificate (or none), trusting the CA. */
const client = (name: string | undefined): Promise<GrpcTls> => callerTls(certs.dir, name);

describe("services over mutual TLS", () => {
  it("a sandbox clones and pushes through the broker and the proxy's https remote endpoint", async () => {
    expect(vault.handle.remoteUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const admin = vault.client("admin");
    const vaultId = await newVault(admin);
    await putGitToken(admin, vaultId, `${git.url}/org`, TOKEN);
    const { session } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([vaultId]) });
    const sessionId = session!.sessionId;
    const sandboxId = await provision(broker.client, sessionId, { repositories: [{ url: `${git.url}/org/app.git`, mountPath: "app", checkout: "" }] });
    const sh = (command: string) => run(broker.client, sandboxId, "bash", { command }, { sessionId, timeoutMs: 60_000 });
    expect((await sh("cat app/README.md")).output).toBe("over TLS");
    const push = await sh(
      "cd /workspace/app && git config user.email a@example.com && git config user.name A && echo tls > T.md && git add T.md && git commit -qm 'over tls' && git push -q origin HEAD:main 2>&1",
    );
    expect(push.isError).toBe(false);
    expect(git.git("org/app.git", "log", "-1", "--format=%s", "main").trim()).toBe("over tls");
  });

  it("refuses plaintext callers and TLS callers without a certificate from the CA, whatever their token", async () => {
    const logToken = (await readFile(log.tokens.tokenFile.admin, "utf8")).trim();
    const { session } = await log.client.createSession({ sessionId: "", metadata: undefined });
    const getSession = async (tls: GrpcTls): Promise<string | undefined> => {
      const raw = createClient(SessionLogClient, `127.0.0.1:${log.handle.port}`, { bearerToken: logToken, credentials: tls.client });
      try {
        const res = await promisify(raw, SessionLogService).getSession(GetSessionRequest.fromPartial({ sessionId: session!.sessionId }), { deadlineMs: 5_000 });
        return res.session?.sessionId;
      } finally {
        raw.close();
      }
    };
    expect(await getSession(await client("broker"))).toBe(session!.sessionId);
    await expect(getSession(PLAINTEXT)).rejects.toMatchObject({ code: "UNAVAILABLE" });
    await expect(getSession(await client(undefined))).rejects.toMatchObject({ code: "UNAVAILABLE" });

    const raw = createClient(CredentialVaultProxyClient, vault.address, { bearerToken: vault.tokens.admin, credentials: (await client(undefined)).client });
    try {
      const listed = promisify(raw, CredentialVaultProxyService).listVaults(ListVaultsRequest.fromPartial({}), { deadlineMs: 5_000 });
      await expect(listed).rejects.toMatchObject({ code: "UNAVAILABLE" });
    } finally {
      raw.close();
    }
  });

  it("a proxy serving TLS refuses to start with an http:// remote endpoint (the broker would send its token in clear)", async () => {
    const started = startTestVault({ sessionLog: log.reach("proxy"), env: { ...certs.env("proxy"), MH_REMOTE_HTTP_URL: "http://127.0.0.1:1" } });
    await expect(started).rejects.toMatchObject({ code: "FAILED_PRECONDITION", field: "MH_REMOTE_HTTP_URL" });
  });

  it("the proxy's remote endpoint speaks only TLS and asks for a client certificate", async () => {
    const url = new URL(vault.handle.remoteUrl);
    const headers = { [SERVICE_AUTH_HEADER]: `Bearer ${vault.tokens.broker}` };
    // Plain HTTP to the TLS port: the server never parses it as a request.
    const plain = await new Promise<string>((resolve) => {
      const req = httpRequest({ host: url.hostname, port: url.port, path: "/git/x/info/refs", headers }, (res) => resolve(`status ${res.statusCode}`));
      req.on("error", (err) => resolve(`error ${err.message}`));
      req.end();
    });
    expect(plain).toMatch(/^error /);
    const ca = await readFile(certs.ca);
    const tlsGet = (opts: { cert?: Buffer; key?: Buffer }) =>
      new Promise<string>((resolve) => {
        const req = httpsRequest({ host: url.hostname, port: url.port, path: "/git/x/info/refs", headers, ca, ...opts }, (res) => {
          res.resume();
          resolve(`status ${res.statusCode}`);
        });
        req.on("error", (err) => resolve(`error ${err.message}`));
        req.end();
      });
    expect(await tlsGet({})).toMatch(/^error /);
    const someone = { cert: await readFile(join(certs.dir, "someone.pem")), key: await readFile(join(certs.dir, "someone.key")) };
    // A certificate from the CA gets the request to the proxy, which then judges the token and capability (no remote here).
    expect(await tlsGet(someone)).toMatch(/^status 4\d\d$/);
  });
});
