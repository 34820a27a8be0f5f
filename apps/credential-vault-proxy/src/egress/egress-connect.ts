/**
 * CONNECT through the egress endpoint: how HTTPS clients (pip, npm, cargo, go, git, curl) reach a
 * host through a proxy. The broker relays a sandbox's `CONNECT host:port` here with the
 * sandbox's capability; the host is checked against the endpoint's scope (egress-scope.ts) and
 * its addresses against the egress policy (net/dial.ts: resolved, checked, then connected to the
 * checked address), on every tunnel.
 *
 * A host the session holds no credential for gets a plain tunnel: the bytes are the sandbox's TLS
 * with the real host, which the proxy neither reads nor needs to (there is nothing to inject and
 * nothing to scrub), and which costs one TCP connection. A host the session holds a credential
 * for is intercepted instead (egress-intercept.ts), when an interceptor is given.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Db } from "@metaharness/db";
import type { Logger } from "@metaharness/service-kit/logging";
import { dialChecked } from "../net/dial.js";
import { egressRefusal, type EgressPolicy } from "../net/egress-policy.js";
import type { SessionCredentials } from "../session/session-credentials.js";
import { findRemote, type Remote } from "../store/remotes.js";
import { scopeAllows, type UnrestrictedLimits } from "./egress-scope.js";
import { refuse } from "../http/refuse.js";

export interface ConnectDeps {
  readonly db: Db;
  readonly credentials: SessionCredentials;
  readonly egress: EgressPolicy;
  readonly unrestricted: UnrestrictedLimits;
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** Serves a tunnel to a host the session holds a credential for; without it every tunnel is plain. */
  readonly intercept?: Interceptor;
}

/** The tunnel's target, as the CONNECT line named it. */
export interface ConnectTarget {
  /** As a https:// URL writes it: no port when it is 443. */
  readonly host: string;
  readonly hostname: string;
  readonly port: number;
}

export type Interceptor = (client: Duplex, head: Buffer, target: ConnectTarget, remote: Remote, publicOnly: boolean, log: Logger) => Promise<void>;

const AUTHORITY = /^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9.-]{0,252})):(\d{1,5})$/i;

export async function connectEgress(deps: ConnectDeps, req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
  const auth = /^Bearer (\S+)$/.exec(String(req.headers["proxy-authorization"] ?? ""));
  const remote = auth?.[1] === undefined ? undefined : await findRemote(deps.db, auth[1], "egress");
  if (remote === undefined) return refuse(client, 407, "no such egress endpoint (it expired or was closed)");
  const target = parseAuthority(req.url ?? "");
  if (target === undefined) return refuse(client, 400, "CONNECT needs host:port");
  const log = deps.logger.child({ session_id: remote.sessionId, sandbox_id: remote.sandboxId, host: target.host, method: "CONNECT" });
  const decision = scopeAllows(remote.scope, target, deps.unrestricted);
  if (!decision.allowed) {
    log.info({ allowed: remote.scope }, "egress refused: host not allowed");
    return refuse(client, 403, decision.why);
  }
  if (deps.intercept !== undefined && (await deps.credentials.bearer(remote.sessionId, target.host)) !== undefined) {
    return deps.intercept(client, head, target, remote, decision.publicOnly, log);
  }
  const started = performance.now();
  let upstream;
  try {
    upstream = await dialChecked(target.hostname, target.port, {
      allowPrivate: deps.egress.allowPrivateNetworks && !decision.publicOnly,
      settable: !decision.publicOnly,
      timeoutMs: deps.timeoutMs,
    });
  } catch (err) {
    const refused = egressRefusal(err);
    log.info({ error: refused?.message ?? (err as Error).message }, "egress tunnel not opened");
    return refused !== undefined ? refuse(client, 403, refused.message) : refuse(client, 502, `${target.hostname} could not be reached`);
  }
  client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  if (head.length > 0) upstream.write(head);
  let sent = head.length;
  let received = 0;
  client.on("data", (b: Buffer) => (sent += b.length));
  upstream.on("data", (b: Buffer) => (received += b.length));
  client.pipe(upstream);
  upstream.pipe(client);
  const end = (): void => {
    client.destroy();
    upstream.destroy();
  };
  client.on("error", end);
  upstream.on("error", end);
  client.on("close", end);
  upstream.on("close", () => {
    end();
    log.info({ bytes_sent: sent, bytes_received: received, duration_ms: Math.round(performance.now() - started) }, "egress tunnel closed");
  });
}

export function parseAuthority(authority: string): ConnectTarget | undefined {
  const m = AUTHORITY.exec(authority);
  if (m?.[1] === undefined || m[3] === undefined) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65535 || !URL.canParse(`https://${m[1]}:${port}/`)) return undefined;
  const url = new URL(`https://${m[1]}:${port}/`);
  return { host: url.host, hostname: url.hostname.replace(/^\[|\]$/g, ""), port };
}
