/**
 * Interception of a CONNECT tunnel to a host the session holds a credential for: the proxy
 * answers the sandbox's TLS itself, with a certificate for that host issued by the sandbox's own
 * CA (sandbox-ca.ts; trusted by that sandbox alone), reads each HTTP/1.1 request, and sends it
 * on (sendEgress) over its own TLS connection to the real host, verified against the system's
 * roots, with the credential injected and the answer scrubbed, as on the plain path.
 *
 * Every request in the tunnel goes to the tunnel's host, whatever its Host header or request
 * line says (an absolute-form URL naming another host is refused), so a credential never
 * travels to a host it was not made for.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { TLSSocket } from "node:tls";
import type { Logger } from "@metaharness/service-kit/logging";
import { reply } from "../http/forward.js";
import type { Remote } from "../store/remotes.js";
import type { ConnectTarget, Interceptor } from "./egress-connect.js";
import { sendEgress, type EgressSendDeps } from "./egress-forward.js";
import type { SandboxCas } from "./sandbox-ca.js";

interface Tunnel {
  readonly target: ConnectTarget;
  readonly remote: Remote;
  readonly publicOnly: boolean;
  readonly log: Logger;
}

export interface InterceptDeps extends EgressSendDeps {
  readonly cas: SandboxCas;
}

export class EgressInterceptor {
  private readonly tunnels = new WeakMap<Socket, Tunnel>();
  // Never listens: each intercepted tunnel's TLS socket is handed to it as a connection.
  private readonly server = createServer({ maxHeaderSize: 16 * 1024 }, (req, res) => {
    void this.onRequest(req, res).catch(() => reply(res, 502, "the proxy could not serve this request"));
  });

  constructor(private readonly deps: InterceptDeps) {}

  readonly intercept: Interceptor = (client: Duplex, head: Buffer, target: ConnectTarget, remote: Remote, publicOnly: boolean, log: Logger) => {
    if (remote.ca === undefined) {
      // Opened before interception existed: no CA for the sandbox to trust. A plain answer, not a tunnel.
      client.end("HTTP/1.1 501 this egress endpoint has no certificate authority; provision the sandbox again\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
      return Promise.resolve();
    }
    const secureContext = this.deps.cas.contextFor(remote.ca, target.hostname);
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) client.unshift(head);
    const tls = new TLSSocket(client, { isServer: true, secureContext, ALPNProtocols: ["http/1.1"] });
    tls.on("error", (err: Error) => {
      log.info({ error: err.message }, "intercepted tunnel failed (the sandbox's TLS)");
      tls.destroy();
    });
    this.tunnels.set(tls, { target, remote, publicOnly, log });
    log.info("egress tunnel intercepted (the session holds a credential for this host)");
    this.server.emit("connection", tls);
    return Promise.resolve();
  };

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const tunnel = this.tunnels.get(req.socket);
    if (tunnel === undefined) return reply(res, 502, "not an intercepted tunnel");
    if (!(req.url ?? "").startsWith("/")) return reply(res, 400, `this tunnel goes to ${tunnel.target.host} only: send origin-form requests (/path)`);
    const target = new URL(`https://${tunnel.target.host}${req.url ?? "/"}`);
    const log = tunnel.log.child({ method: req.method });
    await sendEgress(this.deps, req, res, { target, sessionId: tunnel.remote.sessionId, publicOnly: tunnel.publicOnly, log });
  }

  close(): void {
    this.server.closeAllConnections();
  }
}
