import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EgressPolicy, EgressRefused, egressRefusal, isPrivateAddress } from "./egress-policy.js";

describe("isPrivateAddress", () => {
  it("refuses loopback, link-local, RFC 1918, CGNAT, unspecified, multicast, ULA and mapped forms", () => {
    const refused = [
      "127.0.0.1", "127.1.2.3", "0.0.0.0", "10.0.0.1", "172.16.5.4", "172.31.255.255", "192.168.1.1", "169.254.169.254",
      "100.64.0.1", "100.127.255.254", "224.0.0.1", "255.255.255.255",
      "::1", "::", "[::1]", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:a9fe:a9fe", "::127.0.0.1",
    ];
    for (const a of refused) expect(isPrivateAddress(a), a).toBe(true);
    for (const a of ["8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "example.com"]) expect(isPrivateAddress(a), a).toBe(false);
  });
});

describe("EgressPolicy", () => {
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => res.end("internal"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("refuses fetch to a private IP literal and to a name resolving to one, naming the host and the setting", async () => {
    const policy = new EgressPolicy(false);
    try {
      for (const host of ["127.0.0.1", "localhost"]) {
        const err: unknown = await policy.fetch(`http://${host}:${port}/`).then(
          () => undefined,
          (e: unknown) => e,
        );
        const refused = egressRefusal(err);
        expect(refused, host).toBeInstanceOf(EgressRefused);
        expect(refused?.code).toBe("PERMISSION_DENIED");
        expect(refused?.message).toContain(host);
        expect(refused?.message).toContain("MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS=true");
      }
    } finally {
      await policy.close();
    }
  });

  it("refuses node:http requests through its lookup", async () => {
    const policy = new EgressPolicy(false);
    const err = await new Promise<Error>((resolve) => {
      const req = request({ host: "localhost", port, lookup: policy.lookup }, () => resolve(new Error("connected")));
      req.on("error", resolve);
      req.end();
    });
    expect(err).toBeInstanceOf(EgressRefused);
    expect(() => policy.check("127.0.0.1")).toThrow(EgressRefused);
    expect(() => policy.check("[::1]")).toThrow(/::1 is on a private network/);
  });

  it("connects anywhere when the deployment allows private networks", async () => {
    const policy = new EgressPolicy(true);
    try {
      for (const host of ["127.0.0.1", "localhost"]) {
        const res = await policy.fetch(`http://${host}:${port}/`);
        expect(await res.text()).toBe("internal");
      }
      expect(() => policy.check("127.0.0.1")).not.toThrow();
      const status = await new Promise<number | Error>((resolve) => {
        const req = request({ host: "localhost", port, lookup: policy.lookup }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on("error", resolve);
        req.end();
      });
      expect(status).toBe(200);
    } finally {
      await policy.close();
    }
  });
});
