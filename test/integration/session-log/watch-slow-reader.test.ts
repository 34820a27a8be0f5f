/**
 * A watcher that stops reading: the log's writes to it wait on the transport (HTTP/2 flow control)
 * while appends and deltas go on, and when it reads again it gets every event once, in seq
 * order, and every delta (fewer than the MAX_QUEUED writes past which deltas are dropped) in the
 * order published, none before the events appended before it was published. Deltas that come
 * while events ahead of them are unsent are held until the watch has caught up (watch.ts): with a
 * reader this far behind, that is after the last event, not between the events. The path a write takes when the transport does not take it at once (2b00df6: a write
 * goes out at once only when no earlier one is waiting) is exercised here by volume: the events
 * are larger in all than the stream's window and the sockets' buffers together.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeltaKind, type WatchEventsResponse } from "@metaharness/proto";
import { startTestLog, type TestLog } from "../../support/session-log.js";
import { agentMessage } from "../../support/events.js";
import { eventually } from "../../support/eventually.js";

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
});
afterAll(async () => {
  await log?.stop();
});

const PROBE = "sevt_probe";
const delta = (text: string, modelRequestId = "sevt_req") => ({ sessionId: "", modelRequestId, blockIndex: 0, kind: DeltaKind.DELTA_KIND_TEXT, text, emittedAt: undefined });

/** 200 events of 64 KiB: 12.5 MiB, far more than a stream's flow-control window and the sockets' buffers. */
const EVENTS = 200;
const EVENT_BYTES = 64 * 1024;

describe("WatchEvents to a watcher that stops reading", () => {
  it("sends every event once, in order, and every delta in order, none before an event appended before it", async () => {
    const { session } = await log.client.createSession({ sessionId: "", metadata: undefined });
    const sessionId = session!.sessionId;
    const stream = log.client.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: true, batchDeltas: false, fromHead: false })[Symbol.asyncIterator]();
    // Subscribed once a probe arrives: deltas are stored nowhere, and one published before the
    // watch subscribed is gone.
    let pending = stream.next();
    await eventually(async () => {
      await log.client.publishDeltas({ sessionId, deltas: [delta("probe", PROBE)] });
      const first = await Promise.race([pending, new Promise<undefined>((r) => setTimeout(() => r(undefined), 100))]);
      if (first === undefined) return undefined;
      if (first.done === true) throw new Error("the watch ended before its first message");
      const message: WatchEventsResponse = first.value;
      expect(message.delta?.modelRequestId).toBe(PROBE);
      return true;
    }, "the watcher to receive a probe delta");
    // The probes that came after the first are read below and passed over.
    const published: string[] = [];
    for (let k = 1; k <= EVENTS; k++) {
      await log.client.publishDeltas({ sessionId, deltas: [delta(`d${k}`)] });
      published.push(`delta:d${k}`);
      await log.client.emitEvent({ sessionId, event: agentMessage(`${k % 10}`.repeat(EVENT_BYTES)) });
      published.push(`event:${k}`);
    }
    // Everything is appended while the watcher reads nothing; now it reads.
    const got: string[] = [];
    const deltas = (): number => got.filter((g) => g.startsWith("delta:")).length;
    while (!(got.includes(`event:${EVENTS}`) && deltas() === EVENTS)) {
      pending = stream.next();
      const next = await pending;
      if (next.done === true) break;
      const value: WatchEventsResponse = next.value;
      if (value.delta?.modelRequestId === PROBE) continue;
      got.push(value.delta !== undefined ? `delta:${value.delta.text}` : `event:${value.event!.seq}`);
    }
    await stream.return?.();
    const events = got.filter((g) => g.startsWith("event:"));
    expect(events).toEqual(published.filter((p) => p.startsWith("event:")));
    expect(got.filter((g) => g.startsWith("delta:"))).toEqual(published.filter((p) => p.startsWith("delta:")));
    // d<k> was published after event k-1 was appended: it never comes before it.
    for (let k = 2; k <= EVENTS; k++) expect(got.indexOf(`delta:d${k}`)).toBeGreaterThan(got.indexOf(`event:${k - 1}`));
    // The reader was far enough behind for the log to hold deltas back (the path under test).
    expect(got.indexOf(`delta:d${EVENTS}`)).toBeGreaterThan(got.indexOf(`event:${EVENTS}`));
  }, 120_000);
});
