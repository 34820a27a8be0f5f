/**
 * `mh run` and `mh sessions` as processes against an `mh dev` stack started in this process
 * (port 0, in memory): streamed tokens, tool calls through the real sandbox broker, the usage
 * summary, and an exit code for each way a turn ends (end_turn, requires_action, interrupted);
 * the default agent is created once and reused; sessions can be listed, read and tailed live.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { startDev, type Stack } from "@metaharness/cli";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { boundariesWithin, mh } from "./mh.js";

const scenarios = [
  defineScenario("tools", [
    { text: "Let me look.", toolUses: [{ name: "bash", input: { command: "echo hello from $(uname -s) && ls -a /workspace" } }] },
    (ctx) => ({ text: `The sandbox said: ${ctx.lastToolResult?.content.split("\n")[0] ?? "?"}` }),
  ]),
  defineScenario("endless", [{ text: "word ".repeat(3000), tokensPerSecond: 50 }], { onExhausted: "repeat-last" }),
  defineScenario("weather", [{ text: "Asking the client.", toolUses: [{ name: "get_weather", input: { city: "Oslo" } }] }]),
];

let stack: Stack;
let dataDir: string;
let sdk: Anthropic;
let env: Record<string, string>;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "mh-cli-it-"));
  const dev = await startDev(
    { host: "127.0.0.1", port: 0, dataDir, memory: true, logLevel: "silent" },
    {},
    // 20 tokens a second (a 12-character chunk every 150 ms): slow enough that the pieces reach
    // mh's stdout apart even when this process, which runs the whole stack, is late on a busy
    // machine (at 100 a second the offline model caught up in bursts that arrived as one block).
    // The first token after 1.5 s: mh run sends the prompt and only then opens its stream, and
    // token previews are not replayed, so on a busy machine a stream opened late missed the
    // first sentence's and printed it whole (seen at load 9-12 with two busy loops).
    { scenarios, offlinePace: { ttftMs: 1500, tokensPerSecond: 20 } },
  );
  stack = dev.stack;
  sdk = new Anthropic({ baseURL: stack.url, apiKey: stack.apiKey, maxRetries: 0 });
  env = { MH_URL: stack.url, MH_API_KEY: stack.apiKey };
});
afterAll(async () => {
  await stack?.stop();
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
});

/** The summary line; the cost appears when the model has a price (the offline model answers as claude-sonnet-5-5). */
const SUMMARY = /^── (\w+) · (\d+) tool calls? .*· tokens in [\d,]+.* · out [\d,]+ (?:· ≈ \$[\d.]+ )?· [\d.]+ m?s$/m;

