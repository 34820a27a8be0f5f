/**
 * Egress of a NETWORK_MODE_ALLOWLIST or NETWORK_MODE_UNRESTRICTED sandbox. Inside, programs use
 * HTTP_PROXY=127.0.0.1:3128, where agent/mh-egress-relay relays each connection to egress.sock in
 * the sandbox's run directory. Here, absolute-form requests (`GET http://host/path`) and `CONNECT
 * host:port` tunnels are relayed to the credential proxy's egress endpoint with this sandbox's
 * capability; the proxy checks the host against the sandbox's scope and its addresses against the
 * egress policy, injects the session's http_bearer credential where one matches (an http:// URL
 * is upgraded to TLS by the proxy; a tunnel to such a host is terminated by the proxy with the
 * sandbox's own certificate authority) and scrubs the answer.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Duplex } from "node:stream";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { MhError } from "@metaharness/errors";
import { SERVICE_AUTH_HEADER } from "@metaharness/service-kit/auth";
import type { Logger } from "@metaharness/service-kit/logging";
import { EGRESS_RELAY_IN_SANDBOX, RUN_DIR_IN_SANDBOX, SANDBOX_ENV, WORKSPACE } from "../inside/view.js";
import type { LocalSandbox } from "../driver/local-sandbox.js";
import type { EgressScope } from "../resources.js";
import type { ProxyConnection } from "./proxy-client.js";
import { relay, respond } from "./relay-forward.js";
import { serveOnSocket, type SocketServer } from "./socket-server.js";

export const EGRESS_SOCKET = "egress.sock";
export const EGRESS_PORT = 3128;
const PROXY = `http://127.0.0.1:${EGRESS_PORT}`;
/** What programs in an ALLOWLIST sandbox read to find their way out. */
export const EGRESS_ENV: readonly string[] = [
  `HTTP_PROXY=${PROXY}`,
  `http_proxy=${PROXY}`,
  `HTTPS_PROXY=${PROXY}`,
  `https_proxy=${PROXY}`,
  "NO_PROXY=localhost,127.0.0.1",
  "no_proxy=localhost,127.0.0.1",
];
const DROPPED = new Set(["proxy-authorization", "proxy-connection", SERVICE_AUTH_HEADER]);

/** The host's trust store (Debian's path; shown read-only in every sandbox at the same path). */
const SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";
/** The sandbox's trust bundle, in its run directory: the system's roots and the sandbox's own CA. */
const TRUST_BUNDLE = "ca-certificates.crt";
const TRUST_IN_SANDBOX = `${RUN_DIR_IN_SANDBOX}/${TRUST_BUNDLE}`;
/** Where each TLS stack of the sandbox's tools reads its roots from (OpenSSL, curl, Python requests and pip, Node, cargo, git). */
export const TRUST_ENV: readonly string[] = ["SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS", "CARGO_HTTP_CAINFO", "GIT_SSL_CAINFO"].map(
  (name) => `${name}=${TRUST_IN_SANDBOX}`,
);

export interface EgressLimits {
  readonly maxRequestBytes: number;
  readonly maxConnections: number;
  readonly logger: Logger;
}

