/**
 * HTTPS to a host the session holds a credential for, inside a real bubblewrap sandbox: the proxy
 * terminates the sandbox's TLS with a certificate from the sandbox's own CA (which the sandbox
 * trusts through the bundle the broker gives it, and nothing else does), verifies the real
 * upstream against its roots (here a local HTTPS server with its own CA, given to the proxy as
 * MH_EGRESS_EXTRA_TRUST_FILE), injects the credential and scrubs the answer. The credential goes
 * only to its own host: not after a redirect to another host (issue 25, hole 5), by CONNECT or by
 * a plain request, and not to another host named in a Host header or request line.
 */
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NetworkMode } from "@metaharness/proto";
import { provision, run, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";
import { startTestLog, type TestLog } from "../../support/session-log.js";
import { mintDevCerts, type DevCerts } from "../../support/tls.js";
import { metadataWithVaults, startTestVault, vaultWithBearer, type TestVault } from "../../support/vault.js";

const BEARER = "sk_intercept_test_5e4d3c2b1a09f8e7";

let log: TestLog;
let vault: TestVault;
let broker: TestBroker;
let certs: DevCerts;
let upstreamCa: Buffer;
const servers: Server[] = [];
/** What each upstream saw: [path, authorization]. */
const seen = { a: [] as Array<[string, string | undefined]>, b: [] as Array<[string, string | undefined]> };
let a = "";
let b = "";

async function https(name: "a" | "b", handler: (path: string, auth: string) => [number, Record<string, string>, string]): Promise<string> {
  const tls = { cert: await readFile(`${certs.dir}/upstream.pem`), key: await readFile(`${certs.dir}/upstream.key`) };
  const server = createServer(tls, (req, res) => {
    seen[name].push([req.url ?? "", req.headers.authorization]);
    const [status, headers, body] = handler(req.url ?? "", req.headers.authorization ?? "");
    res.writeHead(status, headers).end(body);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  certs = await mintDevCerts(["upstream"]);
  upstreamCa = await readFile(certs.ca);
  b = await https("b", () => [200, {}, "landed on b"]);
  a = await https("a", (path, auth) =>
    path === "/redirect" ? [302, { location: `https://${b}/landing` }, ""] : path === "/echo" ? [200, { "x-echo": auth }, `a heard ${auth}`] : [200, {}, "hello from a"],
  );
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  vault = await startTestVault({ sessionLog: log.reach("proxy"), env: { MH_EGRESS_EXTRA_TRUST_FILE: certs.ca } });
  broker = await startTestBroker({ MH_CREDENTIAL_PROXY_ADDR: vault.address, MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.broker });
});
afterAll(async () => {
  await broker?.stop();
  await vault?.stop();
  await log?.stop();
  for (const s of servers) await new Promise((resolve) => s.close(resolve));
  await certs?.dispose();
});

async function sandbox(): Promise<{ sessionId: string; sandboxId: string }> {
  const vaultId = await vaultWithBearer(vault.client("admin"), a, BEARER);
  const { session } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([vaultId]) });
  const sessionId = session!.sessionId;
  const sandboxId = await provision(broker.client, sessionId, {
    network: { mode: NetworkMode.NETWORK_MODE_ALLOWLIST, allowedHosts: [a, b], allowPackageManagers: false },
    // For the sandbox to verify b, reached by a plain tunnel: the bundle it is given plus b's CA.
    files: [{ path: "upstream-ca.pem", content: upstreamCa, mode: 0o644 }],
  });
  await run(broker.client, sandboxId, "bash", { command: "cat $SSL_CERT_FILE upstream-ca.pem > /tmp/trust.pem" }, { sessionId });
  return { sessionId, sandboxId };
}

const sh = async (s: { sessionId: string; sandboxId: string }, command: string): Promise<string> =>
  (await run(broker.client, s.sandboxId, "bash", { command }, { sessionId: s.sessionId, timeoutMs: 30_000 })).output;
// 127.0.0.1 is in the sandbox's NO_PROXY (its own loopback); these hosts are the proxy's to reach.
const curl = "curl -sS --noproxy ''";

describe("intercepted HTTPS egress", () => {
  it("serves the sandbox a certificate of its own CA, verified by its bundle, and injects the credential into the real TLS connection", async () => {
    const s = await sandbox();
    expect(await sh(s, `${curl} https://${a}/hello`)).toBe("hello from a");
    expect(seen.a.at(-1)).toEqual(["/hello", `Bearer ${BEARER}`]);
    expect(await sh(s, `${curl} -v -o /dev/null https://${a}/hello 2>&1 | grep -o 'issuer: CN=[^;]*' | head -1`)).toBe(`issuer: CN=Meta-Harness egress CA ${s.sandboxId}`);
    expect(await sh(s, `${curl} -D - https://${a}/echo | tr -d '\\r' | grep -i -e x-echo -e heard`)).toBe("x-echo: [redacted]\na heard [redacted]");
    // Without the sandbox's bundle, the proxy's certificate is trusted by nothing.
    expect(await sh(s, `${curl} --cacert /etc/ssl/certs/ca-certificates.crt https://${a}/hello 2>&1; echo " exit $?"`)).toMatch(/exit 60/);
    expect(await sh(s, "grep -c 'BEGIN PRIVATE KEY' /run/metaharness/* 2>/dev/null | grep -v ':0' | wc -l")).toBe("0");
  });

  it("never carries the credential to another host: after a redirect (tunnel or plain), by Host header, or by request line", async () => {
    const s = await sandbox();
    const beforeB = seen.b.length;
    expect(await sh(s, `${curl} -L --cacert /tmp/trust.pem https://${a}/redirect`)).toBe("landed on b");
    expect(seen.a.at(-1)).toEqual(["/redirect", `Bearer ${BEARER}`]);
    expect(await sh(s, `${curl} -L --cacert /tmp/trust.pem http://${a}/redirect`)).toBe("landed on b");
    expect(seen.b.slice(beforeB)).toEqual([
      ["/landing", undefined],
      ["/landing", undefined],
    ]);
    // A Host header naming b: the tunnel's request still goes to a, its own host.
    expect(await sh(s, `${curl} -H 'Host: ${b}' https://${a}/hello`)).toBe("hello from a");
    expect(await sh(s, `${curl} --request-target https://${b}/x -w ' %{http_code}' https://${a}/`)).toMatch(/this tunnel goes to 127\.0\.0\.1:\d+ only.* 400$/s);
    expect(seen.b.length).toBe(beforeB + 2);
  });
});
