/**
 * Helpers for tests only, behind the package's `/testing` export (never its index; lint keeps
 * production code from importing it): a logger that captures its lines, deferred promises instead
 * of sleeps, `eventually` (the one wait of every test, here so packages can use it too), a
 * ManualClock for tests whose subject is time, and raw clients for the standard health and
 * reflection services, which have no ts-proto client of their own.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Client, credentials, type MethodDefinition, type ServiceDefinition } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { service as healthService } from "grpc-health-check";
import { unaryCall } from "./grpc/grpc-client.js";
import type { Clock, ClockTimer } from "./lifecycle/clock.js";
import { createLogger, type Logger } from "./logging/logger.js";

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

/** How often an `eventually` probe is asked again. */
const POLL_MS = 50;

/**
 * Polls a condition until it holds, never sleeping a fixed time hoping it does. `probe` returns
 * the value waited for, or undefined while it is not there yet (a throw ends the wait at once);
 * past the timeout the wait fails saying what it waited for (`what` may be a function, to describe
 * the last state seen: the events so far, say).
 */
/** An `eventually`'s default limit: what a busy 2-core machine needs (only a failure waits it out). */
const DEFAULT_TIMEOUT_MS = 30_000;

export async function eventually<T>(probe: () => Promise<T | undefined>, what: string | (() => string), timeoutMs = DEFAULT_TIMEOUT_MS): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${typeof what === "string" ? what : what()}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
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

type ReflectionRequest = { list_services: string } | { file_containing_symbol: string } | { file_by_filename: string };

interface ReflectionResponse {
  list_services_response?: { service: Array<{ name: string }> };
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  error_response?: { error_code: number; error_message: string };
}

/** One request on grpc.reflection.v1.ServerReflection/ServerReflectionInfo and its answer. */
async function reflect(address: string, request: ReflectionRequest): Promise<ReflectionResponse> {
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
    call.write(request);
    call.end();
    for await (const res of call) return res as ReflectionResponse;
    throw new Error("reflection answered nothing");
  } finally {
    client.close();
  }
}

/** The service names a server lists through grpc.reflection.v1.ServerReflection. */
export async function reflectionListServices(address: string): Promise<string[]> {
  const res = await reflect(address, { list_services: "" });
  return (res.list_services_response?.service ?? []).map((s) => s.name);
}

/**
 * The encoded FileDescriptorProtos reflection serves for a symbol or a file name (the file and
 * what it depends on); throws on an error response.
 */
export async function reflectionFiles(
  address: string,
  request: { file_containing_symbol: string } | { file_by_filename: string },
): Promise<Buffer[]> {
  const res = await reflect(address, request);
  if (res.error_response !== undefined) {
    throw new Error(`reflection: ${res.error_response.error_message} (code ${res.error_response.error_code})`);
  }
  return res.file_descriptor_response?.file_descriptor_proto ?? [];
}

/**
 * A Clock (service-kit/lifecycle) that moves only when the test says: `advance(ms)` runs the
 * timers that fall due in order, each at its own time, letting the promises each one starts
 * settle before the next, so a component's timing is tested without waiting real time.
 */
export class ManualClock implements Clock {
  private time: number;
  private readonly timers = new Map<ClockTimer, { readonly at: number; readonly order: number; readonly fn: () => void }>();
  private made = 0;

  constructor(start = 0) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): ClockTimer {
    const timer = {};
    this.timers.set(timer, { at: this.time + Math.max(0, ms), order: this.made++, fn });
    return timer;
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    if (timer !== undefined) this.timers.delete(timer);
  }

  /** Moves time on by `ms`, running every timer due by then (those they set included). */
  async advance(ms: number): Promise<void> {
    const until = this.time + ms;
    for (;;) {
      await settle();
      let next: [ClockTimer, { at: number; order: number; fn: () => void }] | undefined;
      for (const entry of this.timers) {
        if (entry[1].at > until) continue;
        if (next === undefined || entry[1].at < next[1].at || (entry[1].at === next[1].at && entry[1].order < next[1].order)) next = entry;
      }
      if (next === undefined) break;
      this.timers.delete(next[0]);
      this.time = next[1].at;
      next[1].fn();
    }
    this.time = until;
    await settle();
  }
}

/** Lets every promise already resolved run its callbacks (and theirs): one turn of the event loop. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
