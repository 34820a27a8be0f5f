/**
 * A self-hosted environment end to end, with the official SDK on both sides: a user's
 * EnvironmentWorker (the SDK's own, with its default betaAgentToolset20260401 tools) polls the
 * gateway with an environment key and becomes the hands of the environment's sessions. The
 * agent's bash and read calls run in the worker's workdir ("its machine", never a sandbox of
 * ours), the results flow back as user.tool_result and the agent answers. A worker killed with
 * -9 mid-call loses its lease, the item goes back to the queue and a second worker finishes the
 * session. An interrupt ends the wait at once; the worker's late answer is refused and changes nothing.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnWorker, startWorker, type RunningWorker } from "../../support/environment-worker.js";
import { apiFailure, startStack, type Stack } from "../../support/gateway.js";
import { eventually } from "../../support/eventually.js";

type SessionEvent = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

const scenarios = [
  defineScenario("worker-tools", [
    { text: "Let me look on your machine.", toolUses: [{ name: "bash", input: { command: "cat notes.txt && echo made-by-the-agent > made.txt" } }] },
    { toolUses: [{ name: "read", input: { file_path: "made.txt" } }] },
    (ctx) => ({ text: `Your machine says: ${ctx.toolResults.map((r) => r.content.trim()).join(" / ")}` }),
  ]),
  // The first run marks the workdir and hangs; a second run (another worker) finds the mark.
  defineScenario("worker-dies", [
    { toolUses: [{ name: "bash", input: { command: "if [ -f started ]; then echo finished by the second worker; else touch started; sleep 30; fi" } }] },
    (ctx) => ({ text: `done: ${ctx.lastToolResult?.content.trim() ?? "?"}` }),
  ]),
  defineScenario("worker-slow", [
    { toolUses: [{ name: "bash", input: { command: "touch slow-started; sleep 2; echo too late" } }] },
    { text: "unreachable" },
  ]),
];

const LEASE_TTL_S = 10;

let stack: Stack;
let sdk: Anthropic;
let workdir: string;
let environmentId: string;
let environmentKey: string;

beforeAll(async () => {
  // A 10 s lease: the SDK's worker beats every half of it and gives each beat that long, so a
  // busy machine's late beat does not lapse a live worker's lease (at 2 s it could: 1 s per beat);
  // the worker killed below is still dropped within seconds.
  stack = await startStack({ scenarios, env: { MH_GATEWAY_WORK_LEASE_TTL_SECONDS: String(LEASE_TTL_S) } });
  sdk = stack.client().sdk;
  workdir = await mkdtemp(join(tmpdir(), "mh-worker-machine-"));
  environmentId = (await sdk.beta.environments.create({ name: "my laptop", config: { type: "self_hosted" } })).id;
  environmentKey = (await sdk.post<{ key: string }>(`/v1/environments/${environmentId}/keys`)).key;
});
afterAll(async () => {
  await stack?.stop();
  if (workdir !== undefined) await rm(workdir, { recursive: true, force: true });
});

async function sessionFor(scenario: string, text = "go"): Promise<string> {
  const agent = await sdk.beta.agents.create({
    name: scenario,
    model: "claude-sonnet-5-5",
    system: `[scenario:${scenario}]`,
    tools: [{ type: "agent_toolset_20260401" }],
  });
  const session = await sdk.beta.sessions.create({
    agent: agent.id,
    environment_id: environmentId,
    initial_events: [{ type: "user.message", content: [{ type: "text", text }] }],
  });
  return session.id;
}

async function events(sessionId: string): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for await (const e of sdk.beta.sessions.events.list(sessionId)) out.push(e);
  return out;
}

/** The session's events once its turn ended (an idle that is not requires_action). */
function turnEnded(sessionId: string, timeoutMs = 30_000): Promise<SessionEvent[]> {
  return eventually(
    async () => {
      const all = await events(sessionId);
      const last = all.at(-1);
      return last?.type === "session.status_idle" && last.stop_reason.type !== "requires_action" ? all : undefined;
    },
    `the turn of ${sessionId} to end`,
    timeoutMs,
  );
}

const text = (e: SessionEvent): string =>
  "content" in e && Array.isArray(e.content) ? e.content.map((c) => ("text" in c ? c.text : "")).join("") : "";

