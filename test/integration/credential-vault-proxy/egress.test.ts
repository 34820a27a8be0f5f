/**
 * Egress of a NETWORK_MODE_ALLOWLIST sandbox: programs inside use HTTP_PROXY (a loopback relay to
 * the broker's socket); only allowed hosts are reached, through the credential proxy, which
 * injects the session's http_bearer credential. Inside, nothing holds the secret, and a server
 * echoing the credential back (in its body, compressed or not, or a header) gets it scrubbed.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NetworkMode } from "@metaharness/proto";
import { provision, run, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";
import { startTestLog, type TestLog } from "../../support/session-log.js";
import { metadataWithVaults, startTestVault, vaultWithBearer, type TestVault } from "../../support/vault.js";

const BEARER = "sk_egress_test_8d7c6b5a4f3e2d1c";
// 127.0.0.2: a loopback address that is not in the sandbox's NO_PROXY (localhost, 127.0.0.1).
const HOST = "127.0.0.2";

let log: TestLog;
let vault: TestVault;
let broker: TestBroker;
let upstream: Server;
let origin: string;
const seen: Array<Record<string, string | string[] | undefined>> = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    seen.push(req.headers);
    const auth = req.headers.authorization ?? "";
    if (req.url === "/echo") res.writeHead(200, { "x-echo": auth }).end(`you sent: ${auth}`);
    else if (req.url === "/echo-gzip") res.writeHead(200, { "content-encoding": "gzip" }).end(gzipSync(`you sent: ${auth}`));
    else res.writeHead(200, { "content-type": "text/plain" }).end("hello from upstream");
  });
  await new Promise<void>((resolve) => upstream.listen(0, HOST, resolve));
  origin = `${HOST}:${(upstream.address() as AddressInfo).port}`;
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  vault = await startTestVault({ sessionLog: log.reach("proxy"), env: { MH_EGRESS_UPSTREAM_SCHEME: "http" } });
  broker = await startTestBroker({ MH_CREDENTIAL_PROXY_ADDR: vault.address, MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.broker });
});
afterAll(async () => {
  await broker?.stop();
  await vault?.stop();
  await log?.stop();
  await new Promise((resolve) => upstream?.close(resolve));
});

async function allowlisted(hosts: string[]): Promise<{ sessionId: string; sandboxId: string }> {
  const vaultId = await vaultWithBearer(vault.client("admin"), origin, BEARER);
  const { session } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([vaultId]) });
  const sessionId = session!.sessionId;
  const sandboxId = await provision(broker.client, sessionId, { network: { mode: NetworkMode.NETWORK_MODE_ALLOWLIST, allowedHosts: hosts, allowPackageManagers: false } });
  return { sessionId, sandboxId };
}

const sh = async (s: { sessionId: string; sandboxId: string }, command: string): Promise<string> =>
  (await run(broker.client, s.sandboxId, "bash", { command }, { sessionId: s.sessionId, timeoutMs: 30_000 })).output;

describe("egress with injected credentials", () => {
  it("reaches an allowed host with the credential injected, which the sandbox never sees", async () => {
    const s = await allowlisted([origin]);
    expect(await sh(s, `curl -s http://${origin}/hello`)).toBe("hello from upstream");
    expect(seen.at(-1)?.["authorization"]).toBe(`Bearer ${BEARER}`);
    expect(await sh(s, `curl -s http://${origin}/echo`)).toBe("you sent: [redacted]");
    expect(await sh(s, `curl -s -D - -o /dev/null http://${origin}/echo | grep -i x-echo | tr -d '\\r'`)).toBe("x-echo: [redacted]");
    expect(await sh(s, `curl -s --compressed http://${origin}/echo-gzip`)).toBe("you sent: [redacted]");
    expect(await sh(s, "env | grep -i proxy | sort | tr '\\n' ' '")).not.toContain(BEARER);
  });

  it("refuses hosts off the allowlist (plain or by CONNECT), and sandboxes without ALLOWLIST", async () => {
    const s = await allowlisted(["api.example.com"]);
    expect(await sh(s, `curl -s -o /dev/null -w '%{http_code}' http://${origin}/hello`)).toBe("403");
    const before = seen.length;
    expect(await sh(s, `curl -s -o /dev/null -w '%{http_code}' https://${origin}/hello; echo " exit $?"`)).toMatch(/exit [1-9]/);
    expect(seen.length).toBe(before);

    const { session } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([]) });
    const none = { sessionId: session!.sessionId, sandboxId: await provision(broker.client, session!.sessionId) };
    expect(await sh(none, `curl -s -m 5 http://${origin}/hello; echo " exit $?"`)).toMatch(/exit [1-9]/);
    expect(await sh(none, "ls /run/metaharness | wc -l")).toBe("0");
  });
});
