/**
 * loadGrpcTls against real handshakes: certificates minted by infra/tls/dev-certs.sh (openssl),
 * a real server and real clients on loopback.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify as promisifyCb } from "node:util";
import { GetSessionResponse, SessionLogClient, SessionLogService, type SessionLogServer } from "@metaharness/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, promisify } from "./grpc-client.js";
import { unary } from "./grpc-handlers.js";
import { startGrpcServer, type GrpcServerHandle } from "./grpc-server.js";
import { loadGrpcTls, PLAINTEXT, type GrpcTls, type GrpcTlsSettings } from "./grpc-tls.js";
import { capturingLogger, healthCheck } from "../testing.js";

const DEV_CERTS = fileURLToPath(new URL("../../../../infra/tls/dev-certs.sh", import.meta.url));
const { logger } = capturingLogger("tls-test");

const implementation: Partial<SessionLogServer> = {
  getSession: unary("metaharness.v1.SessionLog/GetSession", logger, (req) =>
    Promise.resolve(GetSessionResponse.fromPartial({ session: { sessionId: req.sessionId } })),
  ),
};

let dir: string;
let other: string;
const servers: GrpcServerHandle[] = [];

function settings(name: string | undefined, ca: string | undefined, clientAuth: "none" | "require" = "none"): GrpcTlsSettings {
  return {
    tlsCertFile: name === undefined ? undefined : join(dir, `${name}.pem`),
    tlsKeyFile: name === undefined ? undefined : join(dir, `${name}.key`),
    tlsCaFile: ca,
    tlsClientAuth: clientAuth,
  };
}

async function serve(tls: GrpcTls): Promise<string> {
  const server = await startGrpcServer({ port: 0, logger, credentials: tls.server, services: [{ definition: SessionLogService, implementation }] });
  servers.push(server);
  return server.address;
}

async function call(address: string, tls: GrpcTls): Promise<string> {
  const raw = createClient(SessionLogClient, address, { credentials: tls.client });
  try {
    const res = await promisify(raw, SessionLogService).getSession({ sessionId: "s1" }, { deadlineMs: 3_000 });
    return res.session?.sessionId ?? "";
  } finally {
    raw.close();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mh-tls-"));
  other = await mkdtemp(join(tmpdir(), "mh-tls-other-"));
  const run = promisifyCb(execFile);
  await run("bash", [DEV_CERTS, dir, "server", "caller"]);
  await run("bash", [DEV_CERTS, other, "stranger"]);
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.shutdown(0)));
  await rm(dir, { recursive: true, force: true });
  await rm(other, { recursive: true, force: true });
});

describe("loadGrpcTls", () => {
  it("serves TLS to a client that trusts the CA, and refuses plaintext clients", async () => {
    const address = await serve(await loadGrpcTls(settings("server", undefined)));
    expect(await call(address, await loadGrpcTls(settings(undefined, join(dir, "ca.pem"))))).toBe("s1");
    await expect(call(address, PLAINTEXT)).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });

  it("refuses a server whose certificate another CA signed", async () => {
    const address = await serve(await loadGrpcTls(settings("server", undefined)));
    const trustsOther = await loadGrpcTls(settings(undefined, join(other, "ca.pem")));
    await expect(call(address, trustsOther)).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });

  it("with client auth required, still answers the kubelet's plaintext health probe on the health port, and only there", async () => {
    const tls = await loadGrpcTls(settings("server", join(dir, "ca.pem"), "require"));
    const server = await startGrpcServer({ port: 0, healthPort: 0, logger, credentials: tls.server, services: [{ definition: SessionLogService, implementation }] });
    servers.push(server);
    expect(await healthCheck(`127.0.0.1:${server.healthPort ?? 0}`, "metaharness.v1.SessionLog")).toBe("SERVING");
    // The service's own port refuses the same plaintext probe, and its methods are not on the health port.
    await expect(healthCheck(server.address, "")).rejects.toMatchObject({ code: "UNAVAILABLE" });
    await expect(call(`127.0.0.1:${server.healthPort ?? 0}`, PLAINTEXT)).rejects.toMatchObject({ code: "UNIMPLEMENTED" });
  });

  it("with client auth required, accepts callers with a certificate from the CA only", async () => {
    const address = await serve(await loadGrpcTls(settings("server", join(dir, "ca.pem"), "require")));
    expect(await call(address, await loadGrpcTls(settings("caller", join(dir, "ca.pem"))))).toBe("s1");
    await expect(call(address, await loadGrpcTls(settings(undefined, join(dir, "ca.pem"))))).rejects.toMatchObject({
      code: "UNAVAILABLE",
    });
    const stranger = {
      ...settings(undefined, join(dir, "ca.pem")),
      tlsCertFile: join(other, "stranger.pem"),
      tlsKeyFile: join(other, "stranger.key"),
    };
    await expect(call(address, await loadGrpcTls(stranger))).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });

  it("reports what is plaintext and what is TLS", async () => {
    expect(await loadGrpcTls(settings(undefined, undefined))).toMatchObject({ serving: false, calling: false });
    expect(await loadGrpcTls(settings("server", join(dir, "ca.pem")))).toMatchObject({ serving: true, calling: true });
    // A certificate without a CA file still calls over TLS (the system's roots), never in clear.
    expect(await loadGrpcTls(settings("server", undefined))).toMatchObject({ serving: true, calling: true });
  });

  it("fails the start naming the variable when the files do not make sense", async () => {
    const base = settings("server", join(dir, "ca.pem"));
    await expect(loadGrpcTls({ ...base, tlsKeyFile: undefined })).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      field: "MH_GRPC_TLS_KEY_FILE",
    });
    const missing = loadGrpcTls({ ...base, tlsCaFile: join(dir, "missing.pem") });
    await expect(missing).rejects.toMatchObject({ field: "MH_GRPC_TLS_CA_FILE" });
    await expect(missing).rejects.toThrow(/cannot be read/);
    const notPem = join(dir, "not.pem");
    await writeFile(notPem, "hello");
    await expect(loadGrpcTls({ ...base, tlsCaFile: notPem })).rejects.toMatchObject({ field: "MH_GRPC_TLS_CA_FILE" });
    const mismatched = loadGrpcTls({ ...base, tlsKeyFile: join(dir, "caller.key") });
    await expect(mismatched).rejects.toMatchObject({ field: "MH_GRPC_TLS_CERT_FILE" });
    await expect(mismatched).rejects.toThrow(/not a usable certificate and key/);
    await expect(loadGrpcTls({ ...settings(undefined, undefined), tlsClientAuth: "require" })).rejects.toMatchObject({
      field: "MH_GRPC_TLS_CLIENT_AUTH",
    });
  });
});
