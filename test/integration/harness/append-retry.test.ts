/**
 * The harness's appends outlive a restart of the session log: an append the log cannot take is
 * sent again, unchanged, until the log is back (within a few seconds), so a turn is not lost to a
 * rolling restart. Sending the same events again writes nothing (their ids are kept), and a
 * refusal of the request itself (a lease taken over) is not retried.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LogPort } from "@metaharness/harness";
import { agentMessage, textOf } from "../../support/events.js";
import { newSession, rejection, startTestLog, type TestLog } from "../../support/session-log.js";

let log: TestLog;

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
});
afterAll(async () => {
  await log?.stop();
});

describe("appends across a session log restart", () => {
  it("are sent again until the log is back, written once, and never retried when refused", async () => {
    const sessionId = await newSession(log.client);
    const { lease } = await log.client.acquireLease({ sessionId, holder: "harness-a", ttlMs: 60_000 });
    const port = new LogPort(log.clientAs("harness"), sessionId);
    const events = [agentMessage("written while the log restarted")];

    await log.handle.stop();
    const pending = port.emit(events, lease!.epoch);
    // A fixed wait on purpose: the append keeps retrying while the log is down for a while.
    await new Promise((r) => setTimeout(r, 300));
    const back = await log.startReplica({ MH_GRPC_PORT: String(log.handle.port) });
    const stored = await pending;
    expect(stored.map((e) => [e.seq, textOf(e)])).toEqual([[1, "written while the log restarted"]]);

    // The same events again (an attempt whose answer was lost looks like this to the log).
    expect((await port.emit(events, lease!.epoch)).map((e) => e.seq)).toEqual([1]);
    expect((await back.client.getSession({ sessionId })).session?.lastSeq).toBe(1);

    // Another holder takes the lease: the old epoch is refused, and not retried (were it retried,
    // this port would keep at it for ten minutes and the test would time out).
    await back.client.releaseLease({ sessionId, holder: "harness-a", epoch: lease!.epoch });
    await back.client.acquireLease({ sessionId, holder: "harness-b", ttlMs: 60_000 });
    const patient = new LogPort(log.clientAs("harness"), sessionId, 600_000);
    expect((await rejection(patient.emit([agentMessage("stale")], lease!.epoch))).code).toBe("ABORTED");
    expect((await back.client.getSession({ sessionId })).session?.lastSeq).toBe(1);
  });
});

describe("appends a log refuses while too many wait", () => {
  it("are sent again until it takes them; a message over its size limit is not", async () => {
    // One append may wait while a batch is written; the others are refused (RESOURCE_EXHAUSTED).
    const busy = await startTestLog({ MH_RELAY_ENABLED: "false", MH_APPEND_MAX_QUEUED: "1" });
    try {
      const sessions = await Promise.all(Array.from({ length: 40 }, () => newSession(busy.client)));
      const raw = await Promise.allSettled(sessions.map((sessionId) => busy.client.emitEvent({ sessionId, event: agentMessage("raw") })));
      const refused = raw.filter((r) => r.status === "rejected").map((r) => (r.reason as { code?: string }).code);
      expect(refused.length).toBeGreaterThan(0);
      expect(new Set(refused)).toEqual(new Set(["RESOURCE_EXHAUSTED"]));

      const ports = sessions.map((sessionId) => new LogPort(busy.clientAs("harness"), sessionId));
      const stored = await Promise.all(ports.map((port) => port.emit([agentMessage("through the harness")], 0)));
      expect(stored.every((events) => events.length === 1 && textOf(events[0]) === "through the harness")).toBe(true);

      // Over the gRPC message limit: refused at once, not for the five seconds of retries.
      const started = Date.now();
      const err = await rejection(ports[0]!.emit([agentMessage("x".repeat(17 * 1024 * 1024))], 0));
      expect(err).toMatchObject({ code: "RESOURCE_EXHAUSTED", details: { limit_bytes: 16 * 1024 * 1024 } });
      expect(Date.now() - started).toBeLessThan(4_000);
    } finally {
      await busy.stop();
    }
  }, 60_000);
});
