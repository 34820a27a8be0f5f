/**
 * A call this client cancels itself costs no stack trace (issue 31): grpc-js answers every
 * cancel with a status Error whose stack it formats, and a stream's iteration threw an MhError
 * made for it, once per event stream a client left (the gateway) and per follow a harness ended.
 * Over a real grpc-js server: the status Error a cancelled unary call carries as its cause has no
 * frames, and a cancelled stream's iteration ends with the one error made for it at load.
 */
import { GetSessionResponse, SessionLogClient, SessionLogService, WatchEventsResponse, type SessionLogServer } from "@metaharness/proto";
import { MhError } from "@metaharness/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, promisify, type PromiseClient } from "./grpc-client.js";
import { serverStream, unary } from "./grpc-handlers.js";
import { startGrpcServer, type GrpcServerHandle } from "./grpc-server.js";
import { capturingLogger } from "../testing.js";

const { logger } = capturingLogger("own-cancel-test");

/** Holds every call open until the client leaves. */
const implementation: Partial<SessionLogServer> = {
  getSession: unary("metaharness.v1.SessionLog/GetSession", logger, async (_req, ctx) => {
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
    return GetSessionResponse.fromPartial({});
  }),
  watchEvents: serverStream("metaharness.v1.SessionLog/WatchEvents", logger, async (_req, stream) => {
    await stream.write(WatchEventsResponse.fromPartial({ event: { seq: 1 } }));
    await new Promise((resolve) => stream.signal.addEventListener("abort", resolve, { once: true }));
  }),
};

let server: GrpcServerHandle;
let raw: SessionLogClient;
let log: PromiseClient<typeof SessionLogService>;

beforeAll(async () => {
  server = await startGrpcServer({ port: 0, logger, services: [{ definition: SessionLogService, implementation }] });
  raw = createClient(SessionLogClient, `127.0.0.1:${server.port}`);
  log = promisify(raw, SessionLogService);
});

afterAll(async () => {
  raw?.close();
  await server?.shutdown(1_000);
});

/** Whether an error's stack names any frame. */
const framed = (err: unknown): boolean => err instanceof Error && /\n\s+at /.test(err.stack ?? "");

describe("a call the client cancels itself", () => {
  it("fails with CANCELLED, its status Error without a stack trace", async () => {
    const aborted = new AbortController();
    const call = log.getSession({ sessionId: "s" }, { signal: aborted.signal });
    setTimeout(() => aborted.abort(), 50);
    const err = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MhError);
    expect((err as MhError).code).toBe("CANCELLED");
    const cause = (err as MhError).cause;
    expect(cause).toBeInstanceOf(Error);
    expect(framed(cause)).toBe(false);
  });

  it("ends a stream's iteration with the one error made for it, not one per stream", async () => {
    const ends: unknown[] = [];
    for (let i = 0; i < 2; i += 1) {
      const aborted = new AbortController();
      try {
        for await (const _ of log.watchEvents({ sessionId: "s", afterSeq: 0, types: [], includeDeltas: false, batchDeltas: false, fromHead: false }, { signal: aborted.signal })) {
          aborted.abort();
        }
      } catch (err) {
        ends.push(err);
      }
    }
    expect(ends).toHaveLength(2);
    expect(ends[0]).toMatchObject({ code: "CANCELLED" });
    expect(ends[1]).toBe(ends[0]);
  });
});
