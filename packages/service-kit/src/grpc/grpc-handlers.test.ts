/**
 * The handler wrappers and client helpers end to end over a real server: errors become statuses
 * (and MhErrors again), internals never leak, trace context crosses the wire, and server streams
 * honour backpressure and cancellation.
 */
import {
  GetSessionResponse,
  type GetSessionRequest,
  SessionLogClient,
  SessionLogService,
  WatchEventsResponse,
  type SessionLogServer,
} from "@metaharness/proto";
import { MhError } from "@metaharness/errors";
import { SpanKind, currentSpanIds, withSpan } from "@metaharness/telemetry";
import { startTestTelemetry, type TestTelemetry } from "@metaharness/telemetry/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, expectTypeOf, it } from "vitest";
import { createClient, promisify, unaryCall, type PromiseClient } from "./grpc-client.js";
import { serverStream, unary, type CallContext } from "./grpc-handlers.js";
import { startGrpcServer, type GrpcServerHandle } from "./grpc-server.js";
import { capturingLogger, deferred, type Deferred } from "../testing.js";

const { logger, lines } = capturingLogger("handlers-test");
const BIG_TEXT = "x".repeat(64 * 1024);
const MAX_FLOOD = 2_000;
const STALL_MS = 250;

let seen: { traceId?: string | undefined; ctx?: CallContext };
let slow: { started: Deferred<void>; aborted: Deferred<unknown> };
/** sess_late: a handler that asks for its signal only once `go` resolves, and tells what it found. */
let late: { go: Deferred<void>; saw: Deferred<{ aborted: boolean; reason: unknown }> };
let flood: { stalledAt: Deferred<number>; aborted: Deferred<unknown> };

const implementation: Partial<SessionLogServer> = {
  getSession: unary("metaharness.v1.SessionLog/GetSession", logger, async (req, ctx) => {
    seen = { traceId: currentSpanIds()?.traceId, ctx };
    switch (req.sessionId) {
      case "sess_bad":
        throw new MhError("INVALID_ARGUMENT", "session_id: must start with sess_", {
          field: "session_id",
          details: { max_length: 64 },
        });
      case "sess_boom":
        throw new Error("connect to postgres://admin:hunter2@db failed");
      case "sess_unicode":
        // Field and details from a caller's input, as a lease's holder or a label's key are.
        throw new MhError("FAILED_PRECONDITION", "held by harness-ü 🦀", {
          field: "labels[ключ%]",
          details: { holder: "harness-ü 🦀", epoch: 2 },
        });
      case "sess_slow":
        slow.started.resolve();
        await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
        slow.aborted.resolve(ctx.signal.reason);
        throw ctx.signal.reason;
      case "sess_late":
        slow.started.resolve();
        await late.go.promise;
        // The server's deadline may pass a moment after the client's: then the signal aborts.
        if (!ctx.signal.aborted) await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
        late.saw.resolve({ aborted: ctx.signal.aborted, reason: ctx.signal.reason });
        return GetSessionResponse.fromPartial({ session: { sessionId: req.sessionId } });
      default:
        return GetSessionResponse.fromPartial({ session: { sessionId: req.sessionId, lastSeq: 3 } });
    }
  }),
  watchEvents: serverStream("metaharness.v1.SessionLog/WatchEvents", logger, async (req, stream) => {
    if (req.sessionId === "three") {
      for (let seq = 1; seq <= 3; seq++) await stream.write(WatchEventsResponse.fromPartial({ event: { seq } }));
      return;
    }
    try {
      for (let seq = 1; seq <= MAX_FLOOD; seq++) {
        const written = stream.write(bigEvent(seq));
        if (await stalls(written)) flood.stalledAt.resolve(seq);
        await written;
      }
      flood.stalledAt.resolve(-1); // never stalled: backpressure is broken
    } catch (err) {
      flood.aborted.resolve(err);
      throw err;
    }
  }),
};

function bigEvent(seq: number): WatchEventsResponse {
  return WatchEventsResponse.fromPartial({
    event: {
      seq,
      payload: { $case: "userMessage", value: { content: [{ block: { $case: "text", value: { text: BIG_TEXT } } }] } },
    },
  });
}

