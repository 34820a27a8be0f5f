/**
 * A harness loop's view of its session (SessionEvents), on the real session log: it never loses
 * an event that a client appended just before the harness's own append, a turn-ending append
 * does not land after input its decision did not see, its own appends the log leaves out of its
 * follow are read when a later event comes first, the view follows the log again after the
 * session log behind it restarts, and a closed view's follow is ended by the log when the lease
 * is given back, not cancelled.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { StopReasonType } from "@metaharness/proto";
import { LogPort, SessionEvents, type ViewContext } from "@metaharness/harness";
import { createLogger } from "@metaharness/service-kit/logging";
import { newSession, startTestLog, type LogClient, type TestLog } from "../../support/session-log.js";
import { agentMessage, userMessage } from "../../support/events.js";
import { eventually } from "../../support/eventually.js";

let log: TestLog;

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
});

afterAll(async () => {
  await log.stop();
});

const logger = createLogger({ service: "test", level: "silent" });

async function context(client: LogClient, sessionId: string, stop: AbortSignal): Promise<ViewContext> {
  const { lease } = await client.acquireLease({ sessionId, holder: "test-harness", ttlMs: 60_000 });
  return { log: new LogPort(client, sessionId), leaseEpoch: lease?.epoch ?? 0, signal: stop, logger };
}

const idleEndTurn = () => newEvent("session.status_idle", { stopReason: { type: StopReasonType.STOP_REASON_TYPE_END_TURN, eventIds: [] } });

async function types(sessionId: string): Promise<string[]> {
  const { events } = await log.client.getEvents({ sessionId, position: { $case: "afterSeq", value: 0 }, limit: 100, types: [] });
  return events.map((e) => e.type);
}

describe("a harness's view of its session", () => {
  it("reads what a client appended just before the harness's own append, instead of skipping it", async () => {
    const sessionId = await newSession(log.client);
    const view = await SessionEvents.open(await context(log.client, sessionId, new AbortController().signal), () => undefined);
    // Not following: the client's message can only reach the view through the harness's append.
    view.close();
    await log.client.emitEvents({ sessionId, events: [userMessage("are you there?")] });
    await view.append(agentMessage("yes"));
    expect(view.events.map((e) => [e.seq, e.type])).toEqual([
      [1, "user.message"],
      [2, "agent.message"],
    ]);
  });

  it("does not end a turn after input its decision did not see, and gives the view that input", async () => {
    const sessionId = await newSession(log.client);
    const stop = new AbortController();
    const view = await SessionEvents.open(await context(log.client, sessionId, stop.signal), () => undefined);
    try {
      await view.append(userMessage("first"), agentMessage("answered"));
      const seen = view.lastSeq();
      await log.client.emitEvents({ sessionId, events: [userMessage("second")] });
      expect(await view.appendAt(seen, idleEndTurn())).toBe(false);
      expect(await types(sessionId)).toEqual(["user.message", "agent.message", "user.message"]);
      expect(view.events.map((e) => e.type)).toEqual(["user.message", "agent.message", "user.message"]);
      // Decided again on what the view now holds, it lands.
      expect(await view.appendAt(view.lastSeq(), idleEndTurn())).toBe(true);
      expect((await types(sessionId)).at(-1)).toBe("session.status_idle");
    } finally {
      stop.abort();
      view.close();
    }
  });

  it("reads its lease's own appends that its follow left out once another's event comes past them (an append whose answer it has not merged yet)", async () => {
    const sessionId = await newSession(log.client);
    const stop = new AbortController();
    const ctx = await context(log.client, sessionId, stop.signal);
    const view = await SessionEvents.open(ctx, () => undefined);
    try {
      await log.client.emitEvents({ sessionId, events: [userMessage("hello")] });
      await expect.poll(() => view.events.length, { timeout: 15_000 }).toBe(1);
      // Under the view's lease but not through the view: the log leaves it out of the follow,
      // and no answer brings it.
      await log.client.emitEvents({ sessionId, events: [agentMessage("own")], leaseEpoch: ctx.leaseEpoch });
      await log.client.emitEvents({ sessionId, events: [userMessage("next")] });
      await expect.poll(() => view.events.map((e) => [e.seq, e.type]), { timeout: 15_000 }).toEqual([
        [1, "user.message"],
        [2, "agent.message"],
        [3, "user.message"],
      ]);
    } finally {
      stop.abort();
      view.close();
    }
  });

  it("leaves its follow, once closed, for the log to end when the lease is given back: ended with OK, not cancelled", async () => {
    const sessionId = await newSession(log.client);
    const ends: string[] = [];
    // The log client as the view uses it, telling how each follow's stream ended.
    const client: LogClient = {
      ...log.client,
      watchEvents: (req, opts) =>
        (async function* () {
          try {
            yield* log.client.watchEvents(req, opts);
            ends.push(`ended by the log (end_with_lease ${String(req.endWithLease)})`);
          } catch (err) {
            ends.push(`failed: ${String(err)}`);
            throw err;
          }
        })(),
    };
    const stop = new AbortController();
    const ctx = await context(client, sessionId, stop.signal);
    const view = await SessionEvents.open(ctx, () => undefined);
    // Following once a client's message reaches it.
    await log.client.emitEvents({ sessionId, events: [userMessage("hello")] });
    await expect.poll(() => view.events.length, { timeout: 15_000 }).toBe(1);
    view.close();
    await log.client.releaseLease({ sessionId, holder: "test-harness", epoch: ctx.leaseEpoch });
    await view.followEnded;
    // Cancelled (had the log not ended it within the view's wait), it would say "failed: ... CANCELLED".
    expect(ends).toEqual(["ended by the log (end_with_lease true)"]);
    stop.abort();
  });

  it("woken beside input still landing, follows the log for that input, not only for the next event another appends", async () => {
    const sessionId = await newSession(log.client);
    const stop = new AbortController();
    const view = await SessionEvents.open(await context(log.client, sessionId, stop.signal), () => undefined);
    try {
      let landed = false;
      const waiting = view.inputLanding(60_000, stop.signal).then(() => (landed = true));
      await log.client.emitEvents({ sessionId, events: [newEvent("system.message", { content: [{ block: { $case: "text", value: { text: "Answer in French." } } }] })] });
      await eventually(() => Promise.resolve(view.lastSeq() === 1 ? true : undefined), "the system.message followed");
      // A loop deciding now would find nothing to do, and one without a linger would give the session back.
      expect(landed).toBe(false);
      await log.client.emitEvents({ sessionId, events: [userMessage("bonjour")] });
      await waiting;
      expect(view.events.map((e) => e.type)).toEqual(["system.message", "user.message"]);
    } finally {
      stop.abort();
      view.close();
    }
  });

  it("follows the log again when the session log behind it restarts", async () => {
    const sessionId = await newSession(log.client);
    // Port 0, read back: the restart below binds the same port, the one this replica just freed.
    const first = await log.startReplica({ MH_GRPC_PORT: "0" });
    const port = first.handle.port;
    const stop = new AbortController();
    const view = await SessionEvents.open(await context(first.client, sessionId, stop.signal), () => undefined);
    try {
      await log.client.emitEvents({ sessionId, events: [userMessage("before the restart")] });
      await expect.poll(() => view.events.length).toBe(1);
      await first.handle.stop();
      await log.startReplica({ MH_GRPC_PORT: String(port) });
      await log.client.emitEvents({ sessionId, events: [userMessage("after the restart")] });
      await expect.poll(() => view.events.map((e) => e.seq), { timeout: 15_000 }).toEqual([1, 2]);
    } finally {
      stop.abort();
      view.close();
    }
  }, 30_000);
});
