/**
 * Egress of a NETWORK_MODE_ALLOWLIST sandbox. Inside, programs use HTTP_PROXY=127.0.0.1:3128,
 * where agent/mh-egress-relay relays each connection to egress.sock in the sandbox's run
 * directory. Here, absolute-form requests (`GET http://host/path`) are relayed to the credential
 * proxy's egress endpoint with this sandbox's capability; the proxy checks the host against the
 * allowlist, injects the session's http_bearer credential, speaks TLS to the host and scrubs the
 * answer. CONNECT tunnels are refused: a tunnel would hide the request the credential goes into,
 * so HTTPS hosts are reached as http:// URLs and the proxy upgrades them.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { MhError } from "@metaharness/errors";
import type { Logger } from "@metaharness/service-kit";
import { EGRESS_RELAY_IN_SANDBOX, SANDBOX_ENV, WORKSPACE } from "../driver/bwrap-args.js";
import type { LocalSandbox } from "../driver/local-sandbox.js";
import { SERVICE_AUTH_HEADER, type ProxyConnection } from "./proxy-client.js";
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

export interface EgressLimits {
  readonly maxRequestBytes: number;
  readonly maxConnections: number;
  readonly logger: Logger;
}

export async function startEgress(
  sandbox: LocalSandbox,
  proxy: ProxyConnection,
  req: { sessionId: string; sandboxId: string; allowedHosts: readonly string[]; ttlSeconds: number },
  limits: EgressLimits,
): Promise<SocketServer> {
  const opened = await proxy.client.openEgress({ ...req, allowedHosts: [...req.allowedHosts] });
  const target = new URL(opened.proxyUrl);
  const addHeaders = { "proxy-authorization": opened.proxyAuthorization, [SERVICE_AUTH_HEADER]: proxy.serviceAuthorization };
  const server = await serveOnSocket(
    join(sandbox.runDir, EGRESS_SOCKET),
    limits.maxConnections,
    async (incoming: IncomingMessage, res: ServerResponse) => {
      if (!/^http:\/\//i.test(incoming.url ?? "")) return respond(res, 400, "send absolute http:// URLs to this proxy");
      const status = await relay(incoming, res, { target, dropHeaders: DROPPED, addHeaders, maxRequestBytes: limits.maxRequestBytes, absoluteForm: true, tls: proxy.tls });
      limits.logger.debug({ status }, "egress request relayed");
    },
    limits.logger,
    (socket) => socket.end("HTTP/1.1 405 Method Not Allowed\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nCONNECT is not supported: request http:// URLs, the egress proxy speaks TLS to the host\n"),
  );
  try {
    await startRelayInSandbox(sandbox);
    sandbox.addToolEnv(EGRESS_ENV);
    return server;
  } catch (err) {
    await server.close();
    throw err;
  }
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
