/**
 * The windowed context strategy against real services: a session far longer than its window
 * completes every turn with each request under the budget, the window moves in jumps (so
 * consecutive requests share a cached prefix), and the model re-reads an event that fell out of
 * the window through its read_session_events tool: dropping from the window is reversible.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario, type MessagesRequest, type RecordedRequest, type StepContext, type StepSpec } from "@metaharness/offline-model";
import { StopReasonType, type Event } from "@metaharness/proto";
import { idleReason, startBrain, type Brain } from "../../support/harness.js";
import { textOf, userMessage } from "../../support/events.js";

const BUDGET = 2_000;
const FILLER = "lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(14); // ~800 characters

interface Body {
  system?: Array<{ text: string }>;
  messages: Array<{ role: string; content: Array<{ type: string; text?: string }> }>;
}

const bodyOf = (r: RecordedRequest): Body => r.body as Body;
const firstText = (b: Body): string => b.messages[0]?.content.find((c) => c.type === "text")?.text ?? "";
/** The text the model sees first (the window's header, when it has one). */
function leadText(request: MessagesRequest): string {
  const content = request.messages[0]?.content;
  if (typeof content === "string") return content;
  for (const block of content ?? []) if (block.type === "text") return block.text;
  return "";
}
const HEADER = /^\[context window\] (\d+) earlier events/;

/** Answers the password question by reading the log from the start, up to where the window begins. */
function secretStep(ctx: StepContext): StepSpec {
  const read = ctx.lastToolResult;
  if (ctx.lastUserText === "" && read?.toolName === "read_session_events") {
    return { text: `The password was ${/password is (\w+)/.exec(read.content)?.[1] ?? "not in what I read"}.` };
  }
  if (/what was the password/i.test(ctx.lastUserText)) {
    const before = /\{"before_seq": (\d+)\}/.exec(leadText(ctx.request))?.[1];
    const input = { after_seq: 0, ...(before === undefined ? {} : { before_seq: Number(before) }), types: ["user.message"], limit: 1 };
    return { toolUses: [{ name: "read_session_events", input }] };
  }
  return { text: `Noted: ${ctx.lastUserText.slice(0, 30)}` };
}

/** Two rounds of big reads per turn, told apart by their input (the first round may be out of the window). */
function toolsStep(ctx: StepContext): StepSpec {
  const read = (limit: number): StepSpec => ({ toolUses: [{ name: "read_session_events", input: { after_seq: 0, limit } }] });
  if (ctx.lastUserText !== "") return read(100);
  return ctx.lastToolResult?.toolInput["limit"] === 100 ? read(99) : { text: "done" };
}

const scenarios = [
  // Two big tool results per turn: cuts must keep each tool_use with its result, and a result
  // larger than the whole window must be shortened to fit.
  defineScenario("windowed-tools", [toolsStep], { onExhausted: "repeat-last" }),
  defineScenario("windowed-long", [(ctx) => ({ text: `Understood ${ctx.lastUserText.slice(0, 12)}. ${"ok ".repeat(80)}` })], {
    onExhausted: "repeat-last",
  }),
  defineScenario("windowed-secret", [secretStep], { onExhausted: "repeat-last" }),
];

let brain: Brain;
beforeAll(async () => {
  brain = await startBrain({ scenarios });
});
afterAll(async () => {
  await brain?.stop();
});

const ended = (events: Event[]): boolean => events[events.length - 1]?.type === "session.status_idle";
const answers = (events: Event[]): Event[] => events.filter((e) => e.type === "agent.message");

/** Sends a message and waits for the turn it starts to end. */
async function turn(sessionId: string, text: string): Promise<Event[]> {
  const before = answers(await brain.waitFor(sessionId, () => true)).length;
  await brain.log.client.emitEvent({ sessionId, event: userMessage(text) });
  await brain.rpc.wake({ sessionId });
  return brain.waitFor(sessionId, (e) => ended(e) && answers(e).length > before);
}

function requestsOf(marker: string): RecordedRequest[] {
  return brain.model.requests.filter((r) => JSON.stringify(bodyOf(r).system ?? []).includes(marker));
}

