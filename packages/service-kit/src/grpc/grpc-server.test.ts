/** startGrpcServer against real sockets: health, reflection, bind failures and draining shutdown. */
import { createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { Client, credentials, status as grpcStatus, type ServiceError, type StatusObject } from "@grpc/grpc-js";
import { FileDescriptorProtoSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import {
  HarnessService,
  SandboxBrokerService,
  CredentialVaultProxyService,
  SessionLogClient,
  SessionLogService,
  WatchEventsResponse,
  type SessionLogServer,
} from "@metaharness/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, promisify } from "./grpc-client.js";
import { fromServiceError } from "./grpc-errors.js";
import { serverStream } from "./grpc-handlers.js";
import { MAX_RECEIVE_MESSAGE_BYTES, serviceNameOf, startGrpcServer, type GrpcServerHandle } from "./grpc-server.js";
import { capturingLogger, deferred, healthCheck, reflectionFiles, reflectionListServices } from "../testing.js";

const { logger, lines } = capturingLogger("server-test");
const streamStarted = deferred();
const streamAborted = deferred<unknown>();

const implementation: Partial<SessionLogServer> = {
  watchEvents: serverStream("metaharness.v1.SessionLog/WatchEvents", logger, async (req, stream) => {
    await stream.write(WatchEventsResponse.fromPartial({ event: { seq: 1 } }));
    if (req.sessionId !== "s") return; // one event and the end, for the decoding tests
    streamStarted.resolve();
    await new Promise((resolve) => stream.signal.addEventListener("abort", resolve, { once: true }));
    streamAborted.resolve(stream.signal.reason);
  }),
};

/** Files imported by `files` that are not in it yet. */
function imports(files: ReadonlyMap<string, FileDescriptorProto>): string[] {
  return [...new Set([...files.values()].flatMap((f) => f.dependency))].filter((d) => !files.has(d));
}

/** `files` ordered so that each comes after the files it imports, as a FileDescriptorSet wants. */
function importsFirst(files: ReadonlyMap<string, FileDescriptorProto>): FileDescriptorProto[] {
  const ordered: FileDescriptorProto[] = [];
  const placed = new Set<string>();
  while (ordered.length < files.size) {
    const ready = [...files.values()].filter((f) => !placed.has(f.name) && f.dependency.every((d) => placed.has(d)));
    if (ready.length === 0) throw new Error("the served files import each other in a cycle");
    for (const f of ready) {
      ordered.push(f);
      placed.add(f.name);
    }
  }
  return ordered;
}

let server: GrpcServerHandle;
beforeAll(async () => {
  const services = [{ definition: SessionLogService, implementation }];
  server = await startGrpcServer({ port: 0, logger, services });
});
afterAll(() => server.shutdown(0));

describe("startGrpcServer", () => {
  it("binds an ephemeral port on 127.0.0.1", () => {
    expect(server.port).toBeGreaterThan(0);
    expect(server.address).toBe(`127.0.0.1:${server.port}`);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: "grpc server listening", services: ["metaharness.v1.SessionLog"] }),
    );
  });

  it("answers health checks: SERVING overall and per service", async () => {
    expect(await healthCheck(server.address, "")).toBe("SERVING");
    expect(await healthCheck(server.address, "metaharness.v1.SessionLog")).toBe("SERVING");
    await expect(healthCheck(server.address, "no.such.Service")).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("lists our services through reflection", async () => {
    const services = await reflectionListServices(server.address);
    expect(services).toContain("metaharness.v1.SessionLog");
    expect(services).toContain("grpc.health.v1.Health");
  });

  it("serves, through reflection, every file a service needs, as grpcurl fetches them", async () => {
    // grpcurl asks for the file containing the service, then for each file it imports, by name,
    // until nothing is missing; a file whose imports are not declared fails it ("unresolvable
    // reference to google.protobuf.Timestamp").
    const { address } = server;
    const all = [SessionLogService, HarnessService, SandboxBrokerService, CredentialVaultProxyService];
    for (const service of [...all.map(serviceNameOf), "grpc.health.v1.Health"]) {
      const files = new Map<string, FileDescriptorProto>();
      const add = (bytes: readonly Buffer[]): void => {
        for (const b of bytes) {
          const file = fromBinary(FileDescriptorProtoSchema, b);
          files.set(file.name, file);
        }
      };
      add(await reflectionFiles(address, { file_containing_symbol: service }));
      for (let missing = imports(files); missing.length > 0; missing = imports(files)) {
        for (const name of missing) add(await reflectionFiles(address, { file_by_filename: name }));
      }
      // Building the registry throws on any import or type reflection did not serve.
      const registry = createFileRegistry({ $typeName: "google.protobuf.FileDescriptorSet", file: importsFirst(files) });
      const described = registry.getService(service);
      expect(described?.methods.length, service).toBeGreaterThan(0);
      for (const m of described?.methods ?? []) expect([m.input.typeName, m.output.typeName]).not.toContain("");
      if (service === "grpc.health.v1.Health") {
        // Go clients check map entries strictly: protobufjs's reconstruction named this entry
        // "Statuses", and grpcurl refused the whole file ("incorrect implicit map entry name").
        const list = registry.getMessage("grpc.health.v1.HealthListResponse");
        expect(list?.field["statuses"]?.fieldKind).toBe("map");
        const file = [...files.values()].find((f) => f.package === "grpc.health.v1");
        const entry = file?.messageType.find((m) => m.name === "HealthListResponse")?.nestedType[0];
        expect(entry?.name).toBe("StatusesEntry");
      }
    }
  });

  it("answers a request it cannot decode with INVALID_ARGUMENT, not INTERNAL", async () => {
    // WatchEventsRequest { session_id: "sesn_x", after_seq: 2^60 }: ts-proto (forceLong=number)
    // refuses integers above 2^53-1 while decoding, before any handler runs.
    const id = Buffer.from("sesn_x");
    const varint = (n: bigint): number[] => {
      const out: number[] = [];
      for (; n >= 0x80n; n >>= 7n) out.push(Number(n & 0x7fn) | 0x80);
      return [...out, Number(n)];
    };
    const request = Buffer.concat([Buffer.from([0x0a, id.length]), id, Buffer.from([0x10, ...varint(2n ** 60n)])]);
    const client = new Client(server.address, credentials.createInsecure());
    try {
      const identity = (b: Buffer): Buffer => b;
      const call = client.makeServerStreamRequest("/metaharness.v1.SessionLog/WatchEvents", identity, identity, request);
      const status = await new Promise<StatusObject>((resolve) => {
        call.on("data", () => undefined);
        call.on("error", () => undefined);
        call.on("status", resolve);
      });
      expect(status.code).toBe(grpcStatus.INVALID_ARGUMENT);
      expect(status.details).toBe("the request could not be decoded: after_seq: is outside ±9007199254740991, the integers this service reads exactly");
      expect(status.metadata.get("mh-error-field")).toEqual(["after_seq"]);
    } finally {
      client.close();
    }
  });

  it("refuses a string that is not UTF-8, naming its field, and takes U+FFFD that a client sent as such", async () => {
    // WatchEventsRequest { session_id }: bytes as a client that does not check its UTF-8 sends them.
    // The handler writes one event: a request it gets answers with data.
    const answer = async (id: Buffer): Promise<StatusObject | "data"> => {
      const request = Buffer.concat([Buffer.from([0x0a, id.length]), id]);
      const client = new Client(server.address, credentials.createInsecure());
      try {
        const identity = (b: Buffer): Buffer => b;
        const call = client.makeServerStreamRequest("/metaharness.v1.SessionLog/WatchEvents", identity, identity, request);
        return await new Promise<StatusObject | "data">((resolve) => {
          call.on("data", () => resolve("data"));
          call.on("error", () => undefined);
          call.on("status", resolve);
        });
      } finally {
        client.close();
      }
    };
    const bad = await answer(Buffer.from([0x61, 0xff, 0xfe, 0xc0, 0x80, 0x62]));
    expect(bad).toMatchObject({ code: grpcStatus.INVALID_ARGUMENT, details: "the request could not be decoded: session_id: is not valid UTF-8" });
    expect(bad !== "data" && bad.metadata.get("mh-error-field")).toEqual(["session_id"]);
    // The same character spelled in UTF-8 is text like any other: the handler gets it.
    expect(await answer(Buffer.from("a\uFFFDb", "utf8"))).toBe("data");
  });

  it("derives service names from definitions", () => {
    expect(serviceNameOf(SessionLogService)).toBe("metaharness.v1.SessionLog");
  });

  it("rejects, without leaking a server, when the port is taken", async () => {
    await expect(startGrpcServer({ port: server.port, logger, services: [] })).rejects.toThrow(/No address added/);
  });

  it("refuses a request over its receive limit with RESOURCE_EXHAUSTED naming the limit, which a client reads as such", async () => {
    const client = createClient(SessionLogClient, server.address);
    try {
      const log = promisify(client, SessionLogService);
      await expect(log.getSession({ sessionId: "s".repeat(MAX_RECEIVE_MESSAGE_BYTES) })).rejects.toMatchObject({
        code: "RESOURCE_EXHAUSTED",
        details: { limit_bytes: MAX_RECEIVE_MESSAGE_BYTES },
      });
    } finally {
      client.close();
    }
  });

  it("has a client refuse an answer over its own receive limit the same way", async () => {
    // A health Check's answer (status SERVING) takes 2 bytes.
    const client = new Client(server.address, credentials.createInsecure(), { "grpc.max_receive_message_length": 1 });
    try {
      const identity = (b: Buffer): Buffer => b;
      const err = await new Promise<ServiceError | null>((resolve) => {
        client.makeUnaryRequest("/grpc.health.v1.Health/Check", identity, identity, Buffer.alloc(0), (e) => resolve(e));
      });
      expect(err).not.toBeNull();
      expect(fromServiceError(err as ServiceError)).toMatchObject({ code: "RESOURCE_EXHAUSTED", details: { limit_bytes: 1 } });
    } finally {
      client.close();
    }
  });

  it("leaves unimplemented methods UNIMPLEMENTED", async () => {
    const client = createClient(SessionLogClient, server.address);
    try {
      const log = promisify(client, SessionLogService);
      await expect(log.getSession({ sessionId: "s" })).rejects.toMatchObject({ code: "UNIMPLEMENTED" });
    } finally {
      client.close();
    }
  });
});

describe("shutdown", () => {
  it("drains, then cancels calls still running after the grace period; idempotent", async () => {
    const client = createClient(SessionLogClient, server.address);
    const log = promisify(client, SessionLogService);
    const stream = log.watchEvents({ sessionId: "s", afterSeq: 0, types: [], includeDeltas: false, batchDeltas: false, fromHead: false });
    const consumed = (async () => {
      const seqs: number[] = [];
      try {
        for await (const res of stream) seqs.push(res.event?.seq ?? 0);
      } catch (err) {
        return { seqs, err };
      }
      return { seqs, err: undefined };
    })();
    await streamStarted.promise;

    const first = server.shutdown(50);
    expect(server.shutdown()).toBe(first);
    await first;

    expect(await streamAborted.promise).toMatchObject({ code: "CANCELLED" });
    const { seqs, err } = await consumed;
    expect(seqs).toEqual([1]);
    expect(err).toMatchObject({ code: "CANCELLED" });
    expect(lines).toContainEqual(expect.objectContaining({ msg: "grpc server stopped", forced: true }));
    client.close();
  });
});

describe("a health port (the kubelet's probes)", () => {
  it("serves the service's health alone, in plaintext, NOT_SERVING from the start of a shutdown until it stops", async () => {
    const started = deferred();
    const held: Partial<SessionLogServer> = {
      watchEvents: serverStream("metaharness.v1.SessionLog/WatchEvents", logger, async (_req, stream) => {
        started.resolve();
        await new Promise((resolve) => stream.signal.addEventListener("abort", resolve, { once: true }));
      }),
    };
    const s = await startGrpcServer({ port: 0, healthPort: 0, logger, services: [{ definition: SessionLogService, implementation: held }] });
    const probe = `127.0.0.1:${s.healthPort ?? 0}`;
    expect(s.healthPort).not.toBe(s.port);
    expect(await healthCheck(probe, "")).toBe("SERVING");
    expect(await healthCheck(probe, "metaharness.v1.SessionLog")).toBe("SERVING");
    // Nothing but health: the service's methods and reflection are not there.
    expect(await reflectionListServices(probe).catch((err: unknown) => err)).toMatchObject({ code: grpcStatus.UNIMPLEMENTED });
    const client = createClient(SessionLogClient, probe);
    const onProbe = promisify(client, SessionLogService);
    await expect(onProbe.getSession({ sessionId: "s" })).rejects.toMatchObject({ code: "UNIMPLEMENTED" });
    client.close();

    // A call in flight holds the drain open: the probe says NOT_SERVING meanwhile.
    const caller = createClient(SessionLogClient, s.address);
    const stream = promisify(caller, SessionLogService).watchEvents({ sessionId: "s", afterSeq: 0, types: [], includeDeltas: false, batchDeltas: false, fromHead: false });
    const consumed = (async () => {
      for await (const _ of stream) void _;
    })().catch(() => undefined);
    await started.promise;
    const stopping = s.shutdown(3_000);
    expect(await healthCheck(probe, "")).toBe("NOT_SERVING");
    await stopping;
    await consumed;
    caller.close();
    await expect(healthCheck(probe, "")).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });
});
