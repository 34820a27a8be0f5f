/**
 * The external-process harness does not end a turn after input its decision did not see. Its
 * idle, appended once it decided the turn was over, would otherwise land after a client's message
 * that came meanwhile: the session then reads as answered (awaiting no harness, so no sweep finds
 * it) with the message unanswered, and since the gateway sends no Wake while the lease has time
 * left (apps/gateway/src/sessions/append.ts) nothing would take it up. The message is made to come
 * in that window for certain: the loop's log client appends it through the real log just before it
 * sends the idle.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { LOOPS, LogPort, type LoopContext } from "@metaharness/harness";
import type { ModelClient } from "@metaharness/model-client";
import { SessionMetadata, type EmitEventsRequest } from "@metaharness/proto";
import { createLogger } from "@metaharness/service-kit/logging";
import { startTestLog, type LogClient, type TestLog } from "../../support/session-log.js";
import { textOf, userMessage } from "../../support/events.js";

const ECHO_AGENT = fileURLToPath(new URL("./examples/echo-agent.js", import.meta.resolve("@metaharness/harness")));
const AGENTS_ENV = "MH_EXTERNAL_AGENTS";

let log: TestLog;
let agentsBefore: string | undefined;
beforeAll(async () => {
  agentsBefore = process.env[AGENTS_ENV];
  process.env[AGENTS_ENV] = JSON.stringify({ default: [process.execPath, ECHO_AGENT] });
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
});
afterAll(async () => {
  if (agentsBefore === undefined) delete process.env[AGENTS_ENV];
  else process.env[AGENTS_ENV] = agentsBefore;
  await log?.stop();
});

const logger = createLogger({ service: "test", level: "silent" });

// The loop reads the harness and the agent's labels (none: the default agent); the rest as a new session has them.
const metadata = SessionMetadata.fromPartial({ agentId: "agent_test", agentVersion: 1, harness: "external-process" });

/** The log's client, but the first append that ends a turn is preceded by `before` (through the same log). */
function beforeFirstIdle(client: LogClient, before: () => Promise<unknown>): LogClient {
  let done = false;
  const emitEvents = async (req: EmitEventsRequest, opts?: Parameters<LogClient["emitEvents"]>[1]): ReturnType<LogClient["emitEvents"]> => {
    if (!done && req.events.some((e) => e.type === "session.status_idle")) {
      done = true;
      await before();
    }
    return client.emitEvents(req, opts);
  };
  return new Proxy(client, { get: (target, name, receiver) => (name === "emitEvents" ? emitEvents : (Reflect.get(target, name, receiver) as unknown)) });
}

describe("the external-process harness", () => {
  it("answers input that came while it ended the turn, instead of ending it after that input", async () => {
    const { session } = await log.client.createSession({ sessionId: "", metadata });
    const sessionId = session!.sessionId;
    await log.client.emitEvents({ sessionId, events: [userMessage("hello")] });
    const { lease, session: leased } = await log.client.acquireLease({ sessionId, holder: "test-harness", ttlMs: 60_000 });
    const client = beforeFirstIdle(log.client, () => log.client.emitEvents({ sessionId, events: [userMessage("meanwhile")] }));
    const loop = LOOPS.get("external-process")!;
    const ctx: LoopContext = {
      session: leased!,
      log: new LogPort(client, sessionId),
      leaseEpoch: lease!.epoch,
      // The external loop asks no model: its agent process is its brain.
      model: undefined as unknown as ModelClient,
      sandbox: undefined,
      logger,
      signal: new AbortController().signal,
    };
    // Returns once it has nothing left to do (its agent process stopped).
    await loop.run(ctx);
    const { events } = await log.client.getEvents({ sessionId, position: { $case: "afterSeq", value: 0 }, limit: 100, types: [] });
    const replies = events.filter((e) => e.type === "agent.message").map(textOf);
    expect(replies).toEqual(["echo: hello", "echo: meanwhile"]);
    expect(events[events.length - 1]?.type).toBe("session.status_idle");
  });
});