describe("a self-hosted environment", () => {
  let worker: RunningWorker | undefined;
  afterAll(async () => {
    await worker?.stop();
  });

  it("runs the agent's tools on the worker's machine and gets its answers back", async () => {
    await writeFile(join(workdir, "notes.txt"), "the answer is 42\n");
    const sessionId = await sessionFor("worker-tools");
    worker = startWorker({ baseURL: stack.gateway.url, environmentId, environmentKey, workdir });
    const all = await turnEnded(sessionId);

    const uses = all.filter((e) => e.type === "agent.tool_use");
    expect(uses.map((e) => e.type === "agent.tool_use" && e.name)).toEqual(["bash", "read"]);
    const results = all.filter((e) => e.type === "user.tool_result");
    expect(results.map((e) => e.type === "user.tool_result" && [e.tool_use_id, e.is_error])).toEqual(uses.map((u) => [u.id, false]));
    expect(text(results[0]!)).toContain("the answer is 42");
    expect(text(results[1]!)).toContain("made-by-the-agent");
    // Nothing ran in a sandbox of ours: no agent.tool_result, no sandbox events.
    expect(all.some((e) => e.type === "agent.tool_result" || e.type.startsWith("sandbox."))).toBe(false);
    expect(text(all.filter((e) => e.type === "agent.message").at(-1)!)).toContain("Your machine says: the answer is 42");
    expect(await readFile(join(workdir, "made.txt"), "utf8")).toBe("made-by-the-agent\n");
    // The whole time the worker held it, the session was running; it ended its turn once.
    expect(all.filter((e) => e.type === "session.status_idle")).toHaveLength(1);

    // Its turn over, the worker lets the item go (maxIdleMs) and the queue is empty again.
    const key = stack.client(environmentKey).sdk;
    const item = await eventually(async () => {
      for await (const w of key.beta.environments.work.list(environmentId)) if (w.data.id === sessionId && w.state === "stopped") return w;
      return undefined;
    }, "the work item to stop", 30_000);
    expect(item).toMatchObject({ type: "work", environment_id: environmentId, data: { type: "session", id: sessionId }, secret: null });
    expect(item.acknowledged_at).not.toBeNull();
    expect(item.started_at).not.toBeNull();
    const stats = await sdk.beta.environments.work.stats(environmentId);
    expect(stats).toMatchObject({ type: "work_queue_stats", depth: 0, pending: 0, oldest_queued_at: null });
    expect(stats.workers_polling).toBeGreaterThanOrEqual(1);
  });

  it("ends the wait at once on an interrupt; the worker's late answer is refused and changes nothing", async () => {
    const sessionId = await sessionFor("worker-slow");
    await eventually(() => Promise.resolve(existsSync(join(workdir, "slow-started")) ? true : undefined), "the worker to start the call");
    await sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.interrupt" }] });
    const all = await turnEnded(sessionId, 30_000);
    const idle = all.at(-1);
    // The SDK's stop reason for a turn the user interrupted: control is back with the user.
    expect(idle?.type === "session.status_idle" && idle.stop_reason.type).toBe("end_turn");
    const use = all.find((e) => e.type === "agent.tool_use")!;
    const answer = all.find((e) => e.type === "agent.tool_result");
    expect(answer?.type === "agent.tool_result" && [answer.tool_use_id, answer.is_error]).toEqual([use.id, true]);
    // The worker finishes the call 2 s in and sends its result: the call was answered (by the
    // harness), so the answer is refused (the SDK's worker logs it and goes on). So is any later one.
    // A fixed wait on purpose: past the worker's 2 s, so its refused late result has been sent (nothing to observe).
    await new Promise((r) => setTimeout(r, 3000));
    const late = await apiFailure(
      sdk.beta.sessions.events.send(sessionId, {
        events: [{ type: "user.tool_result", tool_use_id: use.id, content: [{ type: "text", text: "later still" }] }],
      }),
    );
    expect([late.status, late.apiMessage]).toEqual([400, expect.stringMatching(/events\[0\]\.tool_use_id: .*already answered/)]);
    const later = await events(sessionId);
    expect(later.filter((e) => e.type === "user.tool_result")).toEqual([]);
    expect(later.length).toBe(all.length);
  });
});

describe("a worker that dies", () => {
  it("loses its lease; the item is queued again and another worker completes the session", async () => {
    const machine = await mkdtemp(join(tmpdir(), "mh-worker-machine-"));
    const first = spawnWorker({ baseURL: stack.gateway.url, environmentId, environmentKey, workdir: machine });
    let second: RunningWorker | undefined;
    try {
      const sessionId = await sessionFor("worker-dies");
      await eventually(() => Promise.resolve(existsSync(join(machine, "started")) ? true : undefined), "the first worker to start the call", 20_000);
      await first.kill();
      second = startWorker({ baseURL: stack.gateway.url, environmentId, environmentKey, workdir: machine });
      // The dead worker's lease lapses first (LEASE_TTL_S), then the second one takes the item.
      const all = await turnEnded(sessionId, LEASE_TTL_S * 1000 + 45_000);
      const results = all.filter((e) => e.type === "user.tool_result");
      expect(results.map(text)).toEqual(["finished by the second worker"]);
      expect(text(all.filter((e) => e.type === "agent.message").at(-1)!)).toBe("done: finished by the second worker");
      // The same item, handed out again after its lease lapsed.
      const key = stack.client(environmentKey).sdk;
      const items = [];
      for await (const w of key.beta.environments.work.list(environmentId)) if (w.data.id === sessionId) items.push(w);
      expect(items).toHaveLength(1);
    } catch (err) {
      throw new Error(`${String(err)}\nfirst worker's output:\n${first.output()}`);
    } finally {
      await first.kill();
      await second?.stop();
      await rm(machine, { recursive: true, force: true });
    }
  }, 120_000);
});
