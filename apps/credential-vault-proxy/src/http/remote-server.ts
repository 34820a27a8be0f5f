/**
 * The remote HTTP endpoint: where the broker relays a sandbox's git and egress traffic. Every
 * request carries the broker's service token (`x-mh-service-authorization: Bearer <token>`; the
 * plain Authorization header belongs to the sandbox's own request) and a capability naming the
 * remote; git requests come in origin-form (`/git/...`), egress requests in absolute-form
 * (`GET http://host/path`, as to any forward proxy) or as `CONNECT host:port` tunnels.
 * Connections and header sizes are bounded.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { MhError } from "@metaharness/errors";
import { SERVICE_AUTH_HEADER, type ServiceTokens } from "@metaharness/service-kit/auth";
import type { HttpsServerTls } from "@metaharness/service-kit/grpc";
import type { Logger } from "@metaharness/service-kit/logging";
import type { Duplex } from "node:stream";
import { POLICY, type Role } from "../auth/policy.js";
import { reply } from "./forward.js";
import { refuse } from "./refuse.js";
import { countResponse, countTunnel, remoteKind } from "../metrics.js";

const MAX_CONNECTIONS = 1024;

export type RemoteRoute = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;
export type ConnectRoute = (req: IncomingMessage, socket: Duplex, head: Buffer) => Promise<void>;

export interface RemoteServerOptions {
  readonly host: string;
  readonly port: number;
  readonly tokens: ServiceTokens<Role>;
  readonly git: RemoteRoute;
  readonly egress: RemoteRoute;
  /** CONNECT tunnels of the egress path. */
  readonly connect: ConnectRoute;
  readonly logger: Logger;
  /** HTTPS (the service's gRPC TLS settings, see grpc-tls.ts); plain HTTP when omitted. */
  readonly tls?: HttpsServerTls | undefined;
}

export interface RemoteServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startRemoteServer(opts: RemoteServerOptions): Promise<RemoteServer> {
  const onRequest: RequestListener = (req, res) => {
    void handle(opts, req, res).catch((err: unknown) => {
      const e = MhError.from(err);
      opts.logger.error({ err: e, code: e.code }, "remote request failed");
      if (!res.headersSent) reply(res, e.code === "NOT_FOUND" ? 404 : 502, "the proxy could not serve this request");
      else res.destroy();
    });
  };
  const limits = { maxHeaderSize: 16 * 1024, requestTimeout: 0 };
  const server: Server = opts.tls === undefined ? createServer(limits, onRequest) : createHttpsServer({ ...limits, ...opts.tls }, onRequest);
  server.maxConnections = MAX_CONNECTIONS;
  server.on("connect", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    void countedConnect(opts, req, socket, head).catch((err: unknown) => {
      const e = MhError.from(err);
      opts.logger.error({ err: e, code: e.code }, "remote CONNECT failed");
      refuse(socket, 502, "the proxy could not serve this request");
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  opts.logger.info({ host: opts.host, port, tls: opts.tls !== undefined }, "remote endpoint listening");
  let closing: Promise<void> | undefined;
  return {
    port,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

async function handle(opts: RemoteServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = req.url ?? "/";
  countResponse(res, remoteKind(raw, req.method));
  const absolute = /^https?:\/\//i.test(raw);
  let caller;
  try {
    caller = opts.tokens.authenticate(headerValue(req, SERVICE_AUTH_HEADER));
  } catch {
    return reply(res, absolute ? 407 : 401, "a service token is required");
  }
  const allowed = absolute ? POLICY.openEgress : POLICY.openGitRemote;
  if (!allowed.includes(caller.role)) return reply(res, 403, `${caller.name} may not use this endpoint`);
  if (absolute) {
    if (!URL.canParse(raw)) return reply(res, 400, "not a URL");
    return opts.egress(req, res, new URL(raw));
  }
  return opts.git(req, res, new URL(raw, "http://remote.invalid"));
}

async function handleConnect(opts: RemoteServerOptions, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
  let caller;
  try {
    caller = opts.tokens.authenticate(headerValue(req, SERVICE_AUTH_HEADER));
  } catch {
    return refuse(socket, 407, "a service token is required");
  }
  if (!POLICY.openEgress.includes(caller.role)) return refuse(socket, 403, `${caller.name} may not use this endpoint`);
  return opts.connect(req, socket, head);
}

/** handleConnect, counted once it is over. */
async function countedConnect(opts: RemoteServerOptions, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
  try {
    await handleConnect(opts, req, socket, head);
    countTunnel(socket, false);
  } catch (err) {
    countTunnel(socket, true);
    throw err;
  }
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
