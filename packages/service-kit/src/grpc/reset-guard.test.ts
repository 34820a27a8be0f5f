/**
 * The reset guard over a real grpc-js server: a client that ends thousands of calls itself (each
 * an RST_STREAM) far faster than the server's 33 a second loses nothing, its long-lived stream
 * included, because its calls move to fresh connections before one runs out; connections left
 * behind close once their calls have ended. Without the guard the server closes the connection
 * after about 1,000 resets and every call on it fails.
 */
import {
  GetSessionResponse,
  SessionLogClient,
  SessionLogService,
  WatchEventsRequest,
  WatchEventsResponse,
  type SessionLogServer,
} from "@metaharness/proto";
import { MhError } from "@metaharness/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, promisify, type PromiseClient } from "./grpc-client.js";
import { serverStream, unary } from "./grpc-handlers.js";
import { startGrpcServer, type GrpcServerHandle } from "./grpc-server.js";
import { ResetGuardedChannel } from "./reset-guard.js";
import { capturingLogger, eventually } from "../testing.js";

const { logger } = capturingLogger("reset-guard-test");
/** The server's allowance: 1,000 resets, then 33 a second (nghttp2's defaults in Node 20). */
const allowance = (seconds: number): number => 1_000 + 33 * (Math.ceil(seconds) + 1);
/** Calls the client ends itself: at least three times the server's burst, and past its allowance over the run. */
const RESETS = 3_000;
const PAST_BY = 300;
/** A machine too slow to end calls faster than the allowance refills would never get past it. */
const GIVE_UP_MS = 150_000;
/** Calls at once: enough that the resets come at hundreds a second. */
const CONCURRENCY = 25;

/** The long-lived stream's pending pushes: the test sends it an event per batch. */
let pushLong: ((seq: number) => Promise<void>) | undefined;
let endLong: (() => void) | undefined;

const implementation: Partial<SessionLogServer> = {
  getSession: unary("metaharness.v1.SessionLog/GetSession", logger, async (req, ctx) => {
    if (req.sessionId === "hang") {
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      throw ctx.signal.reason;
    }
    return GetSessionResponse.fromPartial({ session: { sessionId: req.sessionId } });
  }),
  watchEvents: serverStream("metaharness.v1.SessionLog/WatchEvents", logger, async (req, stream) => {
    if (req.sessionId === "long") {
      const ended = new Promise<void>((resolve) => (endLong = resolve));
      pushLong = (seq) => stream.write(WatchEventsResponse.fromPartial({ event: { seq } }));
      await ended;
      return;
    }
    // One event, then held open until the client leaves: the client's end is a reset.
    await stream.write(WatchEventsResponse.fromPartial({ event: { seq: 1 } }));
    await new Promise((resolve) => stream.signal.addEventListener("abort", resolve, { once: true }));
  }),
};

let server: GrpcServerHandle;
let client: SessionLogClient;
let log: PromiseClient<typeof SessionLogService>;

beforeAll(async () => {
  server = await startGrpcServer({ port: 0, logger, services: [{ definition: SessionLogService, implementation }] });
  client = createClient(SessionLogClient, server.address);
  log = promisify(client, SessionLogService);
});
afterAll(async () => {
  endLong?.();
  client.close();
  await server.shutdown(0);
});

/** `eventually` for a condition read without waiting. */
function until<T>(probe: () => T | undefined, what: string | (() => string)): Promise<T> {
  return eventually(() => Promise.resolve(probe()), what);
}

/** Opens a stream, reads its first event and leaves: grpc-js cancels it (RST_STREAM CANCEL). */
async function followAndLeave(): Promise<void> {
  for await (const res of log.watchEvents(WatchEventsRequest.fromPartial({ sessionId: "short" }))) {
    if (res.event?.seq === 1) return;
  }
  throw new Error("the stream ended before its first event");
}

/** A call past its client-side deadline (RST_STREAM CANCEL): DEADLINE_EXCEEDED is the expected end. */
async function timeOut(): Promise<void> {
  const err = await log.getSession({ sessionId: "hang" }, { deadlineMs: 5 }).then(
    () => new Error("a hung call answered"),
    (e: unknown) => e,
  );
  if (!(err instanceof MhError) || err.code !== "DEADLINE_EXCEEDED") throw err;
}

describe("a client ending calls itself", () => {
  it(`ends ${RESETS}+ calls at well over 33 a second, past the server's allowance, while a stream and unary calls run beside them, and loses none`, async () => {
    const guard = client.getChannel();
    const lanes = (): number => (guard instanceof ResetGuardedChannel ? guard.lanes() : 1);
    pushLong = undefined;

    const received: number[] = [];
    const failures: string[] = [];
    const long = (async () => {
      for await (const res of log.watchEvents(WatchEventsRequest.fromPartial({ sessionId: "long" }))) received.push(res.event?.seq ?? -1);
    })().catch((err: unknown) => void failures.push(`the long stream: ${String(err)}`));
    await until(() => pushLong, "the long stream to open");

    const started = performance.now();
    let pushed = 0;
    let unaries = 0;
    let mostLanes = 1;
    const seconds = (): number => (performance.now() - started) / 1000;
    let done = 0;
    for (; failures.length === 0 && (done < RESETS || done < allowance(seconds()) + PAST_BY); done += CONCURRENCY) {
      if (performance.now() - started > GIVE_UP_MS) throw new Error(`only ${done} calls ended in ${seconds().toFixed(0)} s: too slow to pass the allowance`);
      const batch: Promise<void>[] = [];
      for (let i = 0; i < CONCURRENCY; i++) batch.push(i % 5 === 0 ? timeOut() : followAndLeave());
      batch.push(log.getSession({ sessionId: `u${done}` }).then(() => void (unaries += 1)));
      batch.push(pushLong!(++pushed));
      for (const outcome of await Promise.allSettled(batch)) {
        if (outcome.status === "rejected") failures.push(`after ${done} calls ended: ${String(outcome.reason)}`);
      }
      mostLanes = Math.max(mostLanes, lanes());
    }
    const took = seconds();
    expect(failures.slice(0, 5)).toEqual([]);

    await pushLong!(++pushed);
    await until(() => (received.length === pushed ? true : undefined), () => `${pushed} events on the long stream (${received.length})`);
    expect(received).toEqual(Array.from({ length: pushed }, (_, i) => i + 1));
    expect(unaries).toBe(done / CONCURRENCY);
    // Past what the server allows one connection over the run: the calls moved on.
    expect(done).toBeGreaterThan(allowance(took));
    expect(mostLanes).toBeGreaterThan(1);

    // The server ends the long stream (no reset); the lanes left behind then close.
    endLong!();
    await long;
    await until(() => (lanes() <= 2 ? true : undefined), () => `the drained connections to close (${lanes()} open)`);
  }, 180_000);

  it("lets a stream in flight finish when its client is closed", async () => {
    const own = createClient(SessionLogClient, server.address);
    const ownLog = promisify(own, SessionLogService);
    pushLong = undefined;
    const received: number[] = [];
    const long = (async () => {
      for await (const res of ownLog.watchEvents(WatchEventsRequest.fromPartial({ sessionId: "long" }))) {
        received.push(res.event?.seq ?? -1);
        if (received.length === 1) own.close();
      }
    })();
    await until(() => pushLong, "the stream to open");
    await pushLong!(1);
    await until(() => (received.length === 1 ? true : undefined), "the first event");
    await pushLong!(2);
    endLong!();
    await long;
    expect(received).toEqual([1, 2]);
  });
});
