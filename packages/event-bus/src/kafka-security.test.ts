/** What a service's Kafka TLS and SASL settings turn into, and how each bad one fails the start. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readConfig } from "@metaharness/service-kit/config";
import { describe, expect, it } from "vitest";
import { createKafkaBus } from "./kafka-bus.js";
import { KAFKA_SECURITY_ENV, loadKafkaSecurity } from "./kafka-security.js";

const dir = mkdtempSync(join(tmpdir(), "mh-kafka-security-"));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const password = file("password", "s3cret-for-kafka\n");
const load = (env: Record<string, string>) => loadKafkaSecurity(readConfig(KAFKA_SECURITY_ENV, env));

describe("loadKafkaSecurity", () => {
  it("is plaintext without authentication when nothing is set", async () => {
    expect(await load({})).toEqual({});
  });

  it("turns TLS on with the system's roots, and reads the password from its file without the newline", async () => {
    const got = await load({ MH_KAFKA_TLS: "true", MH_KAFKA_SASL_MECHANISM: "plain", MH_KAFKA_SASL_USERNAME: "svc", MH_KAFKA_SASL_PASSWORD_FILE: password });
    expect(got).toEqual({ tls: {}, sasl: { mechanism: "plain", username: "svc", password: "s3cret-for-kafka" } });
  });

  it("lets SCRAM go without TLS (the password never travels), but not PLAIN", async () => {
    const scram = { MH_KAFKA_SASL_MECHANISM: "scram-sha-512", MH_KAFKA_SASL_USERNAME: "svc", MH_KAFKA_SASL_PASSWORD_FILE: password };
    expect((await load(scram)).sasl?.mechanism).toBe("scram-sha-512");
    await expect(load({ ...scram, MH_KAFKA_SASL_MECHANISM: "plain" })).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      field: "MH_KAFKA_SASL_MECHANISM",
    });
  });

  it.each([
    [{ MH_KAFKA_SASL_MECHANISM: "scram-sha-256", MH_KAFKA_SASL_PASSWORD_FILE: "/p" }, "MH_KAFKA_SASL_USERNAME"],
    [{ MH_KAFKA_SASL_MECHANISM: "scram-sha-256", MH_KAFKA_SASL_USERNAME: "svc" }, "MH_KAFKA_SASL_PASSWORD_FILE"],
    [{ MH_KAFKA_SASL_MECHANISM: "scram-sha-256", MH_KAFKA_SASL_USERNAME: "svc", MH_KAFKA_SASL_PASSWORD_FILE: "/no/such/file" }, "MH_KAFKA_SASL_PASSWORD_FILE"],
    [{ MH_KAFKA_SASL_MECHANISM: "scram-sha-256", MH_KAFKA_SASL_USERNAME: "svc", MH_KAFKA_SASL_PASSWORD_FILE: file("empty", "\n") }, "MH_KAFKA_SASL_PASSWORD_FILE"],
    [{ MH_KAFKA_SASL_USERNAME: "svc" }, "MH_KAFKA_SASL_USERNAME"],
    [{ MH_KAFKA_TLS_CERT_FILE: "/c.pem" }, "MH_KAFKA_TLS_KEY_FILE"],
    [{ MH_KAFKA_TLS_CA_FILE: file("not-pem", "hello") }, "MH_KAFKA_TLS_CA_FILE"],
    [{ MH_KAFKA_TLS_CA_FILE: file("bad-pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n") }, "MH_KAFKA_TLS_CA_FILE"],
  ])("refuses %j, naming %s", async (env, variable) => {
    const err = await load(env).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "FAILED_PRECONDITION", field: variable });
    expect((err as Error).message).toContain(variable);
  });

  it("refuses an unknown mechanism when the settings are read", () => {
    expect(() => readConfig(KAFKA_SECURITY_ENV, { MH_KAFKA_SASL_MECHANISM: "gssapi" })).toThrow(/MH_KAFKA_SASL_MECHANISM/);
  });
});

describe("createKafkaBus", () => {
  it("refuses PLAIN without TLS and a certificate without its key, naming the option", () => {
    const base = { brokers: ["127.0.0.1:9092"], clientId: "t" };
    expect(() => createKafkaBus({ ...base, sasl: { mechanism: "plain", username: "u", password: "p" } })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", field: "sasl.mechanism" }),
    );
    expect(() => createKafkaBus({ ...base, tls: { cert: Buffer.from("x") } })).toThrow(expect.objectContaining({ field: "tls.key" }));
  });
});
