/**
 * Starts a service's gRPC server the same way everywhere: bounded messages, keepalive, standard
 * health checking (each service plus "" overall) and server reflection, and a shutdown that drains
 * calls for a grace period before cancelling the rest.
 */
import {
  Server,
  ServerCredentials,
  type ServerOptions,
  type ServiceDefinition,
  type UntypedHandleCall,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import type { PackageDefinition } from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";
import { loadHealthPackageDefinition, loadPackageDefinition } from "@metaharness/proto";
import { HealthImplementation, type ServingStatusMap } from "grpc-health-check";
import { startHealthPort, type HealthPort } from "./grpc-health-port.js";
import type { Logger } from "../logging/logger.js";
import { decodingSafely } from "./undecodable.js";

/** 16 MiB: large enough for any event payload we accept, small enough to bound memory per call. */
export const MAX_RECEIVE_MESSAGE_BYTES = 16 * 1024 * 1024;
/**
 * The most an event (or an HTTP request's events) may take: it travels whole in one gRPC message
 * (an append, a slice holding it alone, a watch message), and 64 KiB under the message limit
 * leaves room for that message's other fields and the fields the log adds.
 */
export const MAX_EVENT_BYTES = MAX_RECEIVE_MESSAGE_BYTES - 64 * 1024;
/**
 * What our clients take in one message: a server's receive limit and 1 MiB more. An answer may
 * carry what its request did and what the server adds to it: an EmitEvents answer echoes up to
 * 1,000 events, each with its session id, seq and creation time (under 100 bytes), so with
 * equal limits a request just under the server's would be written and its answer refused.
 */
export const MAX_CLIENT_RECEIVE_MESSAGE_BYTES = MAX_RECEIVE_MESSAGE_BYTES + 1024 * 1024;
export const DEFAULT_SHUTDOWN_GRACE_MS = 5_000;

const DEFAULT_SERVER_OPTIONS: ServerOptions = {
  "grpc.max_receive_message_length": MAX_RECEIVE_MESSAGE_BYTES,
  // Ping idle connections so a vanished client does not hold a stream (e.g. WatchEvents) forever.
  "grpc.keepalive_time_ms": 60_000,
  "grpc.keepalive_timeout_ms": 20_000,
};

export interface ServiceRegistration {
  /** A grpc-js service definition, e.g. ts-proto's `SessionLogService`. */
  readonly definition: ServiceDefinition;
  /**
   * Handlers by method name, e.g. a `SessionLogServer` or a `Partial<SessionLogServer>`: methods
   * left out answer UNIMPLEMENTED.
   */
  readonly implementation: { readonly [method: string]: UntypedHandleCall | undefined };
  /** Full name for health and logs, e.g. "metaharness.v1.SessionLog"; derived from the definition when omitted. */
  readonly name?: string;
}

export interface GrpcServerOptions {
  /** Interface to bind; 127.0.0.1 by default. */
  readonly host?: string;
  /** 0 binds an ephemeral port (see the handle's `port`). */
  readonly port: number;
  readonly services: readonly ServiceRegistration[];
  readonly logger: Logger;
  /** Descriptors served by reflection; all of our contracts by default. */
  readonly packageDefinition?: PackageDefinition;
  /** Extra grpc-js options, merged over the defaults. */
  readonly serverOptions?: ServerOptions;
  /** TLS (see grpc-tls.ts); plaintext when omitted. */
  readonly credentials?: ServerCredentials;
  /** A plaintext port serving only the health service, for the kubelet (grpc-health-port.ts); none when omitted. */
  readonly healthPort?: number | undefined;
}

export interface GrpcServerHandle {
  readonly port: number;
  /** `host:port`, ready to hand to a client. */
  readonly address: string;
  readonly server: Server;
  /** The health-only port's number, when one was asked for. */
  readonly healthPort: number | undefined;
  /** Reports NOT_SERVING, drains for `graceMs`, then cancels what is left. Idempotent. */
  shutdown(graceMs?: number): Promise<void>;
}

export async function startGrpcServer(opts: GrpcServerOptions): Promise<GrpcServerHandle> {
  const host = opts.host ?? "127.0.0.1";
  const names = opts.services.map((s) => s.name ?? serviceNameOf(s.definition));
  const server = new Server({ ...DEFAULT_SERVER_OPTIONS, ...opts.serverOptions });

  const health = new HealthImplementation(statusMap(["", ...names], "SERVING"));
  let healthPort: HealthPort | undefined;
  try {
    opts.services.forEach((s) => server.addService(decodingSafely(s.definition), implemented(s.implementation)));
    health.addToServer(server);
    const described = { ...(opts.packageDefinition ?? loadPackageDefinition()), ...loadHealthPackageDefinition() };
    new ReflectionService(described).addToServer(server);
    const port = await bind(server, `${hostForAddress(host)}:${opts.port}`, opts.credentials ?? ServerCredentials.createInsecure());
    const address = `${hostForAddress(host)}:${port}`;
    if (opts.healthPort !== undefined) healthPort = await startHealthPort(health, `${hostForAddress(host)}:${opts.healthPort}`);
    opts.logger.info({ address, services: names, healthPort: healthPort?.port }, "grpc server listening");

    let stopping: Promise<void> | undefined;
    const shutdown = (graceMs = DEFAULT_SHUTDOWN_GRACE_MS): Promise<void> => {
      stopping ??= (async () => {
        for (const name of ["", ...names]) health.setStatus(name, "NOT_SERVING");
        const forced = await drain(server, graceMs);
        healthPort?.stop();
        opts.logger.info({ address, forced }, "grpc server stopped");
      })();
      return stopping;
    };
    return { port, address, server, healthPort: healthPort?.port, shutdown };
  } catch (err) {
    server.forceShutdown(); // never leak a half-started server
    healthPort?.stop();
    throw err;
  }
}

/** The fully qualified service name from a method path: "/metaharness.v1.SessionLog/GetSession". */
export function serviceNameOf(definition: ServiceDefinition): string {
  const first = Object.values(definition)[0];
  const match = first === undefined ? null : /^\/([^/]+)\//.exec(first.path);
  if (match?.[1] === undefined) throw new Error("cannot derive a service name from an empty definition");
  return match[1];
}

function implemented(handlers: ServiceRegistration["implementation"]): UntypedServiceImplementation {
  const out: UntypedServiceImplementation = {};
  for (const [name, handler] of Object.entries(handlers)) if (handler !== undefined) out[name] = handler;
  return out;
}

function statusMap(names: readonly string[], status: "SERVING"): ServingStatusMap {
  return Object.fromEntries(names.map((n) => [n, status]));
}

function hostForAddress(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

function bind(server: Server, address: string, credentials: ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (err, port) =>
      err === null ? resolve(port) : reject(err),
    );
  });
}

/** Resolves true if calls were still running after `graceMs` and had to be cancelled. */
function drain(server: Server, graceMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve(true);
    }, graceMs);
    timer.unref();
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve(false);
    });
  });
}