// Each test starts `mh` processes (a second or more of Node start-up apiece when the machine is
// busy) and runs turns paced at 20 tokens a second: 25 s was seen under load 38, so not 60 s.
describe("mh run", { timeout: 120_000 }, () => {
  it("streams a turn and ends with 0 and a summary", async () => {
    const run = mh(["run", "--url", stack.url, "--api-key", stack.apiKey, "hello", "there"]);
    expect(await run.exited, run.stdout() + run.stderr()).toBe(0);
    const out = run.stdout();
    expect(out).toMatch(/^session sesn_\S+$/m);
    expect(out).toMatch(/^› hello there$/m);
    expect(out).toContain('You said: "hello there"');
    expect(SUMMARY.exec(out)?.slice(1, 3)).toEqual(["end_turn", "0"]);
    expect(boundariesWithin(run.chunks, "Hello! I'm the offline model: Meta-Harness is running without access to Anthropic's API.")).toBeGreaterThanOrEqual(2);
  });

  it("shows tool calls run in a bubblewrap sandbox, and reuses the default agent", async () => {
    const run = mh(["run", "[scenario:tools] what is in the sandbox?"], env);
    expect(await run.exited, run.stdout() + run.stderr()).toBe(0);
    const out = run.stdout();
    expect(out).toMatch(/^▸ bash  echo hello from \$\(uname -s\) && ls -a \/workspace$/m);
    expect(out).toMatch(/^◆ sandbox sbx_\S+ ready \(bubblewrap, /m);
    expect(out).toMatch(/^✓ bash  echo hello .* [\d.]+ m?s$/m);
    expect(out).toContain("│ hello from Linux");
    expect(out).toContain("The sandbox said: hello from Linux");
    expect(SUMMARY.exec(out)?.slice(1, 3)).toEqual(["end_turn", "1"]);
    const agents = [];
    for await (const a of sdk.beta.agents.list()) if (a.name === "mh-default") agents.push(a.id);
    expect(agents).toHaveLength(1);
  });

  it("exits 3 when the agent waits for the client (requires_action)", async () => {
    const agent = await sdk.beta.agents.create({
      name: "weather",
      model: "claude-sonnet-5-5",
      system: "[scenario:weather]",
      tools: [{ type: "custom", name: "get_weather", description: "The weather in a city.", input_schema: { type: "object", properties: { city: { type: "string" } } } }],
    });
    const run = mh(["run", "--agent", agent.id, "weather in Oslo?"], env);
    expect(await run.exited, run.stdout() + run.stderr()).toBe(3);
    expect(run.stdout()).toMatch(/^▸ get_weather .*a custom tool/m);
    expect(SUMMARY.exec(run.stdout())?.[1]).toBe("requires_action");
  });

  it("sends user.interrupt on Ctrl-C and exits 130", async () => {
    const run = mh(["run", "[scenario:endless] talk"], env);
    await run.waitFor(/word word word/);
    run.child.kill("SIGINT");
    expect(await run.exited, run.stdout() + run.stderr()).toBe(130);
    expect(run.stdout()).toContain("interrupting…");
    expect(SUMMARY.exec(run.stdout())?.[1]).toBe("interrupted");
    const id = /^session (sesn_\S+)$/m.exec(run.stdout())?.[1] ?? "";
    const types = [];
    for await (const e of sdk.beta.sessions.events.list(id)) types.push(e.type);
    expect(types).toContain("user.interrupt");
  });
});

describe("mh sessions", { timeout: 120_000 }, () => {
  it("lists sessions, prints one and its events, and tails it live", async () => {
    const ls = mh(["sessions", "ls"], env);
    expect(await ls.exited).toBe(0);
    const id = /^(sesn_\S+)\s+idle\s.*hello there$/m.exec(ls.stdout())?.[1];
    expect(id, ls.stdout()).toBeDefined();

    const show = mh(["sessions", "show", id!], env);
    expect(await show.exited).toBe(0);
    expect(JSON.parse(show.stdout())).toMatchObject({ id, status: "idle", title: "hello there" });

    const events = mh(["sessions", "events", id!], env);
    expect(await events.exited).toBe(0);
    expect(events.stdout()).toMatch(/^ +1 \S+ user\.message\n +hello there$/m);
    expect(events.stdout()).toMatch(/session\.status_idle\s+stop_reason=end_turn$/m);

    const tail = mh(["sessions", "tail", "-n", "1", id!], env);
    await tail.waitFor(/session\.status_idle/);
    await sdk.beta.sessions.events.send(id!, { events: [{ type: "user.message", content: [{ type: "text", text: "once more" }] }] });
    // The new turn, then the cue that the session waits again.
    await tail.waitFor(/user\.message\s+once more[\s\S]*session\.status_idle\s+stop_reason=end_turn\n\s+⋯ idle, waiting for a message \(Ctrl-C to leave\)\n$/);
    tail.child.kill("SIGINT");
    expect(await tail.exited).toBe(0);
  });

  it("says what is missing without a key", async () => {
    const ls = mh(["sessions", "ls", "--url", stack.url], { MH_DEV_DIR: join(dataDir, "nothing-here") });
    expect(await ls.exited).toBe(1);
    expect(ls.stderr()).toMatch(/no API key for .*--api-key.*MH_API_KEY/);
  });
});
