import { Metadata } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { ServiceTokens } from "./service-tokens.js";

const ROLES = ["harness", "hand"] as const;
const HARNESS = "h".repeat(32);
const HAND = "k".repeat(40);
const file = { services: [{ name: "harness-1", role: "harness", token: HARNESS }, { name: "kv", role: "hand", token: HAND }] };

describe("ServiceTokens", () => {
  it("names the caller of a known bearer token, from a value or from gRPC metadata", () => {
    const tokens = ServiceTokens.from(file, ROLES);
    expect(tokens.authenticate(`Bearer ${HARNESS}`)).toEqual({ name: "harness-1", role: "harness" });
    const metadata = new Metadata();
    metadata.set("authorization", `Bearer ${HAND}`);
    expect(tokens.callerOf(metadata)).toEqual({ name: "kv", role: "hand" });
  });

  it("refuses a missing, malformed or unknown token as UNAUTHENTICATED", () => {
    const tokens = ServiceTokens.from(file, ROLES);
    for (const value of [undefined, "", HARNESS, `Basic ${HARNESS}`, `Bearer ${"x".repeat(32)}`, `Bearer ${HARNESS} extra`]) {
      expect(() => tokens.authenticate(value)).toThrow(expect.objectContaining({ code: "UNAUTHENTICATED" }));
    }
    expect(() => tokens.callerOf(new Metadata())).toThrow(expect.objectContaining({ code: "UNAUTHENTICATED" }));
  });

  it("names a caller it accepted before again, and still refuses every other value, also past the values it keeps", () => {
    const tokens = ServiceTokens.from(file, ROLES);
    for (let i = 0; i < 70; i++) {
      // Each a different value of the same token (whitespace around it is allowed): more than it keeps.
      expect(tokens.authenticate(`${" ".repeat(i)}Bearer ${HARNESS}`)).toEqual({ name: "harness-1", role: "harness" });
      expect(tokens.authenticate(`Bearer ${HARNESS}`)).toEqual({ name: "harness-1", role: "harness" });
    }
    for (const value of [`Bearer ${HARNESS} extra`, `Bearer ${HARNESS.slice(1)}`, `bearer ${HARNESS}`, `Bearer ${"x".repeat(32)}`]) {
      expect(() => tokens.authenticate(value)).toThrow(expect.objectContaining({ code: "UNAUTHENTICATED" }));
    }
    expect(tokens.authenticate(`Bearer ${HAND}`)).toEqual({ name: "kv", role: "hand" });
  });

  it("refuses a file that gives a role the service does not know, a short token or one token twice, naming the entry", () => {
    const entry = (over: Record<string, unknown>) => ({ services: [file.services[0], { name: "x", role: "hand", token: "t".repeat(32), ...over }] });
    expect(() => ServiceTokens.from(entry({ role: "admin" }), ROLES, "f.json")).toThrow("f.json: services[1].role must be one of harness, hand");
    expect(() => ServiceTokens.from(entry({ token: "short" }), ROLES, "f.json")).toThrow("f.json: services[1].token must have at least 32 characters");
    expect(() => ServiceTokens.from(entry({ token: HARNESS }), ROLES, "f.json")).toThrow("f.json: services[1] reuses another service's token");
    expect(() => ServiceTokens.from(entry({ name: "" }), ROLES, "f.json")).toThrow("f.json: services[1].name is required");
    expect(() => ServiceTokens.from([], ROLES, "f.json")).toThrow('f.json: expected {"services": [...]}');
    expect(() => ServiceTokens.from(entry({ scopes: ["ok", ""] }), ROLES, "f.json")).toThrow("f.json: services[1].scopes must be a list of non-empty strings");
  });

  it("keeps an entry's scopes with its caller", () => {
    const tokens = ServiceTokens.from({ services: [{ name: "kv", role: "hand", token: HAND, scopes: ["kv-device"] }] }, ROLES);
    expect(tokens.authenticate(`Bearer ${HAND}`)).toEqual({ name: "kv", role: "hand", scopes: ["kv-device"] });
  });
});
