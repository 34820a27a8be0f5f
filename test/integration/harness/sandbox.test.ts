/**
 * The harness's hands through the real sandbox broker (bubblewrap): the sandbox is provisioned
 * lazily, at the first sandbox tool call, after the first model call; a sandbox killed mid-session
 * is a tool error the model sees, and the next call gets a fresh sandbox; a command's exit status
 * is kept on its result.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { defineScenario } from "@metaharness/offline-model";
import { StopReasonType, type Event } from "@metaharness/proto";
import { idleReason, startBrain, type Brain } from "../../support/harness.js";
import { textOf, userMessage } from "../../support/events.js";
import { eventually } from "../../support/eventually.js";
import { run as runIn } from "../../support/sandbox-broker.js";

const bash = (command: string) => ({ toolUses: [{ name: "bash", input: { command } }] });

const scenarios = [
  defineScenario("files", [
    bash("echo 42 > answer.txt"),
    bash("cat answer.txt"),
    (ctx) => ({ text: `answer is ${ctx.lastToolResult?.content.trim() ?? "?"}` }),
  ]),
  // Leaves a mark once it runs, so the test interrupts a command that is running, not one on its way.
  defineScenario("stuck", [bash("touch running; sleep 30; echo woke")]),
  defineScenario("exit", [bash("echo failing >&2; exit 3"), { text: "it failed" }]),
  defineScenario("hands", [
    bash("echo one > where.txt"),
    { toolUses: [{ name: "provision", input: {} }] },
    (ctx) => {
      const id = /sbx_[\w-]+/.exec(ctx.lastToolResult?.content ?? "")?.[0] ?? "missing";
      return { toolUses: [{ name: "bash", input: { command: "cat where.txt 2>&1 || echo not here", sandbox_id: id } }] };
    },
    bash("cat where.txt"),
    (ctx) => ({ text: `${ctx.toolResults.map((r) => r.content.trim()).join(" | ")}` }),
  ]),
  defineScenario("lost", [
    bash("echo alive"),
    // Slow to answer: the test kills the sandbox meanwhile.
    { ...bash("echo second"), ttftMs: 1500 },
    (ctx) => (ctx.lastToolResult?.isError === true ? bash("echo recovered") : { text: "no error?" }),
    (ctx) => ({ text: `done: ${ctx.lastToolResult?.content.trim() ?? "?"}` }),
  ]),
];

let brain: Brain;
beforeAll(async () => {
  brain = await startBrain({ scenarios, broker: true });
});
afterAll(async () => {
  await brain?.stop();
});

const ended = (e: Event[]): boolean => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN;
const seqOf = (events: Event[], type: string): number => events.find((e) => e.type === type)?.seq ?? -1;

async function run(text: string): Promise<string> {
  const sessionId = await brain.createSession();
  await brain.log.client.emitEvent({ sessionId, event: userMessage(text) });
  await brain.rpc.wake({ sessionId });
  return sessionId;
}

describe("sandbox tools", () => {
  it("keep how a command ended on its result: the exit status", async () => {
    const sessionId = await run("[scenario:exit] fail");
    const events = await brain.waitFor(sessionId, ended);
    const result = events.find((e) => e.payload?.$case === "agentToolResult")?.payload;
    expect(result?.$case === "agentToolResult" ? [result.value.isError, result.value.exitCode] : undefined).toEqual([true, 3]);
  });

  it("provision lazily after the first model call and run in one sandbox", async () => {
    const sessionId = await run("[scenario:files] write and read");
    const events = await brain.waitFor(sessionId, ended);
    expect(seqOf(events, "span.model_request_start")).toBeLessThan(seqOf(events, "sandbox.provisioned"));
    expect(seqOf(events, "sandbox.provisioned")).toBeLessThan(seqOf(events, "agent.tool_result"));
    expect(events.filter((e) => e.type === "sandbox.provisioned")).toHaveLength(1);
    expect(textOf(events.filter((e) => e.type === "agent.message").pop())).toBe("answer is 42");
  });

  it("report a killed sandbox to the model as a tool error, then use a fresh one", async () => {
    const sessionId = await run("[scenario:lost] survive");
    const first = await brain.waitFor(sessionId, (e) => e.some((x) => x.type === "agent.tool_result"));
    const provisioned = first.find((e) => e.payload?.$case === "sandboxProvisioned")!;
    const sandboxId = provisioned.payload?.$case === "sandboxProvisioned" ? provisioned.payload.value.sandboxId : "";
    const pid = brain.broker!.handle.pidOf(sandboxId);
    expect(pid).toBeGreaterThan(0);
    process.kill(pid!, "SIGKILL");

    const events = await brain.waitFor(sessionId, ended, 30_000);
    const results = events.filter((e) => e.type === "agent.tool_result");
    const lost = results[1]!.payload;
    expect(lost?.$case === "agentToolResult" && lost.value.isError).toBe(true);
    expect(textOf(results[1]) || JSON.stringify(lost)).toMatch(/lost/);
    expect(events.some((e) => e.type === "sandbox.lost")).toBe(true);
    expect(events.filter((e) => e.type === "sandbox.provisioned")).toHaveLength(2);
    expect(textOf(events.filter((e) => e.type === "agent.message").pop())).toBe("done: recovered");
  });

  it("are cancelled by user.interrupt while they run: the session goes idle at once", async () => {
    const sessionId = await run("[scenario:stuck] wait");
    const started = await brain.waitFor(sessionId, (e) => e.some((x) => x.type === "sandbox.provisioned"));
    const provisioned = started.find((e) => e.payload?.$case === "sandboxProvisioned")?.payload;
    const sandboxId = provisioned?.$case === "sandboxProvisioned" ? provisioned.value.sandboxId : "";
    // The command runs: its mark is there (looked for by a call of its own beside it).
    await eventually(async () => {
      const look = await runIn(brain.broker!.client, sandboxId, "bash", { command: "test -e running && echo yes || echo no" }, { sessionId });
      return look.output.trim() === "yes" ? true : undefined;
    }, "the stuck command to start in its sandbox");
    const sent = Date.now();
    await brain.log.client.emitEvent({ sessionId, event: newEvent("user.interrupt", {}) });
    const events = await brain.waitFor(sessionId, (e) => idleReason(e) === StopReasonType.STOP_REASON_TYPE_INTERRUPTED, 10_000);
    // At once: the command sleeps 30 s; 10 s is a busy machine's margin.
    expect(Date.now() - sent).toBeLessThan(10_000);
    const result = events.find((e) => e.type === "agent.tool_result");
    expect(result?.payload?.$case === "agentToolResult" && result.payload.value.isError).toBe(true);
    expect(textOf(result)).toMatch(/interrupted/);
  });

  it("let the model provision a second sandbox and name which one a call goes to", async () => {
    const sessionId = await run("[scenario:hands] two hands");
    const events = await brain.waitFor(sessionId, ended, 30_000);
    expect(events.filter((e) => e.type === "sandbox.provisioned")).toHaveLength(2);
    const answer = textOf(events.filter((e) => e.type === "agent.message").pop());
    const [, provisioned, second, first] = answer.split(" | ");
    expect(provisioned).toMatch(/^provisioned sandbox_id: sbx_/);
    expect(second).toContain("not here");
    expect(first).toBe("one");
  });
});
