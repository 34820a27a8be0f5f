/**
 * `mh demo`: the session log on the embedded default (PGlite in this process, the in-process bus
 * where Kafka would be), driven through its real gRPC API. A scripted harness plays one turn of
 * an agent fixing a bug; a watcher prints the log live; then a second harness takes the lease
 * and the first one is fenced off; finally a rewind reads a slice back.
 */
import { createMemoryBus } from "@metaharness/event-bus";
import { newEvent } from "@metaharness/events";
import { MhError } from "@metaharness/errors";
import { SessionLogClient, SessionLogService, StopReasonType, type Event } from "@metaharness/proto";
import { createClient, createLogger, promisify } from "@metaharness/service-kit";
import { loadConfig, startSessionLog } from "@metaharness/session-log";
import { formatEvent } from "../render.js";

const text = (t: string) => [{ block: { $case: "text" as const, value: { text: t } } }];
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function scriptedTurn(): Event[] {
  const start = newEvent("span.model_request_start", { model: "offline" });
  const test1 = newEvent("agent.tool_use", { name: "bash", input: { command: "pytest -q" }, evaluatedPermission: 1, sandboxId: "" });
  const edit = newEvent("agent.tool_use", {
    name: "edit",
    input: { path: "calc.py", old_string: "return a - b", new_string: "return a + b" },
    evaluatedPermission: 1,
    sandboxId: "",
  });
  const test2 = newEvent("agent.tool_use", { name: "bash", input: { command: "pytest -q" }, evaluatedPermission: 1, sandboxId: "" });
  return [
    newEvent("session.status_running", {}),
    start,
    newEvent("agent.thinking", { thinking: "Run the tests first.", signature: "" }),
    newEvent("sandbox.provisioned", { sandboxId: "sbx_demo", driver: "bubblewrap", durationMs: 31 }),
    test1,
    newEvent("agent.tool_result", { toolUseId: test1.id, content: text("F.. 1 failed: test_add (2 + 2 == 0)"), isError: false }),
    edit,
    newEvent("agent.tool_result", { toolUseId: edit.id, content: text("calc.py: 1 replacement"), isError: false }),
    test2,
    newEvent("agent.tool_result", { toolUseId: test2.id, content: text("... 3 passed"), isError: false }),
    newEvent("agent.message", { content: text("add() subtracted; it adds now and all 3 tests pass.") }),
    newEvent("span.model_request_end", {
      modelRequestStartId: start.id,
      isError: false,
      modelUsage: { inputTokens: 1830, outputTokens: 212, cacheCreationInputTokens: 0, cacheReadInputTokens: 1504 },
      stopReason: "end_turn",
    }),
    newEvent("session.status_idle", { stopReason: { type: StopReasonType.STOP_REASON_TYPE_END_TURN, eventIds: [] } }),
  ];
}

export async function demo(out: (line: string) => void, databaseUrl = "pglite:memory"): Promise<number> {
  const bus = createMemoryBus();
  const config = loadConfig({ MH_DATABASE_URL: databaseUrl, MH_GRPC_PORT: "0", MH_LOG_LEVEL: "error", MH_RELAY_POLL_MS: "50" });
  const log = await startSessionLog(config, createLogger({ service: "session-log", level: "error" }), { bus });
  const raw = createClient(SessionLogClient, `127.0.0.1:${log.port}`);
  const client = promisify(raw, SessionLogService);
  let published = 0;
  await bus.ensureTopics([{ topic: config.topic, partitions: config.topicPartitions }]);
  const consumer = await bus.subscribe({
    groupId: "demo",
    topics: [config.topic],
    fromBeginning: true,
    handler: () => {
      published += 1;
      return Promise.resolve();
    },
  });
  try {
    out(`session log: gRPC 127.0.0.1:${log.port}, store ${databaseUrl}, in-process bus for ${config.topic}`);
    const { session } = await client.createSession({ sessionId: "", metadata: undefined });
    const sessionId = session!.sessionId;
    out(`session ${sessionId}\n`);

    const watcher = new AbortController();
    const watching = (async () => {
      for await (const msg of client.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: false }, { signal: watcher.signal })) {
        if (msg.event) out(formatEvent(msg.event));
      }
    })().catch((err: unknown) => {
      if (!(err instanceof MhError && err.code === "CANCELLED")) throw err;
    });

    await client.emitEvent({ sessionId, event: newEvent("user.message", { content: text("The add test fails. Fix it.") }) });
    const a = (await client.acquireLease({ sessionId, holder: "harness-a", ttlMs: 5000 })).lease!;
    for (const event of scriptedTurn()) {
      await pause(120);
      await client.emitEvent({ sessionId, event, leaseEpoch: a.epoch });
    }
    await pause(150);

    out("\nharness-a is presumed dead; harness-b takes the session over:");
    await client.releaseLease({ sessionId, holder: "harness-a", epoch: a.epoch });
    const b = (await client.acquireLease({ sessionId, holder: "harness-b", ttlMs: 5000 })).lease!;
    try {
      await client.emitEvent({ sessionId, event: newEvent("agent.message", { content: text("late") }), leaseEpoch: a.epoch });
    } catch (err) {
      out(`  harness-a's late write is refused: ${MhError.from(err).code}: ${MhError.from(err).message}`);
    }
    const { session: now } = await client.getSession({ sessionId });
    out(`  harness-b holds epoch ${b.epoch}; it resumes after seq ${now!.lastSeq}`);

    out("\nrewind: the 3 events before the final message");
    const final = await client.getEvents({ sessionId, position: { $case: "afterSeq", value: 0 }, limit: 1, types: ["agent.message"] });
    const slice = await client.getEvents({ sessionId, position: { $case: "beforeSeq", value: final.events[0]!.seq }, limit: 3, types: [] });
    for (const e of slice.events) out(formatEvent(e));

    watcher.abort();
    await watching;
    await pause(200);
    out(`\n${now!.lastSeq} events in the log, ${published} published on the bus (Kafka in a deployment).`);
    return 0;
  } finally {
    await consumer.close();
    raw.close();
    await log.stop();
    await bus.close();
  }
}
