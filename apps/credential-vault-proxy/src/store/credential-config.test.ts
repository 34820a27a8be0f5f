import { describe, expect, it } from "vitest";
import { checkExpiry, gitMatchScore, hostMatches, normalizeUrl } from "./credential-config.js";

describe("matching", () => {
  it("normalises URLs", () => {
    expect(normalizeUrl("HTTPS://GitHub.com:443/Org/Repo/", "f")).toBe("https://github.com/Org/Repo");
    expect(() => normalizeUrl("https://u:p@h/x", "f")).toThrow(/credentials/);
    expect(() => normalizeUrl("file:///etc", "f")).toThrow(/http/);
  });

  it("matches git tokens by prefix at a path boundary, or by host", () => {
    const byPrefix = { urlPrefix: "https://git.example.com/org", host: "", username: "" };
    expect(gitMatchScore(byPrefix, "https://git.example.com/org/repo.git")).toBeGreaterThan(1000);
    expect(gitMatchScore(byPrefix, "https://git.example.com/organisation/repo.git")).toBe(0);
    const byHost = { urlPrefix: "", host: "git.example.com", username: "" };
    expect(gitMatchScore(byHost, "https://git.example.com/any/repo")).toBe(1);
    expect(gitMatchScore(byHost, "https://evil.com/git.example.com")).toBe(0);
  });

  it("matches hosts and wildcard patterns", () => {
    expect(hostMatches("api.example.com", "API.example.com")).toBe(true);
    expect(hostMatches("api.example.com", "api.example.com:8080")).toBe(false);
    expect(hostMatches("*.example.com", "a.example.com")).toBe(true);
    expect(hostMatches("*.example.com", "example.com")).toBe(false);
    expect(hostMatches("*.example.com", "evilexample.com")).toBe(false);
    expect(hostMatches("h:8080", "h:8081")).toBe(false);
  });
});

describe("expiry", () => {
  it("refuses a time no Date holds (seconds beyond +-8.64e12 on the wire), naming the field", () => {
    expect(() => checkExpiry(new Date(Number.NaN), "mcp_oauth.expires_at")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", field: "mcp_oauth.expires_at" }));
    expect(() => checkExpiry(new Date(8.64e15), "expires_at")).not.toThrow();
    expect(() => checkExpiry(undefined, "expires_at")).not.toThrow();
  });
});
