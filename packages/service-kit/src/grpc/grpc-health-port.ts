/**
 * A second, plaintext gRPC port that serves only grpc.health.v1.Health, for the kubelet's gRPC
 * probes: the kubelet speaks plaintext only, and a service's own port speaks TLS (and may demand a
 * client certificate) once it has a certificate (grpc-tls.ts), so probes on it could only be TCP
 * checks, which stay green while the service drains or has not finished starting. This port
 * answers from the same statuses as the service's port (NOT_SERVING from the start of a shutdown)
 * and carries nothing else: no token, no method of ours, no reflection.
 * - MH_GRPC_HEALTH_PORT: the port (on MH_GRPC_HOST); unset, no such port.
 */
import { Server, ServerCredentials } from "@grpc/grpc-js";
import type { HealthImplementation } from "grpc-health-check";
import { env } from "../config/env.js";

/** The health port's variable, to spread into a gRPC service's config spec. */
export const GRPC_HEALTH_ENV = {
  healthPort: env.optional(env.port("MH_GRPC_HEALTH_PORT")),
} as const;

export interface HealthPort {
  readonly port: number;
  /** Stops at once: a probe holds no call worth draining. Idempotent. */
  stop(): void;
}

/** Serves `health` alone, in plaintext, on `address` ("host:port"). */
export async function startHealthPort(health: HealthImplementation, address: string): Promise<HealthPort> {
  const server = new Server();
  health.addToServer(server);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(address, ServerCredentials.createInsecure(), (err, bound) => (err === null ? resolve(bound) : reject(err)));
  }).catch((err: unknown) => {
    server.forceShutdown();
    throw err;
  });
  return { port, stop: () => server.forceShutdown() };
}
