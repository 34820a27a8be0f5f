/**
 * The example analytics consumer (apps/session-log/src/examples/usage-consumer.ts) against the
 * real topic: per session it sums the model's token usage and counts tool calls from what the
 * outbox published, counts a redelivered record once (also one of a session that ended: it
 * counted again once the consumer had dropped the session's seq at its termination), and reports
 * a session whose first events never arrived as a gap.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createKafkaBus } from "@metaharness/event-bus";
import { newEvent } from "@metaharness/events";
import { Event, StopReasonType } from "@metaharness/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTopic } from "../../support/kafka.js";
import { eventually } from "../../support/eventually.js";
import { startTestLog, type TestLog } from "../../support/session-log.js";
import { KAFKA_BROKERS } from "../../support/topics.js";

const MAIN = join(new URL("../../../", import.meta.url).pathname, "apps/session-log/dist/examples/usage-consumer.js");

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog();
});
afterAll(async () => {
  await log?.stop();
});

const modelEnd = (inputTokens: number, outputTokens: number): Event =>
  newEvent("span.model_request_end", {
    modelRequestStartId: "evt_start",
    isError: false,
    stopReason: "end_turn",
    modelUsage: { inputTokens, outputTokens, cacheCreationInputTokens: 0, cacheReadInputTokens: 5 },
  });

describe("the usage consumer", () => {
  it("sums each session's usage once per event, and reports a gap", async () => {
    const { session } = await log.client.createSession({ sessionId: "", metadata: undefined });
    const sessionId = session!.sessionId;
    await log.client.emitEvents({
      sessionId,
      events: [
        newEvent("session.status_running", {}),
        modelEnd(100, 20),
        newEvent("agent.tool_use", { name: "bash", input: { command: "ls" }, evaluatedPermission: 0, sandboxId: "" }),
        modelEnd(50, 10),
        newEvent("session.status_idle", { stopReason: { type: StopReasonType.STOP_REASON_TYPE_END_TURN, eventIds: [] } }),
      ],
    });
    const ended = (await log.client.createSession({ sessionId: "", metadata: undefined })).session!.sessionId;
    await log.client.emitEvents({ sessionId: ended, events: [newEvent("session.status_running", {}), modelEnd(10, 1), newEvent("session.status_terminated", {})] });
    // Wait until the outbox published them, then add what a retrying relay and a late start look
    // like: the second event once more, the ended session's model request once more, and a
    // session seen from its fourth event.
    const topic = await readTopic(log.topic);
    let second: Uint8Array;
    let endedSecond: Uint8Array;
    try {
      await topic.waitFor((r) => r.filter((x) => x.key === sessionId).length >= 5 && r.filter((x) => x.key === ended).length >= 3);
      second = Event.encode(topic.received.find((x) => x.key === sessionId && x.event.seq === 2)!.event).finish();
      endedSecond = Event.encode(topic.received.find((x) => x.key === ended && x.event.seq === 2)!.event).finish();
    } finally {
      await topic.close();
    }
    const late = `sesn_late_${randomBytes(4).toString("hex")}`;
    const lateEvent = Event.encode({ ...modelEnd(7, 3), sessionId: late, seq: 4 }).finish();
    // After each redelivered record, in its session's partition, one the consumer prints: once it
    // is printed, the redelivery before it was read (partitions are read independently).
    const endedAfter = Event.encode({ ...modelEnd(1, 1), sessionId: ended, seq: 4 }).finish();
    const mineAfter = Event.encode({ ...newEvent("session.status_running", {}), sessionId, seq: 6 }).finish();
    const bus = createKafkaBus({ brokers: KAFKA_BROKERS.split(","), clientId: "test-redeliver" });
    try {
      const publisher = await bus.publisher();
      await publisher.publish([
        { topic: log.topic, key: sessionId, value: second, headers: {} },
        { topic: log.topic, key: sessionId, value: mineAfter, headers: {} },
        { topic: log.topic, key: ended, value: endedSecond, headers: {} },
        { topic: log.topic, key: ended, value: endedAfter, headers: {} },
        { topic: log.topic, key: late, value: lateEvent, headers: {} },
      ]);
    } finally {
      await bus.close();
    }

    const child = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env["PATH"] ?? "", MH_KAFKA_BROKERS: KAFKA_BROKERS, MH_KAFKA_TOPIC: log.topic, MH_USAGE_GROUP: `usage-${randomBytes(4).toString("hex")}`, MH_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const lines: Array<Record<string, unknown>> = [];
    let buffered = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      buffered += chunk;
      const parts = buffered.split("\n");
      buffered = parts.pop() ?? "";
      for (const p of parts) lines.push(JSON.parse(p) as Record<string, unknown>);
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    try {
      const seen = (sessionId: string, seq: number): boolean => lines.some((l) => l["session_id"] === sessionId && l["seq"] === seq);
      const done = (): boolean => seen(late, 4) && seen(ended, 4) && seen(sessionId, 6);
      await eventually(() => Promise.resolve(done() ? true : undefined), "every session's last line", 30_000);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);

    const mine = lines.filter((l) => l["session_id"] === sessionId);
    expect(mine.find((l) => l["seq"] === 5)).toEqual({
      session_id: sessionId,
      seq: 5,
      model_requests: 2,
      input_tokens: 150,
      output_tokens: 30,
      cache_read_input_tokens: 10,
      tool_calls: 1,
      status: "idle",
    });
    // One line per change, in seq order: the redelivered event changed nothing.
    expect(mine.map((l) => l["seq"])).toEqual([1, 2, 3, 4, 5, 6]);
    expect(mine.at(-1)).toMatchObject({ seq: 6, model_requests: 2, status: "running" });
    // The ended session's figures are final at its termination; its redelivered request is not
    // counted again (seq 4, a record no log would write after a termination, starts afresh).
    expect(lines.filter((l) => l["session_id"] === ended).map((l) => [l["seq"], l["model_requests"]])).toEqual([[1, 0], [2, 1], [3, 1], [4, 1]]);
    expect(lines).toContainEqual({ gap: { session_id: late, from: 1, to: 3 } });
    expect(lines.filter((l) => l["session_id"] === late).at(-1)).toMatchObject({ seq: 4, input_tokens: 7, output_tokens: 3 });
  }, 60_000);
});
