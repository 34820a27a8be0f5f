/**
 * Certificates for tests of TLS between services, minted by infra/tls/dev-certs.sh (openssl) into
 * a private temporary directory: `env(name)` is the MH_GRPC_TLS_* settings of the service holding
 * `name`'s certificate, asking its callers for theirs (mutual TLS); `callerTls` is a client's.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { loadGrpcTls, type GrpcTls } from "@metaharness/service-kit/grpc";

const DEV_CERTS = new URL("../../infra/tls/dev-certs.sh", import.meta.url).pathname;

export interface DevCerts {
  readonly dir: string;
  readonly ca: string;
  env(name: string): Record<string, string>;
  dispose(): Promise<void>;
}

export async function mintDevCerts(names: readonly string[]): Promise<DevCerts> {
  const dir = await mkdtemp(join(tmpdir(), "mh-tls-"));
  await promisify(execFile)("bash", [DEV_CERTS, join(dir, "certs"), ...names]);
  const certs = join(dir, "certs");
  return {
    dir: certs,
    ca: join(certs, "ca.pem"),
    env: (name) => ({
      MH_GRPC_TLS_CA_FILE: join(certs, "ca.pem"),
      MH_GRPC_TLS_CERT_FILE: join(certs, `${name}.pem`),
      MH_GRPC_TLS_KEY_FILE: join(certs, `${name}.key`),
      MH_GRPC_TLS_CLIENT_AUTH: "require",
    }),
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * The TLS of a caller trusting `<dir>/ca.pem` and presenting `<dir>/<name>.pem` (none when `name`
 * is undefined): a directory as infra/tls/dev-certs.sh writes it.
 */
export function callerTls(dir: string, name: string | undefined): Promise<GrpcTls> {
  return loadGrpcTls({
    tlsCaFile: join(dir, "ca.pem"),
    tlsCertFile: name === undefined ? undefined : join(dir, `${name}.pem`),
    tlsKeyFile: name === undefined ? undefined : join(dir, `${name}.key`),
    tlsClientAuth: "none",
  });
}
