/**
 * The external-process harness against real services: sessions whose brain is another program,
 * driven over line-delimited JSON, while the harness keeps the log and the lease. The example echo
 * agent completes turns (and a tool round trip); agents that crash, print garbage or go silent end
 * the turn with session.error and idle, never a hung session, and their processes are killed, as
 * they are on an interrupt or when the harness lets the session go.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { StopReasonType, WakeOutcome, type Event, type SessionMetadata } from "@metaharness/proto";
import { idleReason, startBrain, types, type Brain } from "../../support/harness.js";
import { textOf, userMessage } from "../../support/events.js";
import { eventually } from "../../support/eventually.js";

const ECHO_AGENT = fileURLToPath(new URL("./examples/echo-agent.js", import.meta.resolve("@metaharness/harness")));
const dir = mkdtempSync(join(tmpdir(), "mh-external-"));

/** Small misbehaving agents; each records its pid so the test can see it was killed. */
const AGENTS: Record<string, string> = {
  crash: `process.stdin.once("data", () => { process.stderr.write("boom: out of cheese\\n"); process.exit(3); });`,
  garbage: `process.stdin.once("data", () => process.stdout.write("this is not json\\n")); setInterval(() => {}, 1000);`,
  forbidden: `process.stdin.once("data", () => process.stdout.write(JSON.stringify({ type: "emit", event: { type: "agent.tool_use", name: "bash", input: {} } }) + "\\n"));
    setInterval(() => {}, 1000);`,
  huge: `process.stdin.once("data", () => process.stdout.write("x".repeat(3 * 1024 * 1024))); setInterval(() => {}, 1000);`,
  silent: `process.stdin.resume(); setInterval(() => {}, 1000);`,
  env: `require("readline").createInterface({ input: process.stdin }).on("line", (l) => {
    if (JSON.parse(l).type !== "events") return;
    const text = Object.keys(process.env).sort().join(",");
    process.stdout.write(JSON.stringify({ type: "emit", event: { type: "agent.message", content: [{ type: "text", text }] } }) + "\\n");
    process.stdout.write(JSON.stringify({ type: "idle" }) + "\\n");
  });`,
};

const pidFile = (name: string): string => join(dir, `${name}.pid`);
const commands: Record<string, string[]> = { default: [process.execPath, ECHO_AGENT], missing: [join(dir, "no-such-agent")] };
for (const [name, body] of Object.entries(AGENTS)) {
  const file = join(dir, `${name}.cjs`);
  writeFileSync(file, `require("fs").writeFileSync(${JSON.stringify(pidFile(name))}, String(process.pid));\n${body}\n`);
  commands[name] = [process.execPath, file];
}

