/**
 * Handing a session's sandbox to another (issue 29), through Meta-Harness's own route
 * POST /v1/sessions/{id}/sandbox/transfer called with the official SDK's client.post: session A
 * writes a file; while A's turn is still running, its sandbox goes to session B; B's tool call
 * sees the file (in the very sandbox: A's call still running there ends when B's call tells it
 * to); A's next call runs in a new sandbox and its result says so, and A's next turn has none of
 * B's files. Bad requests are 400/404/409s naming the field; the CLI's mh sessions transfer calls
 * the same route. Real bubblewrap and broker.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { defineScenario, type StepContext } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../support/eventually.js";
import { apiFailure, KEY_A, KEY_B, startStack, type Stack } from "../../support/gateway.js";
import { mh } from "../cli/mh.js";

/**
 * The user's message is commands separated by " ;; ": the agent runs them one tool call each, then
 * answers with their outputs joined by " | ".
 */
function commands(ctx: StepContext): { toolUses: Array<{ name: string; input: { command: string } }> } | { text: string } {
  const messages = ctx.request.messages;
  let asked = -1;
  messages.forEach((m, i) => {
    const text = typeof m.content === "string" ? m.content : m.content.some((b) => b.type === "text") ? "x" : "";
    if (m.role === "user" && text !== "") asked = i;
  });
  const message = messages[asked];
  const text = message === undefined ? "" : typeof message.content === "string" ? message.content : message.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n");
  const list = text.replace(/\[scenario:[^\]]*\]\s*/, "").split(" ;; ");
  const results = ctx.toolResults.filter((r) => r.messageIndex > asked);
  const next = list[results.length];
  return next !== undefined ? { toolUses: [{ name: "bash", input: { command: next } }] } : { text: results.map((r) => r.content.trim()).join(" | ") };
}

const scenarios = [defineScenario("commands", [commands], { onExhausted: "repeat-last" })];

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

let stack: Stack;
let sdk: Anthropic;
let agentId: string;
let environmentId: string;

beforeAll(async () => {
  stack = await startStack({ scenarios, broker: true });
  sdk = stack.client().sdk;
  agentId = (await sdk.beta.agents.create({ name: "worker", model: "claude-sonnet-5-5", system: "[scenario:commands]", tools: [{ type: "agent_toolset_20260401" }] })).id;
  environmentId = (await sdk.beta.environments.create({ name: "transfer" })).id;
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

async function events(sessionId: string): Promise<Event[]> {
  const all: Event[] = [];
  for await (const e of sdk.beta.sessions.events.list(sessionId)) all.push(e);
  return all;
}

const said = (all: Event[]): string[] => all.flatMap((e) => (e.type === "agent.message" ? [e.content.map((c) => (c.type === "text" ? c.text : "")).join("")] : []));

async function send(sessionId: string, text: string): Promise<number> {
  const before = said(await events(sessionId)).length;
  await sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text }] }] });
  return before;
}

/** The turn's answer, once the session is idle after it. */
async function answer(sessionId: string, before: number): Promise<string> {
  let seen: string[] = [];
  return eventually(
    async () => {
      const all = await events(sessionId);
      seen = all.map((e) => e.type);
      const answers = said(all);
      return answers.length > before && all.at(-1)?.type === "session.status_idle" ? answers.at(-1) : undefined;
    },
    () => `an answer in ${sessionId}; events: ${seen.join(", ")}`,
    120_000,
  );
}

const say = async (sessionId: string, text: string): Promise<string> => answer(sessionId, await send(sessionId, text));

interface Transfer {
  readonly type: string;
  readonly sandbox_id: string;
  readonly from_session_id: string;
  readonly to_session_id: string;
}

function transfer(from: string, body: Record<string, string>, client: Anthropic = sdk): Promise<Transfer> {
  return client.post<Transfer>(`/v1/sessions/${from}/sandbox/transfer`, { body });
}

async function refusal(p: Promise<unknown>): Promise<{ status: number | undefined; message: string }> {
  const err = await apiFailure(p);
  const body: unknown = err.error;
  return { status: err.status, message: (body as { error?: { message?: string } } | undefined)?.error?.message ?? "" };
}