export async function startEgress(
  sandbox: LocalSandbox,
  proxy: ProxyConnection,
  req: { sessionId: string; sandboxId: string; scope: EgressScope; ttlSeconds: number },
  limits: EgressLimits,
): Promise<SocketServer> {
  const opened = await proxy.client.openEgress({
    sessionId: req.sessionId,
    sandboxId: req.sandboxId,
    ttlSeconds: req.ttlSeconds,
    allowedHosts: [...req.scope.allowedHosts],
    allowPackageManagers: req.scope.allowPackageManagers,
    unrestricted: req.scope.unrestricted,
  });
  const target = new URL(opened.proxyUrl);
  const addHeaders = { "proxy-authorization": opened.proxyAuthorization, [SERVICE_AUTH_HEADER]: proxy.serviceAuthorization };
  const server = await serveOnSocket(
    {
      path: join(sandbox.runDir, EGRESS_SOCKET),
      maxConnections: limits.maxConnections,
      logger: limits.logger,
      guard: sandbox.socketGuard,
      onConnect: (incoming, socket, head) => relayConnect(incoming, socket, head, target, addHeaders, proxy),
    },
    async (incoming: IncomingMessage, res: ServerResponse) => {
      if (!/^http:\/\//i.test(incoming.url ?? "")) return respond(res, 400, "send absolute http:// URLs to this proxy");
      const status = await relay(incoming, res, { target, dropHeaders: DROPPED, addHeaders, maxRequestBytes: limits.maxRequestBytes, absoluteForm: true, tls: proxy.tls });
      limits.logger.debug({ status }, "egress request relayed");
    },
  );
  try {
    await writeTrust(sandbox.runDir, opened.caCertificatePem);
    await startRelayInSandbox(sandbox);
    sandbox.addToolEnv([...EGRESS_ENV, ...TRUST_ENV]);
    return server;
  } catch (err) {
    await server.close();
    throw err;
  }
}

/**
 * The sandbox's trust bundle: the host's roots (a tunnel carries the sandbox's TLS to the real
 * host, whose certificate they verify) and, when the proxy gave one, the sandbox's own CA (the
 * certificate only), which the proxy's interception of credential hosts is signed by.
 */
async function writeTrust(runDir: string, caPem: string): Promise<void> {
  const system = await readFile(SYSTEM_BUNDLE, "utf8").catch(() => "");
  const bundle = [system.trimEnd(), caPem.trim()].filter((p) => p !== "").join("\n");
  await writeFile(join(runDir, TRUST_BUNDLE), `${bundle}\n`, { mode: 0o644 });
}

/**
 * Relays `CONNECT host:port` to the proxy's egress endpoint, then the tunnel's bytes both ways.
 * The proxy's answer (200, or a refusal whose reason phrase says why) goes back as it came.
 */
function relayConnect(incoming: IncomingMessage, socket: Duplex, head: Buffer, target: URL, addHeaders: Record<string, string>, proxy: ProxyConnection): void {
  const secure = target.protocol === "https:";
  const send = secure ? httpsRequest : httpRequest;
  const upstream = send({
    host: target.hostname,
    port: target.port,
    method: "CONNECT",
    path: incoming.url ?? "",
    headers: addHeaders,
    agent: false,
    ...(secure ? (proxy.tls ?? {}) : {}),
  });
  socket.on("error", () => upstream.destroy());
  upstream.on("error", () => socket.end("HTTP/1.1 502 the credential proxy could not be reached\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"));
  upstream.on("connect", (answer: IncomingMessage, tunnel: Duplex, upHead: Buffer) => {
    const lines = [`HTTP/1.1 ${answer.statusCode ?? 502} ${answer.statusMessage ?? ""}`];
    for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2) lines.push(`${answer.rawHeaders[i]}: ${answer.rawHeaders[i + 1]}`);
    socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (upHead.length > 0) socket.write(upHead);
    if (head.length > 0) tunnel.write(head);
    tunnel.pipe(socket);
    socket.pipe(tunnel);
    const end = (): void => {
      tunnel.destroy();
      socket.destroy();
    };
    tunnel.on("error", end);
    tunnel.on("close", end);
    socket.on("close", end);
  });
  upstream.end();
}

// Detached (its own session, no pipe of the call held), then probed until it accepts connections.
const START_RELAY = [
  `setsid -f /usr/bin/perl ${EGRESS_RELAY_IN_SANDBOX} ${EGRESS_PORT} </dev/null >/dev/null 2>&1`,
  `for i in $(seq 1 200); do /usr/bin/perl -MIO::Socket::INET -e 'exit(IO::Socket::INET->new(PeerAddr => "127.0.0.1:${EGRESS_PORT}") ? 0 : 1)' && exit 0; sleep 0.02; done`,
  'echo "the relay did not start listening"; exit 1',
].join("\n");

/** Starts agent/mh-egress-relay so that it outlives the call that starts it. */
async function startRelayInSandbox(sandbox: LocalSandbox): Promise<void> {
  const result = await sandbox.run({
    timeoutMs: 10_000,
    capBytes: 4096,
    graceMs: 100,
    cwd: WORKSPACE,
    argv: ["/bin/sh", "-c", START_RELAY],
    env: SANDBOX_ENV,
  });
  if (result.kind !== "exited" || result.code !== 0) {
    throw new MhError("UNAVAILABLE", `the sandbox's egress relay could not start: ${Buffer.concat([result.head, result.tail]).toString("utf8").trim()}`);
  }
}
