/**
 * `mh sessions events` and `mh sessions tail` as a person sees them in an 80-column terminal (a
 * tmux pseudo-terminal): no line the terminal has to wrap, a message's text whole (wrapped at
 * words, not cut after 30 characters), colours on a terminal but not with NO_COLOR nor into a
 * pipe, and a session that waits saying so ("idle, waiting ..."), then following what comes next.
 */
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_A, startStack, type Stack } from "../../support/gateway.js";
import { MH, mh } from "./mh.js";
import { Tmux } from "./tmux.js";

const WIDTH = 80;
const ANSWER =
  "The tests fail because median() sorts the numbers as strings, so 10 comes before 9; sorting them numerically with sort -n fixes it, and all twelve tests pass again.";
const LATER = "Done: the second question is answered as well, in words long enough to need wrapping at eighty columns.";
const COMMAND = "cd /workspace/stats && npm test -- --runInBand --reporter=verbose --testNamePattern='median of an even count'";
const ESC = /\x1b\[/;

let stack: Stack;
let tmux: Tmux;
let sessionId: string;
let env: Record<string, string>;

beforeAll(async () => {
  stack = await startStack({
    scenarios: [defineScenario("terminal", [{ text: "Running the tests.", toolUses: [{ name: "run_tests", input: { command: COMMAND } }] }, { text: ANSWER }, { text: LATER }])],
  });
  tmux = await Tmux.start(WIDTH);
  const sdk = stack.client(KEY_A).sdk;
  const agent = await sdk.beta.agents.create({
    name: "terminal",
    model: "claude-sonnet-5-5",
    system: "[scenario:terminal]",
    tools: [{ type: "custom", name: "run_tests", description: "Runs a command", input_schema: { type: "object", properties: { command: { type: "string" } } } }],
  });
  const environment = await sdk.beta.environments.create({ name: "terminal" });
  sessionId = (await sdk.beta.sessions.create({ agent: agent.id, environment_id: environment.id })).id;

  // A turn with a tool call of a long command that fails (the client runs it), then the answer.
  const stream = await sdk.beta.sessions.events.stream(sessionId);
  await sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text: "Why do the tests of the stats project fail, and what fixes them?" }] }] });
  let useId: string | undefined;
  for await (const event of stream) {
    if (event.type === "agent.custom_tool_use") useId = event.id;
    if (event.type !== "session.status_idle") continue;
    if (useId === undefined || event.stop_reason.type !== "requires_action") break;
    const output = ["FAIL src/stats.test.ts", "  ● median › of an even count", "    Expected: 9.5", "    Received: 55"].join("\n");
    await sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.custom_tool_result", custom_tool_use_id: useId, is_error: true, content: [{ type: "text", text: output }] }] });
    useId = undefined;
  }
  env = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: process.env["HOME"] ?? "/tmp", MH_URL: stack.gateway.url, MH_API_KEY: KEY_A };
});

afterAll(async () => {
  await tmux?.stop();
  await stack?.stop();
});

/** Lines of the screen (wrapped ones joined) that the terminal had to wrap. */
const wrapped = (screen: string): string[] => screen.split("\n").filter((line) => line.length > WIDTH);
/** A message's text as the screen shows it, its lines joined again. */
const words = (screen: string): string => screen.split("\n").map((l) => l.trim()).join(" ");

describe("mh sessions in an 80-column terminal", () => {
  it("events: every line fits, the message is whole, colours on a terminal", async () => {
    await tmux.open("events", [process.execPath, MH, "sessions", "events", sessionId], env);
    const screen = await tmux.waitFor("events", /session\.status_idle/);
    expect(wrapped(screen)).toEqual([]);
    expect(words(screen)).toContain(ANSWER);
    expect(screen).toMatch(/agent\.custom_tool_use +run_tests {2}\{"command":"cd \/works.*…\n/);
    expect(screen).toMatch(/user\.custom_tool_result +error: FAIL src\/stats\.te.*… \(\+3 lines\)\n/);
    expect(await tmux.screen("events", { escapes: true })).toMatch(ESC);
  });

  it("events: no colour with NO_COLOR, nor into a pipe", async () => {
    await tmux.open("plain", [process.execPath, MH, "sessions", "events", sessionId], { ...env, NO_COLOR: "1" });
    await tmux.waitFor("plain", /session\.status_idle/);
    expect(await tmux.screen("plain", { escapes: true })).not.toMatch(ESC);
    const piped = mh(["sessions", "events", sessionId], env);
    expect(await piped.exited).toBe(0);
    expect(piped.stdout()).not.toMatch(ESC);
    expect(words(piped.stdout())).toContain(ANSWER);
  });

  it("tail: says the session is idle and waiting, then follows what comes next", async () => {
    await tmux.open("tail", [process.execPath, MH, "sessions", "tail", sessionId, "-n", "20"], env);
    let screen = await tmux.waitFor("tail", /idle, waiting for a message/);
    expect(wrapped(screen)).toEqual([]);
    expect(words(screen)).toContain(ANSWER);

    const sdk = stack.client(KEY_A).sdk;
    await sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text: "And the second question?" }] }] });
    screen = await tmux.waitFor("tail", /idle, waiting for a message[\s\S]*And the second question\?[\s\S]*idle, waiting for a message/);
    expect(words(screen)).toContain(LATER);
    expect(wrapped(screen)).toEqual([]);
    await tmux.keys("tail", "C-c");
  });
});