const create = async (): Promise<string> => (await sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId })).id;

describe("a session's sandbox handed to another session", () => {
  it("goes with its files: the taker's call sees them, the giver's next call runs in a new sandbox and is told", async () => {
    const a = await create();
    const b = await create();
    // A writes, then waits in its sandbox for a mark only B's call (in the same sandbox, after the transfer) makes.
    const wait = "for i in $(seq 1200); do [ -e release ] && break; sleep 0.1; done";
    const turn = await send(a, `echo from-a > note.txt && echo written ;; ${wait}; echo released ;; test -e note.txt && echo still || echo gone`);
    await eventually(async () => ((await events(a)).filter((e) => e.type === "agent.tool_use").length === 2 ? true : undefined), "A's second call to start", 60_000);

    const done = await transfer(a, { to_session_id: b });
    expect(done).toMatchObject({ type: "sandbox_transfer", from_session_id: a, to_session_id: b });
    expect(done.sandbox_id).toMatch(/^sbx_/);

    expect(await say(b, "for i in $(seq 600); do [ -e note.txt ] && break; sleep 0.1; done; cat note.txt; touch release")).toBe("from-a");
    const giver = await answer(a, turn);
    const [first, second, third] = giver.split(" | ");
    expect([first, second]).toEqual(["written", "released"]);
    expect(third).toBe(`[sandbox ${done.sandbox_id} was handed to another session, with its files; this call ran in a new sandbox]\ngone`);

    // A's next turn: its own (new) sandbox, not B's.
    expect(await say(a, "test -e note.txt && echo still || echo gone")).toBe("gone");
    expect(await say(b, "cat note.txt")).toBe("from-a");
  }, 240_000);

  it("refuses bad requests, naming the field", async () => {
    const a = await create();
    const c = await create();
    // No sandbox yet: nothing to transfer.
    const none = await refusal(transfer(a, { to_session_id: c }));
    expect(none.status).toBe(409);
    expect(none.message).toContain(`session_id: session ${a} has no running sandbox`);
    expect(await say(a, "echo one > f && echo ok")).toBe("ok");
    expect(await say(c, "echo mine && echo ok")).toBe("mine\nok");

    const busy = await refusal(transfer(a, { to_session_id: c }));
    expect(busy.status).toBe(409);
    expect(busy.message).toMatch(new RegExp(`^to_session_id: session ${c} already has a running sandbox \\(sbx_`));

    const same = await refusal(transfer(a, { to_session_id: a }));
    expect(same).toEqual({ status: 400, message: `to_session_id: is the session that holds the sandbox (${a})` });
    const missing = await refusal(transfer(a, {}));
    expect(missing.status).toBe(400);
    expect(missing.message).toContain("to_session_id");
    expect((await refusal(transfer(a, { to_session_id: "sesn_nope" }))).status).toBe(404);
    expect((await refusal(transfer("sesn_nope", { to_session_id: c }))).status).toBe(404);
    expect((await refusal(transfer(a, { to_session_id: await create(), sandbox_id: "sbx_nope" }))).status).toBe(404);
    // Another tenant sees neither session.
    const other = stack.client(KEY_B).sdk;
    expect((await refusal(transfer(a, { to_session_id: c }, other))).status).toBe(404);

    // The CLI's mh sessions transfer: the same route, its refusal printed.
    const d = await create();
    const cli = (args: string[]): ReturnType<typeof mh> => mh(["sessions", "transfer", ...args, "--url", stack.gateway.url, "--api-key", KEY_A]);
    const refused = cli([a, "--to", c]);
    expect(await refused.exited).toBe(1);
    expect(refused.stderr()).toContain(`to_session_id: session ${c} already has a running sandbox`);
    const moved = cli([a, "--to", d]);
    expect(await moved.exited).toBe(0);
    expect(moved.stdout()).toMatch(new RegExp(`^sandbox sbx_\\S+ of ${a} now belongs to ${d}, with its files\n$`));
    expect(await say(d, "cat f")).toBe("one");
  }, 240_000);
});
