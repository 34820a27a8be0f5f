/**
 * A session forked from another's workspace at an event (issue 29): created through the SDK with
 * the metadata keys mh.fork_from_session and mh.fork_at_seq, its sandbox (real bubblewrap, a
 * broker with a `dir:` workspace store) starts with the files the source's tool calls up to that
 * seq left, and none a later call wrote; without a seq it starts from the source's last, which
 * the session's metadata then shows. Bad values are 400s naming the key, and another tenant's
 * session is not found.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Anthropic from "@anthropic-ai/sdk";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../support/eventually.js";
import { KEY_B, startStack, type Stack } from "../../support/gateway.js";

// Each user message is a command the agent runs; its answer is the command's output.
const scenarios = [
  defineScenario(
    "shell",
    [(ctx) => (ctx.lastUserText !== "" ? { toolUses: [{ name: "bash", input: { command: ctx.lastUserText } }] } : { text: ctx.lastToolResult?.content ?? "?" })],
    { onExhausted: "repeat-last" },
  ),
];

let stack: Stack;
let sdk: Anthropic;
/** The same tenant with our extensions: events carry their seq. */
let seqs: Anthropic;
let store: string;
let agentId: string;
let environmentId: string;

beforeAll(async () => {
  store = await mkdtemp(join(tmpdir(), "mh-fork-store-"));
  stack = await startStack({ scenarios, broker: true, brokerEnv: { MH_WORKSPACE_STORE: `dir:${store}` } });
  sdk = stack.client().sdk;
  seqs = stack.client(undefined, { extensions: true }).sdk;
  const agent = await sdk.beta.agents.create({ name: "forker", model: "claude-sonnet-5-5", system: "[scenario:shell]", tools: [{ type: "agent_toolset_20260401" }] });
  agentId = agent.id;
  environmentId = (await sdk.beta.environments.create({ name: "fork" })).id;
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  if (store !== undefined) await rm(store, { recursive: true, force: true });
});

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

async function events(sessionId: string): Promise<Event[]> {
  const all: Event[] = [];
  for await (const e of sdk.beta.sessions.events.list(sessionId)) all.push(e);
  return all;
}

/** The session's last seq (its events read with our extensions, which carry it). */
async function lastSeq(sessionId: string): Promise<number> {
  let last = 0;
  for await (const e of seqs.beta.sessions.events.list(sessionId)) last = Math.max(last, (e as unknown as { seq: number }).seq);
  return last;
}

/** Sends `command` and waits for the turn's answer (trimmed); returns it and the session's last seq then. */
async function say(sessionId: string, command: string): Promise<{ answer: string; seq: number }> {
  const before = (await events(sessionId)).filter((e) => e.type === "agent.message").length;
  await sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text: command }] }] });
  let seen: string[] = [];
  const answer = await eventually(
    async () => {
      const all = await events(sessionId);
      seen = all.map((e) => e.type);
      const said = all.filter((e) => e.type === "agent.message");
      if (said.length <= before || all.at(-1)?.type !== "session.status_idle") return undefined;
      const last = said.at(-1);
      return last?.type === "agent.message" ? last.content.map((c) => (c.type === "text" ? c.text : "")).join("").trim() : "";
    },
    () => `an answer to ${command}; events: ${seen.join(", ")}`,
    90_000,
  );
  return { answer, seq: await lastSeq(sessionId) };
}

function create(metadata: Record<string, string>): Promise<Anthropic.Beta.Sessions.BetaManagedAgentsSession> {
  return sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId, metadata });
}

async function refusal(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as { status: number; error?: { error?: { message?: string } } };
    return { status: e.status, message: e.error?.error?.message ?? "" };
  }
  throw new Error("expected a refusal");
}

describe("a session forked from another's workspace", () => {
  let source: string;
  let firstSeq: number;

  beforeAll(async () => {
    source = (await create({})).id;
    const first = await say(source, "mkdir -p src && echo one > src/f.txt && echo made");
    expect(first.answer).toBe("made");
    firstSeq = first.seq;
    expect((await say(source, "echo two > src/f.txt && echo later > g.txt && echo changed")).answer).toBe("changed");
  }, 180_000);

  it("starts from the source's files as of the seq, without a later call's", async () => {
    const fork = await create({ "mh.fork_from_session": source, "mh.fork_at_seq": String(firstSeq) });
    const { answer } = await say(fork.id, "cat src/f.txt; ls");
    expect(answer).toBe("one\nsrc");
    // Its own work is its own: the source does not see it.
    await say(fork.id, "echo mine > src/f.txt");
    expect((await say(source, "cat src/f.txt")).answer).toBe("two");
  }, 180_000);

  it("without a seq starts from the source's last, and its metadata says which", async () => {
    const { seq } = await say(source, "true");
    const fork = await create({ "mh.fork_from_session": source });
    // The broker's sandbox.* events may come after the idle: the seq is the last at creation.
    expect(Object.keys(fork.metadata)).toEqual(["mh.fork_from_session", "mh.fork_at_seq"]);
    expect(Number(fork.metadata["mh.fork_at_seq"])).toBeGreaterThanOrEqual(seq);
    expect((await say(fork.id, "cat src/f.txt g.txt")).answer).toBe("two\nlater");
  }, 180_000);

  it("refuses a bad seq, an unknown session, a seq alone and another tenant's session, naming the key", async () => {
    const last = await lastSeq(source);
    for (const at of ["0", "-1", "x", String(last + 1000)]) {
      const r = await refusal(create({ "mh.fork_from_session": source, "mh.fork_at_seq": at }));
      expect(r.status).toBe(400);
      expect(r.message).toContain(`metadata.mh.fork_at_seq: must be an event seq of session ${source}, 1 to `);
    }
    expect((await refusal(create({ "mh.fork_from_session": "sesn_nope" }))).message).toContain('metadata.mh.fork_from_session: session "sesn_nope" not found');
    expect((await refusal(create({ "mh.fork_at_seq": "3" }))).message).toContain("metadata.mh.fork_from_session: is required with metadata.mh.fork_at_seq");
    const other = stack.client(KEY_B).sdk;
    const theirs = await other.beta.agents.create({ name: "b", model: "claude-sonnet-5-5", system: "[scenario:shell]" });
    const env = await other.beta.environments.create({ name: "b" });
    const r = await refusal(other.beta.sessions.create({ agent: theirs.id, environment_id: env.id, metadata: { "mh.fork_from_session": source } }));
    expect(r).toMatchObject({ status: 400 });
    expect(r.message).toContain(`session ${JSON.stringify(source)} not found`);
  }, 60_000);
});