/**
 * Whether a write is still pending after STALL_MS. Proving that nothing moves needs a time
 * window; a working transport settles writes to a reading client in well under a millisecond.
 */
function stalls(p: Promise<void>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), STALL_MS)));
  return Promise.race([p.then(() => false, () => false), stalled]).finally(() => clearTimeout(timer));
}

let server: GrpcServerHandle;
let client: SessionLogClient;
let log: PromiseClient<typeof SessionLogService>;
let telemetry: TestTelemetry;

beforeAll(async () => {
  telemetry = startTestTelemetry("handlers-test");
  const services = [{ definition: SessionLogService, implementation }];
  server = await startGrpcServer({ port: 0, logger, services });
  client = createClient(SessionLogClient, server.address);
  log = promisify(client, SessionLogService);
});
afterAll(async () => {
  client.close();
  await server.shutdown(0);
  await telemetry.telemetry.shutdown();
});
beforeEach(() => {
  seen = {};
  slow = { started: deferred(), aborted: deferred() };
  late = { go: deferred(), saw: deferred() };
  flood = { stalledAt: deferred(), aborted: deferred() };
  lines.length = 0;
  telemetry.reset();
});

describe("unary", () => {
  it("returns the handler's response, typed", async () => {
    const res = await log.getSession({ sessionId: "sess_ok" }, { deadlineMs: 5_000 });
    expectTypeOf(res).toEqualTypeOf<GetSessionResponse>();
    expectTypeOf(log.getSession).parameter(0).toEqualTypeOf<GetSessionRequest>();
    expectTypeOf(log.watchEvents).returns.toEqualTypeOf<AsyncIterable<WatchEventsResponse>>();
    expect(res.session).toMatchObject({ sessionId: "sess_ok", lastSeq: 3 });
    expect(seen.ctx?.deadline).toBeInstanceOf(Date);
    expect(seen.ctx?.signal.reason).toBe(undefined);
  });

  it("sends an MhError as its status with field and details in trailers, and reads them back", async () => {
    const err = await unaryCall(client.getSession.bind(client), { sessionId: "sess_bad" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MhError);
    const mh = err as MhError;
    expect(mh).toMatchObject({
      code: "INVALID_ARGUMENT",
      codeNumber: 3,
      field: "session_id",
      details: { max_length: 64 },
    });
    expect(mh.message).toBe("session_id: must start with sess_");
    const status = mh.cause as { code: number; metadata: { get(k: string): unknown[] } };
    expect(status.code).toBe(3);
    expect(status.metadata.get("mh-error-field")).toEqual(["session_id"]);
    expect(status.metadata.get("mh-error-details")).toEqual(['{"max_length":64}']);

    const failures = lines.filter((l) => l["msg"] === "rpc failed");
    expect(failures).toEqual([
      expect.objectContaining({
        level: "warn",
        rpc: "metaharness.v1.SessionLog/GetSession",
        code: "INVALID_ARGUMENT",
        field: "session_id",
      }),
    ]);
  });

  it("answers with field and details that are not ASCII, which metadata cannot carry as they are", async () => {
    // grpc-js refused to build the status, and the call waited for its deadline.
    const err = await log.getSession({ sessionId: "sess_unicode" }, { deadlineMs: 5_000 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "FAILED_PRECONDITION", field: "labels[ключ%]", details: { holder: "harness-ü 🦀", epoch: 2 } });
    expect((err as MhError).message).toBe("held by harness-ü 🦀");
  });

  it("hides an unexpected error's message behind INTERNAL with the trace id, and logs it in full", async () => {
    const err = await withSpan("caller", {}, () => log.getSession({ sessionId: "sess_boom" })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "INTERNAL", field: undefined });
    const message = (err as MhError).message;
    expect(message).toMatch(/^internal error \(trace [0-9a-f]{32}\)$/);
    expect(message).toContain(seen.traceId);
    expect(message).not.toContain("hunter2");

    const failures = lines.filter((l) => l["msg"] === "rpc failed");
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ level: "error", code: "INTERNAL", trace_id: seen.traceId });
    expect((failures[0]?.["err"] as { stack: string }).stack).toContain("hunter2");
  });

  it("continues the caller's trace in a SERVER span", async () => {
    const caller = await withSpan("caller", {}, async (span) => {
      await log.getSession({ sessionId: "sess_ok" });
      return span.spanContext();
    });
    expect(seen.traceId).toBe(caller.traceId);
    const serverSpan = telemetry.finishedSpans().find((s) => s.name === "metaharness.v1.SessionLog/GetSession");
    expect(serverSpan?.kind).toBe(SpanKind.SERVER);
    expect(serverSpan?.parentSpanContext?.spanId).toBe(caller.spanId);
    expect(serverSpan?.attributes).toMatchObject({
      "rpc.system": "grpc",
      "rpc.service": "metaharness.v1.SessionLog",
      "rpc.method": "GetSession",
      "rpc.grpc.status_code": 0,
      "mh.session_id": "sess_ok",
    });
  });

  it("aborts the handler's signal when the deadline passes", async () => {
    const err = await log.getSession({ sessionId: "sess_slow" }, { deadlineMs: 100 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "DEADLINE_EXCEEDED" });
    expect(await slow.aborted.promise).toBeInstanceOf(MhError);
  });

  it("gives a handler that asks for its signal only after the deadline passed one that is aborted", async () => {
    const expired = await log.getSession({ sessionId: "sess_late" }, { deadlineMs: 100 }).catch((e: unknown) => e);
    expect(expired).toMatchObject({ code: "DEADLINE_EXCEEDED" });
    late.go.resolve();
    // The client's own deadline cancels its stream, which the server may hear before its deadline (a moment later) passes.
    const { aborted, reason } = await late.saw.promise;
    expect(aborted).toBe(true);
    expect(["DEADLINE_EXCEEDED", "CANCELLED"]).toContain((reason as MhError).code);
  });

  it("aborts the handler's signal when the client cancels", async () => {
    const abort = new AbortController();
    const call = log.getSession({ sessionId: "sess_slow" }, { signal: abort.signal });
    await slow.started.promise;
    abort.abort();
    await expect(call).rejects.toMatchObject({ code: "CANCELLED" });
    expect(await slow.aborted.promise).toMatchObject({ code: "CANCELLED" });
    expect(lines.filter((l) => l["msg"] === "rpc failed")).toEqual([]);
  });
});

