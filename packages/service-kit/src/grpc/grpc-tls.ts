/**
 * TLS for the links between our services. Service tokens are bearer secrets: on a network other
 * than one host's loopback they must not travel in clear, so every service reads the same four
 * variables (spread `GRPC_TLS_ENV` into its config spec) and hands the credentials loadGrpcTls
 * builds to startGrpcServer (`server`) and to createClient (`client`):
 * - MH_GRPC_TLS_CERT_FILE + MH_GRPC_TLS_KEY_FILE: this service's certificate chain and key (PEM).
 *   With them its server speaks only TLS; it also presents them when it calls a service that
 *   asks callers for a certificate.
 * - MH_GRPC_TLS_CA_FILE: the roots this service trusts. With it every call it makes to another
 *   of our services is TLS, checking the server's certificate against these roots and the
 *   address's host name (or IP). A service with a certificate but no CA file calls over TLS too,
 *   trusting the system's roots: one set up for TLS never sends its tokens in clear. With neither,
 *   calls are plaintext.
 * - MH_GRPC_TLS_CLIENT_AUTH=require: the server also demands a certificate from every caller,
 *   signed by those roots (mutual TLS), in addition to the caller's token.
 * Unset, everything stays plaintext, as on a laptop where every link is loopback. Our one internal
 * HTTP link (the broker relaying to the credential proxy's remote endpoint) follows the same
 * settings through `httpsServer` and `httpsClient`.
 * Files are read and checked once at start: a missing file, a key that does not match its
 * certificate or anything that is not PEM fails the start, naming the variable.
 */
import { credentials, ServerCredentials, type ChannelCredentials } from "@grpc/grpc-js";
import { env } from "../config/env.js";
import { checkKeyPair, checkRoots, invalidSetting, readPem } from "../config/pem.js";

/** The TLS variables, to spread into a service's config spec. */
export const GRPC_TLS_ENV = {
  tlsCertFile: env.optional(env.absolutePath("MH_GRPC_TLS_CERT_FILE")),
  tlsKeyFile: env.optional(env.absolutePath("MH_GRPC_TLS_KEY_FILE")),
  tlsCaFile: env.optional(env.absolutePath("MH_GRPC_TLS_CA_FILE")),
  tlsClientAuth: env.enumOf("MH_GRPC_TLS_CLIENT_AUTH", ["none", "require"], { default: "none" }),
} as const;

/** What GRPC_TLS_ENV reads. */
export interface GrpcTlsSettings {
  readonly tlsCertFile: string | undefined;
  readonly tlsKeyFile: string | undefined;
  readonly tlsCaFile: string | undefined;
  readonly tlsClientAuth: "none" | "require";
}

export interface GrpcTls {
  /** For startGrpcServer: TLS when this service has a certificate, plaintext otherwise. */
  readonly server: ServerCredentials;
  /** For createClient: TLS when this service has roots to trust or a certificate, plaintext otherwise. */
  readonly client: ChannelCredentials;
  /** Whether the server speaks TLS; for the start log line. */
  readonly serving: boolean;
  /** Whether calls to other services are TLS; for the start log line. */
  readonly calling: boolean;
  /** node:https server options for an internal HTTP endpoint: set when `serving`. */
  readonly httpsServer: HttpsServerTls | undefined;
  /** node:https request options for an internal HTTP link: set when `calling`. */
  readonly httpsClient: HttpsClientTls | undefined;
}

export interface HttpsServerTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca?: Buffer;
  readonly requestCert: boolean;
  readonly rejectUnauthorized: boolean;
}

export interface HttpsClientTls {
  /** The roots to trust; the system's when absent. */
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

/** No TLS anywhere: what unset variables mean. */
export const PLAINTEXT: GrpcTls = {
  server: ServerCredentials.createInsecure(),
  client: credentials.createInsecure(),
  serving: false,
  calling: false,
  httpsServer: undefined,
  httpsClient: undefined,
};

export async function loadGrpcTls(settings: GrpcTlsSettings): Promise<GrpcTls> {
  const { tlsCertFile, tlsKeyFile, tlsCaFile, tlsClientAuth } = settings;
  if ((tlsCertFile === undefined) !== (tlsKeyFile === undefined)) {
    const missing = tlsCertFile === undefined ? "MH_GRPC_TLS_CERT_FILE" : "MH_GRPC_TLS_KEY_FILE";
    throw invalidSetting(missing, `${missing} is needed too: a certificate and its key go together`);
  }
  if (tlsClientAuth === "require" && (tlsCaFile === undefined || tlsCertFile === undefined)) {
    throw invalidSetting(
      "MH_GRPC_TLS_CLIENT_AUTH",
      "MH_GRPC_TLS_CLIENT_AUTH=require needs MH_GRPC_TLS_CA_FILE (to check callers) and this service's own certificate and key",
    );
  }
  const ca = tlsCaFile === undefined ? undefined : await readPem("MH_GRPC_TLS_CA_FILE", tlsCaFile);
  const cert = tlsCertFile === undefined ? undefined : await readPem("MH_GRPC_TLS_CERT_FILE", tlsCertFile);
  const key = tlsKeyFile === undefined ? undefined : await readPem("MH_GRPC_TLS_KEY_FILE", tlsKeyFile);
  if (ca !== undefined) checkRoots("MH_GRPC_TLS_CA_FILE", ca);
  if (cert !== undefined && key !== undefined) checkKeyPair("MH_GRPC_TLS_CERT_FILE", "MH_GRPC_TLS_KEY_FILE", cert, key);

  const server =
    cert !== undefined && key !== undefined
      ? ServerCredentials.createSsl(
          tlsClientAuth === "require" ? (ca ?? null) : null,
          [{ cert_chain: cert, private_key: key }],
          tlsClientAuth === "require",
        )
      : ServerCredentials.createInsecure();
  const client =
    ca !== undefined || cert !== undefined ? credentials.createSsl(ca ?? null, key ?? null, cert ?? null) : credentials.createInsecure();
  const requireCert = tlsClientAuth === "require";
  return {
    server,
    client,
    serving: cert !== undefined,
    calling: ca !== undefined || cert !== undefined,
    httpsServer:
      cert !== undefined && key !== undefined
        ? { cert, key, ...(requireCert && ca !== undefined ? { ca } : {}), requestCert: requireCert, rejectUnauthorized: requireCert }
        : undefined,
    httpsClient:
      ca !== undefined || cert !== undefined
        ? { ...(ca !== undefined ? { ca } : {}), ...(cert !== undefined && key !== undefined ? { cert, key } : {}) }
        : undefined,
  };
}
