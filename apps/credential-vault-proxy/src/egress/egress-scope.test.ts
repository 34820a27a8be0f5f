import { describe, expect, it } from "vitest";
import { ANY_PUBLIC_HOST, scopeAllows, unrestrictedLimits } from "./egress-scope.js";

const at = (host: string, port = 443) => ({ host: port === 443 ? host : `${host}:${port}`, hostname: host, port });

describe("scopeAllows", () => {
  const limits = unrestrictedLimits(["80", "443"], ["*.internal.example", "metadata.example"]);

  it("allows an allowlist's hosts on their default port only, as the deployment allows", () => {
    expect(scopeAllows(["pypi.org", "*.example.com"], at("pypi.org"), limits)).toEqual({ allowed: true, publicOnly: false });
    expect(scopeAllows(["pypi.org", "*.example.com"], at("a.example.com"), limits).allowed).toBe(true);
    expect(scopeAllows(["pypi.org"], at("pypi.org", 8443), limits)).toEqual({ allowed: false, why: "pypi.org is not an allowed host of this sandbox" });
    expect(scopeAllows(["pypi.org"], at("evil.org"), limits).allowed).toBe(false);
  });

  it("lets unrestricted reach public hosts on the open ports, not the denied hosts, and marks it public-only", () => {
    expect(scopeAllows([ANY_PUBLIC_HOST], at("anything.org"), limits)).toEqual({ allowed: true, publicOnly: true });
    expect(scopeAllows([ANY_PUBLIC_HOST], at("anything.org", 25), limits)).toEqual({ allowed: false, why: "port 25 is not open to unrestricted egress here (ports 80, 443)" });
    expect(scopeAllows([ANY_PUBLIC_HOST], at("db.internal.example"), limits).allowed).toBe(false);
    expect(scopeAllows([ANY_PUBLIC_HOST], at("metadata.example"), limits).allowed).toBe(false);
    expect(scopeAllows([ANY_PUBLIC_HOST], at("x.org"), unrestrictedLimits(["none"], [])).allowed).toBe(false);
  });

  it("refuses a malformed port setting, naming it", () => {
    expect(() => unrestrictedLimits(["443", "http"], [])).toThrow(/MH_EGRESS_UNRESTRICTED_PORTS/);
  });
});
