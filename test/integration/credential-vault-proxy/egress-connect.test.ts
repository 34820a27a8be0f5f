/**
 * HTTPS egress by CONNECT, inside real bubblewrap sandboxes, against the real registries this
 * machine reaches: `allow_package_managers` lets pip (in a venv) and npm install a small real
 * package; a host off the list is refused with a reason the client prints; unrestricted reaches a
 * public host but never a private address, even on a deployment whose own upstreams may be private.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NetworkMode, type NetworkPolicy } from "@metaharness/proto";
import { provision, rejection, run, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";
import { startTestLog, type TestLog } from "../../support/session-log.js";
import { metadataWithVaults, startTestVault, type TestVault } from "../../support/vault.js";

let log: TestLog;
let vault: TestVault;
let broker: TestBroker;

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  vault = await startTestVault({ sessionLog: log.reach("proxy") });
  broker = await startTestBroker({ MH_CREDENTIAL_PROXY_ADDR: vault.address, MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.broker });
});
afterAll(async () => {
  await broker?.stop();
  await vault?.stop();
  await log?.stop();
});

async function sandbox(network: NetworkPolicy): Promise<{ sessionId: string; sandboxId: string }> {
  const { session } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([]) });
  const sessionId = session!.sessionId;
  return { sessionId, sandboxId: await provision(broker.client, sessionId, { network }) };
}

const sh = async (s: { sessionId: string; sandboxId: string }, command: string, timeoutMs = 30_000): Promise<string> =>
  (await run(broker.client, s.sandboxId, "bash", { command }, { sessionId: s.sessionId, timeoutMs })).output;

describe("CONNECT egress", () => {
  it("installs a real package with pip (in a venv) and with npm through the package registries", async () => {
    const s = await sandbox({ mode: NetworkMode.NETWORK_MODE_ALLOWLIST, allowedHosts: [], allowPackageManagers: true });
    const pip = await sh(
      s,
      "python3 -m venv /workspace/venv && /workspace/venv/bin/pip install -q --disable-pip-version-check --no-cache-dir six==1.16.0 2>&1; /workspace/venv/bin/python -c 'import six; print(\"six\", six.__version__)'",
      180_000,
    );
    expect(pip).toContain("six 1.16.0");
    const npm = await sh(s, "mkdir -p /workspace/app && cd /workspace/app && npm install --no-audit --no-fund --silent is-number@7.0.0 2>&1; node -e 'console.log(\"is-number\", require(\"is-number\")(5))'", 180_000);
    expect(npm).toContain("is-number true");
  });

  it("refuses a host off the list, naming it in the reason the client prints", async () => {
    const s = await sandbox({ mode: NetworkMode.NETWORK_MODE_ALLOWLIST, allowedHosts: [], allowPackageManagers: true });
    const out = await sh(s, "curl -sS -v -o /dev/null https://example.com/ 2>&1 | grep -E '^< HTTP|CONNECT tunnel failed' | tr -d '\\r'");
    expect(out).toContain("< HTTP/1.1 403 example.com is not an allowed host of this sandbox");
    expect(out).toContain("CONNECT tunnel failed, response 403");
    const python = await sh(s, "python3 -c 'import urllib.request; urllib.request.urlopen(\"https://example.com/\")' 2>&1 | tail -1");
    expect(python).toMatch(/Tunnel connection failed: 403 example.com is not an allowed host of this sandbox/);
  });

  it("unrestricted reaches a public host, never a private address, and only the open ports", async () => {
    const s = await sandbox({ mode: NetworkMode.NETWORK_MODE_UNRESTRICTED, allowedHosts: [], allowPackageManagers: false });
    expect(await sh(s, "curl -sS -o /dev/null -w '%{http_code}' https://pypi.org/simple/six/")).toBe("200");
    // The test deployment allows private upstreams (MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS): unrestricted still refuses them.
    for (const target of ["127.0.0.2:443", "[::1]:443", "169.254.169.254:443", "10.1.2.3:443", "[::ffff:127.0.0.1]:443"]) {
      const out = await sh(s, `curl -sS -v -o /dev/null https://${target}/ 2>&1 | grep -E '^< HTTP' | tr -d '\\r'`);
      expect(out, target).toMatch(/^< HTTP\/1.1 403 .* is on a private network .*unrestricted egress never reaches/);
    }
    expect(await sh(s, "curl -sS -v -o /dev/null https://pypi.org:8443/ 2>&1 | grep -E '^< HTTP' | tr -d '\\r'")).toContain("403 port 8443 is not open to unrestricted egress here");
  });

  it("OpenEgress refuses a scope it cannot give, naming the field, and a deployment can refuse unrestricted", async () => {
    const { session } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([]) });
    const open = (scope: { allowedHosts: string[]; allowPackageManagers: boolean; unrestricted: boolean }, client = vault.client("broker")) =>
      rejection(client.openEgress({ sessionId: session!.sessionId, sandboxId: "sbx_scope", ttlSeconds: 0, ...scope }));
    expect(await open({ allowedHosts: ["pypi.org"], allowPackageManagers: false, unrestricted: true })).toMatchObject({ code: "INVALID_ARGUMENT", field: "allowed_hosts" });
    expect(await open({ allowedHosts: [], allowPackageManagers: false, unrestricted: false })).toMatchObject({ code: "INVALID_ARGUMENT", field: "allowed_hosts" });
    const narrow = await vault.startReplica({ MH_EGRESS_UNRESTRICTED_PORTS: "none" });
    try {
      expect(await open({ allowedHosts: [], allowPackageManagers: false, unrestricted: true }, narrow.client("broker"))).toMatchObject({ code: "FAILED_PRECONDITION", field: "unrestricted" });
    } finally {
      await narrow.stop();
    }
  });
});
