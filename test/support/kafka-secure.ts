/**
 * The local broker's secured listeners (infra/kafka/up.sh sets them up and describes them in the
 * file infra/up.sh prints as MH_KAFKA_SECURE_LISTENERS): SASL_SSL with PLAIN and SCRAM for one
 * user, and SSL that asks for a client certificate. The helpers give a service's settings for
 * each, as a deployment would write them.
 */
import { readFileSync } from "node:fs";
import type { KafkaSaslMechanism } from "@metaharness/event-bus";

export interface SecureListeners {
  readonly saslSslBrokers: string;
  readonly sslBrokers: string;
  readonly caFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  readonly username: string;
  readonly passwordFile: string;
}

export function secureListeners(): SecureListeners {
  const file = process.env["MH_KAFKA_SECURE_LISTENERS"];
  if (file === undefined) throw new Error("MH_KAFKA_SECURE_LISTENERS is not set: start the services with infra/up.sh and use its output");
  return JSON.parse(readFileSync(file, "utf8")) as SecureListeners;
}

/** SASL over TLS with `mechanism`, the broker checked against the development CA. */
export function saslSettings(l: SecureListeners, mechanism: KafkaSaslMechanism, passwordFile = l.passwordFile): Record<string, string> {
  return {
    MH_KAFKA_BROKERS: l.saslSslBrokers,
    MH_KAFKA_TLS_CA_FILE: l.caFile,
    MH_KAFKA_SASL_MECHANISM: mechanism,
    MH_KAFKA_SASL_USERNAME: l.username,
    MH_KAFKA_SASL_PASSWORD_FILE: passwordFile,
  };
}

/** Mutual TLS: a client certificate instead of a password. */
export function certificateSettings(l: SecureListeners): Record<string, string> {
  return {
    MH_KAFKA_BROKERS: l.sslBrokers,
    MH_KAFKA_TLS_CA_FILE: l.caFile,
    MH_KAFKA_TLS_CERT_FILE: l.clientCertFile,
    MH_KAFKA_TLS_KEY_FILE: l.clientKeyFile,
  };
}
