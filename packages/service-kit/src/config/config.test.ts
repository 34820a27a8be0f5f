/** readConfig: typed values from the environment, and every problem reported at once. */
import { describe, expect, expectTypeOf, it } from "vitest";
import { ConfigError, readConfig } from "./config.js";
import { env } from "./env.js";

const spec = {
  port: env.port("MH_GRPC_PORT", { default: 15051 }),
  databaseUrl: env.url("MH_DATABASE_URL", { protocols: ["postgres", "postgresql"] }),
  maxPayloadBytes: env.int("MH_MAX_PAYLOAD_BYTES", { default: 1048576, min: 1024, max: 64 * 1048576 }),
  logLevel: env.enumOf("MH_LOG_LEVEL", ["debug", "info", "warn", "error"], { default: "info" }),
  kafkaBrokers: env.list("MH_KAFKA_BROKERS", { default: ["127.0.0.1:9092"] }),
  relayEnabled: env.bool("MH_RELAY", { default: true }),
  otlp: env.optionalUrl("MH_OTLP_ENDPOINT"),
  leaseTtlMs: env.durationMs("MH_LEASE_TTL", { default: 30_000, min: 1000 }),
  region: env.string("MH_REGION", { default: "local", pattern: /^[a-z0-9-]+$/ }),
  apiToken: env.string("MH_API_TOKEN", { secret: true, pattern: /^tok_/ }),
};

describe("readConfig", () => {
  it("returns defaults and a fully typed object", () => {
    const cfg = readConfig(spec, { MH_DATABASE_URL: "postgres://u:p@db/mh", MH_API_TOKEN: "tok_1" });
    expect(cfg).toEqual({
      port: 15051,
      databaseUrl: "postgres://u:p@db/mh",
      maxPayloadBytes: 1048576,
      logLevel: "info",
      kafkaBrokers: ["127.0.0.1:9092"],
      relayEnabled: true,
      otlp: undefined,
      leaseTtlMs: 30_000,
      region: "local",
      apiToken: "tok_1",
    });
    expectTypeOf(cfg.port).toEqualTypeOf<number>();
    expectTypeOf(cfg.logLevel).toEqualTypeOf<"debug" | "info" | "warn" | "error">();
    expectTypeOf(cfg.kafkaBrokers).toEqualTypeOf<string[]>();
    expectTypeOf(cfg.relayEnabled).toEqualTypeOf<boolean>();
    expectTypeOf(cfg.otlp).toEqualTypeOf<string | undefined>();
    expect(Object.isFrozen(cfg)).toBe(true);
  });

  it("parses set values, trimming whitespace and treating blanks as unset", () => {
    const cfg = readConfig(spec, {
      MH_GRPC_PORT: " 0 ",
      MH_DATABASE_URL: "postgresql://db/mh",
      MH_MAX_PAYLOAD_BYTES: "2048",
      MH_LOG_LEVEL: "debug",
      MH_KAFKA_BROKERS: "k1:9092, k2:9092,,",
      MH_RELAY: "OFF",
      MH_OTLP_ENDPOINT: "http://127.0.0.1:4318",
      MH_LEASE_TTL: "5m",
      MH_REGION: "",
      MH_API_TOKEN: "tok_2",
    });
    expect(cfg).toMatchObject({
      port: 0,
      maxPayloadBytes: 2048,
      logLevel: "debug",
      kafkaBrokers: ["k1:9092", "k2:9092"],
      relayEnabled: false,
      otlp: "http://127.0.0.1:4318",
      leaseTtlMs: 300_000,
      region: "local",
    });
  });

  it("lists every bad variable with its value and what was expected", () => {
    let error: unknown;
    try {
      readConfig(spec, {
        MH_GRPC_PORT: "70000",
        MH_DATABASE_URL: "mysql://root:hunter2@db/mh",
        MH_MAX_PAYLOAD_BYTES: "12abc",
        MH_LOG_LEVEL: "verbose",
        MH_RELAY: "maybe",
        MH_OTLP_ENDPOINT: "not a url",
        MH_LEASE_TTL: "10",
        MH_REGION: "Upper Case",
        MH_API_TOKEN: "secret-value",
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const { problems, message } = error as ConfigError;
    expect(problems).toEqual([
      'MH_GRPC_PORT="70000" is invalid (expected an integer port 0-65535)',
      'MH_DATABASE_URL="mysql://root:***@db/mh" is invalid (expected a postgres|postgresql URL)',
      'MH_MAX_PAYLOAD_BYTES="12abc" is invalid (expected an integer between 1024 and 67108864)',
      'MH_LOG_LEVEL="verbose" is invalid (expected one of debug, info, warn, error)',
      'MH_RELAY="maybe" is invalid (expected a boolean (true/false, 1/0, yes/no, on/off))',
      'MH_OTLP_ENDPOINT="not a url" is invalid (expected an absolute URL)',
      "MH_LEASE_TTL=\"10\" is invalid (expected a duration like 1500, 1500ms, 30s, 5m or 1h, >= 1000 ms)",
      'MH_REGION="Upper Case" is invalid (expected a string matching /^[a-z0-9-]+$/)',
      "MH_API_TOKEN=<redacted> is invalid (expected a string matching /^tok_/)",
    ]);
    expect(message).toContain("invalid configuration:\n  - MH_GRPC_PORT=");
    expect(message).not.toContain("hunter2");
    expect(message).not.toContain("secret-value");
  });

  it("reports required variables that are missing", () => {
    expect(() => readConfig(spec, {})).toThrow(
      expect.objectContaining({
        problems: [
          "MH_DATABASE_URL is not set (expected a postgres|postgresql URL)",
          "MH_API_TOKEN is not set (expected a string matching /^tok_/)",
        ],
      }),
    );
  });

  it("makes any reader optional", () => {
    const cfg = readConfig({ limit: env.optional(env.int("MH_LIMIT", { min: 1 })) }, {});
    expectTypeOf(cfg.limit).toEqualTypeOf<number | undefined>();
    expect(cfg.limit).toBeUndefined();
    expect(() => readConfig({ limit: env.optional(env.int("MH_LIMIT", { min: 1 })) }, { MH_LIMIT: "0" })).toThrow(
      ConfigError,
    );
  });

  it("takes absolute paths with spaces, and names a relative one", () => {
    const paths = { file: env.absolutePath("MH_TOKEN_FILE") };
    expect(readConfig(paths, { MH_TOKEN_FILE: "/Users/Jane Doe/.mh/it's.token" }).file).toBe("/Users/Jane Doe/.mh/it's.token");
    expect(() => readConfig(paths, { MH_TOKEN_FILE: "secrets/log.token" })).toThrow(
      'MH_TOKEN_FILE="secrets/log.token" is invalid (expected an absolute path)',
    );
    expect(() => readConfig(paths, { MH_TOKEN_FILE: "/a\nb" })).toThrow(ConfigError);
  });
});