let brain: Brain;
beforeAll(async () => {
  process.env["MH_EXTERNAL_AGENTS"] = JSON.stringify(commands);
  process.env["ANTHROPIC_API_KEY"] = "sk-ant-must-not-leak";
  brain = await startBrain({ scenarios: [] });
});
afterAll(async () => {
  await brain?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function createSession(agent?: string, b: Brain = brain): Promise<string> {
  const metadata: SessionMetadata = { workspaceFork: undefined,
    agentId: "agent_test",
    agentVersion: 1,
    tenant: "",
    labels: agent === undefined ? {} : { "mh.external.agent": agent },
    harness: "external-process",
    environmentId: "",
    vaultIds: [],
    title: "",
    repositories: [],
    agent: { model: "", system: "", tools: [], tokenBudget: 0, contextStrategy: "", contextWindowTokens: 0, maxTokens: 0, explicitTools: false, listPrice: undefined, budget: undefined },
    environment: undefined,
  };
  const { session } = await b.log.client.createSession({ sessionId: "", metadata });
  return session!.sessionId;
}

async function say(sessionId: string, text: string, b: Brain = brain): Promise<void> {
  await b.log.client.emitEvent({ sessionId, event: userMessage(text) });
  await b.rpc.wake({ sessionId });
}

const ended = (events: Event[]): boolean => events[events.length - 1]?.type === "session.status_idle";
const replies = (events: Event[]): string[] => events.filter((e) => e.type === "agent.message").map(textOf);

function errorOf(events: Event[]): { type: string; message: string } | undefined {
  const e = events.find((x) => x.payload?.$case === "sessionError");
  return e?.payload?.$case === "sessionError" ? e.payload.value.error : undefined;
}

const pidOf = (name: string): number => Number(readFileSync(pidFile(name), "utf8"));

/** Whether a process is still alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => boolean, timeoutMs = 15_000): Promise<void> {
  await eventually(() => Promise.resolve(check() ? true : undefined), "the condition", timeoutMs);
}

describe("the external-process harness", () => {
  it("runs turns with the example agent, recorded in the log like a model's", async () => {
    const sessionId = await createSession();
    await say(sessionId, "hello there");
    const first = await brain.waitFor(sessionId, ended);
    expect(types(first)).toEqual([
      "user.message",
      "session.status_running",
      "span.model_request_start",
      "agent.message",
      "span.model_request_end",
      "session.usage",
      "session.status_idle",
    ]);
    expect(replies(first)).toEqual(["echo: hello there"]);
    expect(idleReason(first)).toBe(StopReasonType.STOP_REASON_TYPE_END_TURN);
    const span = first.find((e) => e.payload?.$case === "spanModelRequestEnd")?.payload;
    expect(span?.$case === "spanModelRequestEnd" && span.value.modelUsage?.outputTokens).toBeGreaterThan(0);

    // A second turn: a fresh process is sent the whole history and answers only what is new.
    await say(sessionId, "and again");
    const second = await brain.waitFor(sessionId, (e) => ended(e) && replies(e).length === 2);
    expect(replies(second)).toEqual(["echo: hello there", "echo: and again"]);
  });

  it("routes the agent's tool calls through the harness, recorded as tool_use and tool_result", async () => {
    const sessionId = await createSession();
    await say(sessionId, "!bash echo hi");
    const events = await brain.waitFor(sessionId, ended);
    const use = events.find((e) => e.type === "agent.tool_use");
    expect(use?.payload?.$case === "agentToolUse" && use.payload.value).toMatchObject({ name: "bash", input: { command: "echo hi" } });
    const result = events.find((e) => e.type === "agent.tool_result");
    expect(result?.payload?.$case === "agentToolResult" && result.payload.value.toolUseId).toBe(use?.id);
    // No sandbox broker here: the agent gets the error as its tool result and reports it.
    expect(replies(events)).toEqual(["echo: !bash echo hi -> error: no sandbox broker is configured for this harness"]);
    expect(idleReason(events)).toBe(StopReasonType.STOP_REASON_TYPE_END_TURN);
  });

  it("starts the agent without the harness's environment (no credentials)", async () => {
    const sessionId = await createSession("env");
    await say(sessionId, "what do you see?");
    const [seen = ""] = replies(await brain.waitFor(sessionId, ended));
    expect(seen.split(",")).toContain("MH_SESSION_ID");
    expect(seen).not.toContain("ANTHROPIC_API_KEY");
    expect(seen).not.toContain("MH_EXTERNAL_AGENTS");
  });

  it("ends the turn with session.error and idle when the agent crashes", async () => {
    const sessionId = await createSession("crash");
    await say(sessionId, "hi");
    const events = await brain.waitFor(sessionId, ended);
    expect(errorOf(events)?.type).toBe("external_agent_exited");
    expect(errorOf(events)?.message).toMatch(/code 3.*boom: out of cheese/);
    expect(idleReason(events)).toBe(StopReasonType.STOP_REASON_TYPE_RETRIES_EXHAUSTED);
    expect(types(events).slice(-3)).toEqual(["span.model_request_end", "session.error", "session.status_idle"]);
  });

  it.each([
    ["garbage", "not a JSON line"],
    ["forbidden", 'emit.event.type "agent.tool_use" cannot be emitted'],
    ["huge", "a line longer than 1048576 bytes"],
  ])("ends the turn with session.error and idle when the agent prints %s, and kills it", async (agent, why) => {
    const sessionId = await createSession(agent);
    await say(sessionId, "hi");
    const events = await brain.waitFor(sessionId, ended);
    expect(errorOf(events)?.type).toBe("external_agent_protocol");
    expect(errorOf(events)?.message).toContain(why);
    expect(idleReason(events)).toBe(StopReasonType.STOP_REASON_TYPE_RETRIES_EXHAUSTED);
    await until(() => !alive(pidOf(agent)));
  });

  it.each([
    ["missing", "external_agent_spawn", "could not be started"],
    ["nobody", "external_agent_config", 'no external agent named "nobody"'],
  ])("ends the turn with session.error when agent %s cannot run", async (agent, type, why) => {
    const sessionId = await createSession(agent);
    await say(sessionId, "hi");
    const events = await brain.waitFor(sessionId, ended);
    expect(errorOf(events)?.type).toBe(type);
    expect(errorOf(events)?.message).toContain(why);
    expect(idleReason(events)).toBe(StopReasonType.STOP_REASON_TYPE_RETRIES_EXHAUSTED);
  });

  it("ends the turn with session.error when the operator's agent list is broken", async () => {
    const good = process.env["MH_EXTERNAL_AGENTS"];
    process.env["MH_EXTERNAL_AGENTS"] = "{not json";
    try {
      const sessionId = await createSession();
      await say(sessionId, "hi");
      const events = await brain.waitFor(sessionId, ended);
      expect(errorOf(events)?.type).toBe("external_agent_config");
      expect(errorOf(events)?.message).toContain("MH_EXTERNAL_AGENTS");
    } finally {
      process.env["MH_EXTERNAL_AGENTS"] = good;
    }
  });

  it("ends the turn when the agent stays silent too long", async () => {
    // Only here: the tests below stop a silent agent on purpose, and on a busy machine 1.5 s of
    // silence could run out before they do.
    process.env["MH_EXTERNAL_SILENCE_TIMEOUT_MS"] = "1500";
    try {
      const sessionId = await createSession("silent");
      await say(sessionId, "anyone there?");
      const events = await brain.waitFor(sessionId, ended);
      expect(errorOf(events)?.type).toBe("external_agent_timeout");
      await until(() => !alive(pidOf("silent")));
    } finally {
      delete process.env["MH_EXTERNAL_SILENCE_TIMEOUT_MS"];
    }
  });

  it("kills the agent on user.interrupt and goes idle as interrupted", async () => {
    const sessionId = await createSession("silent");
    rmSync(pidFile("silent"), { force: true });
    await say(sessionId, "wait for it");
    await until(() => existsSync(pidFile("silent")));
    await brain.log.client.emitEvent({ sessionId, event: newEvent("user.interrupt", {}) });
    const events = await brain.waitFor(sessionId, ended);
    expect(idleReason(events)).toBe(StopReasonType.STOP_REASON_TYPE_INTERRUPTED);
    expect(events.some((e) => e.type === "session.error")).toBe(false);
    await until(() => !alive(pidOf("silent")));
  });

  it("kills the agent when the harness lets the session go", async () => {
    const other = await brain.addHarness();
    const sessionId = await createSession("silent");
    rmSync(pidFile("silent"), { force: true });
    // Held in `other`'s name before the input lands: else the first instance's sweeper (every
    // 500 ms) may find the session waiting and drive it, and stopping `other` would stop nothing.
    await brain.log.client.acquireLease({ sessionId, holder: other.supervisor.instanceId, ttlMs: 30_000 });
    await brain.log.client.emitEvent({ sessionId, event: userMessage("hold on") });
    expect((await other.supervisor.wake(sessionId)).outcome).toBe(WakeOutcome.WAKE_OUTCOME_STARTED);
    await until(() => existsSync(pidFile("silent")));
    const pid = pidOf("silent");
    expect(alive(pid)).toBe(true);
    await other.stop();
    expect(alive(pid)).toBe(false);
  });
});

describe("the external-process harness with real hands", () => {
  let withBroker: Brain;
  beforeAll(async () => {
    withBroker = await startBrain({ scenarios: [], broker: true });
  });
  afterAll(async () => {
    await withBroker?.stop();
  });

  it("runs the agent's tool calls in a sandbox the broker provisions", async () => {
    const sessionId = await createSession(undefined, withBroker);
    await say(sessionId, "!bash echo hello from $(basename $PWD)", withBroker);
    const events = await withBroker.waitFor(sessionId, ended);
    expect(types(events)).toContain("sandbox.provisioned");
    const result = events.find((e) => e.type === "agent.tool_result");
    expect(result?.payload?.$case === "agentToolResult" && result.payload.value.isError).toBe(false);
    expect(replies(events)).toEqual(["echo: !bash echo hello from $(basename $PWD) -> hello from workspace"]);
  });
});
