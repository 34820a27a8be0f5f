/**
 * A caller that goes away (an interrupted turn cancels its Execute) kills the call's processes
 * in the sandbox: nothing it started goes on running, and a repeat of the call id gets the
 * cancelled outcome instead of a second run.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../support/eventually.js";
import { provision, run, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";

let broker: TestBroker;
let sandboxId: string;
const sessionId = "sesn_cancel";
/** Marks that it started, then that it ran to the end: the second must never appear. */
const COMMAND = "touch started; sleep 2; touch late";

beforeAll(async () => {
  broker = await startTestBroker();
  sandboxId = await provision(broker.client, sessionId, {});
});
afterAll(async () => {
  await broker?.stop();
});

describe("cancelling Execute", () => {
  it("kills the running command and records the call as cancelled", async () => {
    const controller = new AbortController();
    const call = broker.client.execute(
      { eventSeq: 0, sandboxId, sessionId, name: "bash", input: { command: COMMAND }, callId: "cancel-me", timeoutMs: 0 },
      { signal: controller.signal },
    );
    // Cancelled while it runs (its first mark is there), not before it starts.
    await eventually(async () => {
      const look = await run(broker.client, sandboxId, "bash", { command: "test -e started && echo yes || echo no" }, { sessionId });
      return look.output.trim() === "yes" ? true : undefined;
    }, "the command to start");
    controller.abort();
    await expect(call).rejects.toMatchObject({ code: "CANCELLED" });
    // A fixed wait on purpose: past the cancelled command's `sleep 2`, proving it never touches `late`.
    await new Promise((r) => setTimeout(r, 2500));
    const check = await run(broker.client, sandboxId, "bash", { command: "ls late 2>&1 || echo absent" });
    expect(check.output).toContain("absent");
    const repeat = await broker.client.execute({ eventSeq: 0,
      sandboxId,
      sessionId,
      name: "bash",
      input: { command: COMMAND },
      callId: "cancel-me",
      timeoutMs: 0,
    });
    expect(repeat.replayed).toBe(true);
    expect(repeat.isError).toBe(true);
    expect(repeat.output).toContain("cancelled");
  });
});
