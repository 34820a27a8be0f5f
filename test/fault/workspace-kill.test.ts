/**
 * kill -9 of the sandbox broker mid-session with workspace snapshots on (MH_WORKSPACE_STORE): after
 * its restart the agent's next call finds the files its completed calls wrote (the call in flight
 * at the kill is the only one lost), in the same sandbox id, and its result tells the model the
 * sandbox was replaced.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario } from "@metaharness/offline-model";
import { startFaultStack, turnsMidTool, type FaultStack } from "../support/fault-stack.js";
import { recovery, wholeness } from "../support/whole-session.js";

let stack: FaultStack;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mh-ws-fault-"));
  stack = await startFaultStack({
    harnesses: 1,
    env: { "sandbox-broker": { MH_WORKSPACE_STORE: `dir:${dir}` } },
    scenarios: [
      defineScenario(
        "keep",
        [
          { toolUses: [{ name: "bash", input: { command: "mkdir -p notes && echo first > notes/kept.txt" } }] },
          // In flight when the broker is killed: its outcome is unknown, and it is the only loss. Long
          // enough that a loaded machine still kills the broker before it ends (with 3 s, a run at
          // load 35-70 saw the call finish first); bwrap's --die-with-parent ends it at the kill.
          { toolUses: [{ name: "bash", input: { command: "sleep 120; echo lost >> notes/kept.txt" } }] },
          { toolUses: [{ name: "bash", input: { command: "cat notes/kept.txt" } }] },
          { text: "done" },
        ],
        { onExhausted: "repeat-last" },
      ),
    ],
  });
});
afterAll(async () => {
  await stack?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe("kill -9 of the sandbox broker with workspace snapshots", () => {
  it("the agent's next call sees the files of its completed calls, and is told its sandbox was replaced", async () => {
    const before = await turnsMidTool(stack, 1, "[scenario:keep] go");
    await stack.broker.kill("SIGKILL");
    const killedAt = Date.now();
    await stack.broker.start();
    const { sessions } = await recovery(stack, before, killedAt, 90_000);
    const { problems } = await wholeness(sessions, stack.brokerDbUrl);
    expect(problems).toEqual([]);
    const [events] = [...sessions.values()];
    const results = events!.filter((e) => e.payload?.$case === "agentToolResult").map((e) => JSON.stringify(e.payload));
    const last = results.at(-1) ?? "";
    expect(last).toContain("was replaced: it was lost (broker restarted)");
    expect(last).toContain("its workspace was restored from snapshot");
    expect(last).toMatch(/first(\\n|")/);
    expect(last).not.toContain("lost\\n");
  }, 180_000);
});