describe("serverStream", () => {
  it("streams every message, then ends", async () => {
    const seqs: number[] = [];
    for await (const res of log.watchEvents({ sessionId: "three", afterSeq: 0, types: [], includeDeltas: false, batchDeltas: false, fromHead: false })) {
      seqs.push(res.event?.seq ?? 0);
    }
    expect(seqs).toEqual([1, 2, 3]);
  });

  it("holds writes back while the consumer does not pull, and aborts them when it cancels", async () => {
    const abort = new AbortController();
    // Opened but never iterated: nothing pulls messages.
    log.watchEvents({ sessionId: "flood", afterSeq: 0, types: [], includeDeltas: false, batchDeltas: false, fromHead: false }, { signal: abort.signal });
    // The writes stall once the client's buffer (16 messages, a Readable's objectMode high-water
    // mark) and the HTTP/2 windows are full, not before. "Stalled" is a write not done within
    // STALL_MS, so on a busy machine the last write into the windows may count as the stall.
    const stalledAt = await flood.stalledAt.promise;
    expect(stalledAt).toBeGreaterThanOrEqual(16);
    expect(stalledAt).toBeLessThan(MAX_FLOOD / 4);

    abort.abort();
    expect(await flood.aborted.promise).toMatchObject({ code: "CANCELLED" });
    expect(lines.filter((l) => l["msg"] === "rpc failed")).toEqual([]);
  });

  it("keeps writing while the client reads, and cancels the call when it stops iterating", async () => {
    let received = 0;
    for await (const res of log.watchEvents({ sessionId: "flood", afterSeq: 0, types: [], includeDeltas: false, batchDeltas: false, fromHead: false })) {
      expect(res.event?.seq).toBe(++received);
      if (received === 200) break; // 12.5 MiB: far more than any buffer holds
    }
    expect(await flood.aborted.promise).toMatchObject({ code: "CANCELLED" });
  });
});
