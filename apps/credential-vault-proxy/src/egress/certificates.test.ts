import { execFileSync } from "node:child_process";
import { generateKeyPairSync, X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { selfSignedCa, serverCertificate } from "./certificates.js";

describe("egress certificates", () => {
  it("issue a CA and server certificates (DNS and IP) that openssl verifies against that CA alone", () => {
    const ca = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
    const leaf = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
    const notAfter = new Date(Date.now() + 3600_000);
    const caPem = selfSignedCa(ca, "Meta-Harness egress CA sbx_1", notAfter);
    const dns = serverCertificate(caPem, ca.privateKey, leaf.publicKey, "api.example.com", new Date(Date.now() + 7 * 86400_000));
    const ip = serverCertificate(caPem, ca.privateKey, leaf.publicKey, "127.0.0.2", notAfter);
    const caCert = new X509Certificate(caPem);
    expect(caCert.ca).toBe(true);
    expect(new X509Certificate(dns).checkIssued(caCert)).toBe(true);
    expect(new X509Certificate(dns).verify(ca.publicKey)).toBe(true);
    expect(new X509Certificate(dns).subjectAltName).toBe("DNS:api.example.com");
    expect(new X509Certificate(ip).checkIP("127.0.0.2")).toBe("127.0.0.2");
    // Never valid past its CA.
    expect(new Date(new X509Certificate(dns).validTo).getTime()).toBeLessThanOrEqual(new Date(caCert.validTo).getTime());
    const dir = mkdtempSync(join(tmpdir(), "mh-certs-"));
    try {
      writeFileSync(join(dir, "ca.pem"), caPem);
      writeFileSync(join(dir, "leaf.pem"), dns);
      const out = execFileSync("openssl", ["verify", "-x509_strict", "-purpose", "sslserver", "-CAfile", join(dir, "ca.pem"), join(dir, "leaf.pem")], { encoding: "utf8" });
      expect(out.trim()).toMatch(/leaf.pem: OK$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
