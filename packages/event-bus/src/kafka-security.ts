/**
 * How a service reaches a Kafka cluster that is not a loopback broker: TLS and SASL, read from the
 * same variables by every service that talks to Kafka (spread KAFKA_SECURITY_ENV into its config
 * spec, hand loadKafkaSecurity's result to createKafkaBus):
 * - MH_KAFKA_TLS=true: TLS to every broker, checked against the system's roots (a managed
 *   cluster's public certificate) or MH_KAFKA_TLS_CA_FILE. Setting the CA, certificate or key
 *   file turns TLS on too: a service set up for TLS never falls back to plaintext.
 * - MH_KAFKA_TLS_CERT_FILE + MH_KAFKA_TLS_KEY_FILE: this service's certificate, for listeners
 *   with ssl.client.auth=required.
 * - MH_KAFKA_SASL_MECHANISM=plain|scram-sha-256|scram-sha-512, MH_KAFKA_SASL_USERNAME and
 *   MH_KAFKA_SASL_PASSWORD_FILE (a file, like every secret we read: never the environment).
 *   PLAIN sends the password as is, so it needs TLS.
 * Unset, Kafka is plaintext without authentication, as on a laptop. Files are read and checked
 * once at start; a bad one fails the start, naming the variable.
 */
import { readFile } from "node:fs/promises";
import { checkKeyPair, checkRoots, env, invalidSetting, readPem } from "@metaharness/service-kit/config";
import type { KafkaSasl, KafkaTls } from "./kafka-options.js";

/** The Kafka security variables, to spread into a service's config spec. */
export const KAFKA_SECURITY_ENV = {
  kafkaTls: env.bool("MH_KAFKA_TLS", { default: false }),
  kafkaTlsCaFile: env.optional(env.absolutePath("MH_KAFKA_TLS_CA_FILE")),
  kafkaTlsCertFile: env.optional(env.absolutePath("MH_KAFKA_TLS_CERT_FILE")),
  kafkaTlsKeyFile: env.optional(env.absolutePath("MH_KAFKA_TLS_KEY_FILE")),
  kafkaSaslMechanism: env.enumOf("MH_KAFKA_SASL_MECHANISM", ["none", "plain", "scram-sha-256", "scram-sha-512"], { default: "none" }),
  kafkaSaslUsername: env.optional(env.string("MH_KAFKA_SASL_USERNAME")),
  kafkaSaslPasswordFile: env.optional(env.absolutePath("MH_KAFKA_SASL_PASSWORD_FILE")),
} as const;

/** What KAFKA_SECURITY_ENV reads. */
export interface KafkaSecuritySettings {
  readonly kafkaTls: boolean;
  readonly kafkaTlsCaFile: string | undefined;
  readonly kafkaTlsCertFile: string | undefined;
  readonly kafkaTlsKeyFile: string | undefined;
  readonly kafkaSaslMechanism: "none" | KafkaSasl["mechanism"];
  readonly kafkaSaslUsername: string | undefined;
  readonly kafkaSaslPasswordFile: string | undefined;
}

/** For createKafkaBus: both absent means plaintext without authentication. */
export interface KafkaSecurity {
  readonly tls?: KafkaTls;
  readonly sasl?: KafkaSasl;
}

export async function loadKafkaSecurity(settings: KafkaSecuritySettings): Promise<KafkaSecurity> {
  const tls = await loadTls(settings);
  const sasl = await loadSasl(settings);
  if (sasl?.mechanism === "plain" && tls === undefined) {
    throw invalidSetting(
      "MH_KAFKA_SASL_MECHANISM",
      "MH_KAFKA_SASL_MECHANISM=plain sends the password as is: set MH_KAFKA_TLS=true (or a CA file), or use scram-sha-512",
    );
  }
  return { ...(tls === undefined ? {} : { tls }), ...(sasl === undefined ? {} : { sasl }) };
}

async function loadTls(s: KafkaSecuritySettings): Promise<KafkaTls | undefined> {
  if ((s.kafkaTlsCertFile === undefined) !== (s.kafkaTlsKeyFile === undefined)) {
    const missing = s.kafkaTlsCertFile === undefined ? "MH_KAFKA_TLS_CERT_FILE" : "MH_KAFKA_TLS_KEY_FILE";
    throw invalidSetting(missing, `${missing} is needed too: a certificate and its key go together`);
  }
  const on = s.kafkaTls || s.kafkaTlsCaFile !== undefined || s.kafkaTlsCertFile !== undefined;
  if (!on) return undefined;
  const ca = s.kafkaTlsCaFile === undefined ? undefined : await readPem("MH_KAFKA_TLS_CA_FILE", s.kafkaTlsCaFile);
  const cert = s.kafkaTlsCertFile === undefined ? undefined : await readPem("MH_KAFKA_TLS_CERT_FILE", s.kafkaTlsCertFile);
  const key = s.kafkaTlsKeyFile === undefined ? undefined : await readPem("MH_KAFKA_TLS_KEY_FILE", s.kafkaTlsKeyFile);
  if (ca !== undefined) checkRoots("MH_KAFKA_TLS_CA_FILE", ca);
  if (cert !== undefined && key !== undefined) checkKeyPair("MH_KAFKA_TLS_CERT_FILE", "MH_KAFKA_TLS_KEY_FILE", cert, key);
  return { ...(ca === undefined ? {} : { ca }), ...(cert === undefined || key === undefined ? {} : { cert, key }) };
}

async function loadSasl(s: KafkaSecuritySettings): Promise<KafkaSasl | undefined> {
  const mechanism = s.kafkaSaslMechanism;
  if (mechanism === "none") {
    const stray = s.kafkaSaslUsername !== undefined ? "MH_KAFKA_SASL_USERNAME" : s.kafkaSaslPasswordFile !== undefined ? "MH_KAFKA_SASL_PASSWORD_FILE" : undefined;
    // A credential set without a mechanism would be silently unused: say so instead.
    if (stray !== undefined) throw invalidSetting(stray, `${stray} is set but MH_KAFKA_SASL_MECHANISM is not (plain, scram-sha-256 or scram-sha-512)`);
    return undefined;
  }
  const username = s.kafkaSaslUsername;
  if (username === undefined) throw invalidSetting("MH_KAFKA_SASL_USERNAME", `MH_KAFKA_SASL_MECHANISM=${mechanism} needs MH_KAFKA_SASL_USERNAME`);
  const file = s.kafkaSaslPasswordFile;
  if (file === undefined) throw invalidSetting("MH_KAFKA_SASL_PASSWORD_FILE", `MH_KAFKA_SASL_MECHANISM=${mechanism} needs MH_KAFKA_SASL_PASSWORD_FILE`);
  let password: string;
  try {
    password = (await readFile(file, "utf8")).replace(/\r?\n$/, "");
  } catch (err) {
    throw invalidSetting("MH_KAFKA_SASL_PASSWORD_FILE", `MH_KAFKA_SASL_PASSWORD_FILE: ${file} cannot be read`, err);
  }
  if (password === "") throw invalidSetting("MH_KAFKA_SASL_PASSWORD_FILE", `MH_KAFKA_SASL_PASSWORD_FILE: ${file} is empty`);
  return { mechanism, username, password };
}

/** For a start log line: "plaintext", "tls", "tls+scram-sha-512", "tls+client-certificate". */
export function kafkaLinkName({ tls, sasl }: KafkaSecurity): string {
  const how = sasl?.mechanism ?? (tls?.cert === undefined ? undefined : "client-certificate");
  return `${tls === undefined ? "plaintext" : "tls"}${how === undefined ? "" : `+${how}`}`;
}
