/** startGrpcServer against real sockets: health, reflection, bind failures and draining shutdown. */
import {
  SessionLogClient,
  SessionLogService,
  WatchEventsResponse,
  type SessionLogServer,
} from "@metaharness/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, promisify } from "./grpc-client.js";
import { serverStream } from "./grpc-handlers.js";
import { serviceNameOf, startGrpcServer, type GrpcServerHandle } from "./grpc-server.js";
import { capturingLogger, deferred, healthCheck, reflectionListServices } from "./test-support.js";

const { logger, lines } = capturingLogger("server-test");
const streamStarted = deferred();
const streamAborted = deferred<unknown>();

const implementation: Partial<SessionLogServer> = {
  watchEvents: serverStream("metaharness.v1.SessionLog/WatchEvents", logger, async (_req, stream) => {
    await stream.write(WatchEventsResponse.fromPartial({ event: { seq: 1 } }));
    streamStarted.resolve();
    await new Promise((resolve) => stream.signal.addEventListener("abort", resolve, { once: true }));
    streamAborted.resolve(stream.signal.reason);
  }),
};

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

  it("derives service names from definitions", () => {
    expect(serviceNameOf(SessionLogService)).toBe("metaharness.v1.SessionLog");
  });

  it("rejects, without leaking a server, when the port is taken", async () => {
    await expect(startGrpcServer({ port: server.port, logger, services: [] })).rejects.toThrow(/No address added/);
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
    const stream = log.watchEvents({ sessionId: "s", afterSeq: 0, types: [], includeDeltas: false });
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
