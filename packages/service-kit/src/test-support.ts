/**
 * Helpers for this package's tests only (not exported from the index): a logger that captures
 * its lines, deferred promises instead of sleeps, and raw clients for the standard health and
 * reflection services, which have no ts-proto client of their own.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Client, credentials, type MethodDefinition, type ServiceDefinition } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { service as healthService } from "grpc-health-check";
import { unaryCall } from "./grpc-client.js";
import { createLogger, type Logger } from "./logger.js";

export type LogLine = Record<string, unknown>;

export function capturingLogger(service = "test"): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = createLogger({
    service,
    level: "debug",
    destination: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) },
  });
  return { logger, lines };
}

export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

function method(service: ServiceDefinition, name: string): MethodDefinition<unknown, unknown> {
  const def = service[name];
  if (def === undefined) throw new Error(`no method ${name}`);
  return def;
}

/** grpc.health.v1.Health/Check for `service` ("" = the whole server): "SERVING", "NOT_SERVING"... */
export async function healthCheck(address: string, service: string): Promise<string> {
  const client = new Client(address, credentials.createInsecure());
  try {
    const check = method(healthService, "Check");
    const res = await unaryCall(
      (req, md, options, cb) =>
        client.makeUnaryRequest(check.path, check.requestSerialize, check.responseDeserialize, req, md, options, cb),
      { service },
      { deadlineMs: 5_000 },
    );
    return (res as { status: string }).status;
  } finally {
    client.close();
  }
}

/** The service names a server lists through grpc.reflection.v1.ServerReflection. */
export async function reflectionListServices(address: string): Promise<string[]> {
  const protoPath = join(
    dirname(createRequire(import.meta.url).resolve("@grpc/reflection")),
    "../proto/grpc/reflection/v1/reflection.proto",
  );
  const definition = loadSync(protoPath, { keepCase: true, defaults: true, oneofs: true })[
    "grpc.reflection.v1.ServerReflection"
  ] as unknown as ServiceDefinition;
  const info = method(definition, "ServerReflectionInfo");
  const client = new Client(address, credentials.createInsecure());
  try {
    const call = client.makeBidiStreamRequest(info.path, info.requestSerialize, info.responseDeserialize);
    call.write({ list_services: "" });
    call.end();
    const names: string[] = [];
    for await (const res of call) {
      const services = (res as { list_services_response?: { service: Array<{ name: string }> } })
        .list_services_response?.service;
      names.push(...(services ?? []).map((s) => s.name));
    }
    return names;
  } finally {
    client.close();
  }
}