describe("the windowed context strategy", () => {
  it("completes a session far longer than its window, every request under the budget", async () => {
    const marker = `[scenario:windowed-long] run ${Date.now()}`;
    const sessionId = await brain.createSession({ system: marker, contextStrategy: "windowed", contextWindowTokens: BUDGET });
    const turns = 40;
    for (let i = 1; i <= turns; i++) await turn(sessionId, `turn ${String(i).padStart(2, "0")}: ${FILLER}`);

    const events = await brain.waitFor(sessionId, ended);
    expect(answers(events)).toHaveLength(turns);
    expect(idleReason(events)).toBe(StopReasonType.STOP_REASON_TYPE_END_TURN);
    expect(events.some((e) => e.type === "session.error")).toBe(false);
    const history = events.reduce((n, e) => n + JSON.stringify(e.payload ?? {}).length, 0) / 4;
    expect(history).toBeGreaterThan(5 * BUDGET);

    const requests = requestsOf(marker);
    expect(requests).toHaveLength(turns);
    for (const r of requests) {
      expect(r.outcome).toBe("ok");
      expect(JSON.stringify(r.body).length / 4).toBeLessThanOrEqual(BUDGET);
      const first = bodyOf(r).messages[0]!;
      expect(first.role).toBe("user");
    }
    // The last request leaves most of the session out, says so, and still ends with the newest message.
    const last = bodyOf(requests[requests.length - 1]!);
    expect(Number(HEADER.exec(firstText(last))?.[1])).toBeGreaterThan(100);
    expect(JSON.stringify(last.messages.at(-1))).toContain(`turn ${turns}:`);

    // The window moves in jumps: requests between two jumps share their start (and a cached prefix).
    const starts = requests.map((r) => firstText(bodyOf(r)).slice(0, 80));
    const jumps = starts.filter((s, i) => i > 0 && s !== starts[i - 1]).length;
    expect(jumps).toBeGreaterThan(1);
    expect(jumps).toBeLessThan(turns / 2);
    const usage = events.flatMap((e) => (e.payload?.$case === "spanModelRequestEnd" ? [e.payload.value.modelUsage!] : []));
    // After a jump only the tools and system prompt are read from the cache; between jumps, more.
    const staticPrefix = Math.min(...usage.slice(1).map((u) => u.cacheReadInputTokens));
    expect(staticPrefix).toBeGreaterThan(0);
    const sameStart = usage.filter((_, i) => i > 0 && starts[i] === starts[i - 1]);
    expect(sameStart.length).toBeGreaterThan(turns / 2);
    for (const u of sameStart) expect(u.cacheReadInputTokens).toBeGreaterThan(staticPrefix);
  });

  it("keeps tool calls with their results and shortens a result larger than the window", async () => {
    const marker = `[scenario:windowed-tools] run ${Date.now()}`;
    const sessionId = await brain.createSession({ system: marker, contextStrategy: "windowed", contextWindowTokens: BUDGET });
    for (let i = 1; i <= 10; i++) await turn(sessionId, `task ${i}: ${FILLER}`);
    const events = await brain.waitFor(sessionId, ended);
    expect(answers(events)).toHaveLength(10);
    expect(events.filter((e) => e.type === "agent.tool_result")).toHaveLength(20);
    expect(events.some((e) => e.type === "session.error")).toBe(false);
    const requests = requestsOf(marker);
    expect(requests).toHaveLength(30);
    for (const r of requests) {
      expect(r.outcome).toBe("ok"); // the model refuses a tool_result without its tool_use
      expect(JSON.stringify(r.body).length / 4).toBeLessThanOrEqual(BUDGET);
    }
    expect(requests.some((r) => JSON.stringify(r.body).includes("characters cut to fit the context window"))).toBe(true);
  });

  it("lets the model re-read an early event that fell out of the window", async () => {
    const marker = `[scenario:windowed-secret] run ${Date.now()}`;
    const sessionId = await brain.createSession({ system: marker, contextStrategy: "windowed", contextWindowTokens: BUDGET });
    await turn(sessionId, `Remember this: the password is swordfish. ${FILLER}`);
    for (let i = 1; i <= 8; i++) await turn(sessionId, `filler ${i}: ${FILLER}`);
    const events = await turn(sessionId, "What was the password?");

    const requests = requestsOf(marker);
    const asked = requests.findIndex((r) => JSON.stringify(bodyOf(r).messages.at(-1)).includes("What was the password?"));
    const askedBody = JSON.stringify(requests[asked]!.body);
    // The early message was out of the window when the question came...
    expect(askedBody).not.toContain("swordfish");
    expect(HEADER.test(firstText(bodyOf(requests[asked]!)))).toBe(true);
    // ...so the model read it back from the log, by position,
    const use = events.find((e) => e.type === "agent.tool_use");
    const input = use?.payload?.$case === "agentToolUse" ? use.payload.value : undefined;
    expect(input?.name).toBe("read_session_events");
    expect(input?.input).toMatchObject({ after_seq: 0, before_seq: expect.any(Number) as number });
    const result = events.find((e) => e.type === "agent.tool_result");
    const output = result?.payload?.$case === "agentToolResult" ? result.payload.value : undefined;
    expect(output?.isError).toBe(false);
    expect(JSON.stringify(output?.content)).toMatch(/#1 user\.message: Remember this: the password is swordfish/);
    // ...and answered with it, every request still under the budget.
    expect(textOf(answers(events).at(-1))).toBe("The password was swordfish.");
    for (const r of requests) expect(JSON.stringify(r.body).length / 4).toBeLessThanOrEqual(BUDGET);
  });
});
