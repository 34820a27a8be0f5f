/**
 * A session archived through one gateway instance takes no event another instance accepted
 * before it knew: the instance's own check (the session's archival, from memory or its row) and
 * the append are two steps, and an archive committed between them once let the append land after
 * the archive had answered. The session log refuses it now (FAILED_PRECONDITION naming
 * session_id: 400 naming the session). Seen for certain: instance B's link to the log goes through
 * a proxy that holds B's append in flight while the session is archived through instance A.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../support/eventually.js";
import { textOf } from "../../support/events.js";
import { KEY_A, apiFailure, startStack, type Stack } from "../../support/gateway.js";
import { startPausableProxy, type PausableProxy } from "../../support/pausable-proxy.js";

let stack: Stack;
let proxy: PausableProxy;
let a: Anthropic;
let b: Anthropic;
let environmentId: string;
beforeAll(async () => {
  // Sessions here are never woken into a turn: the harness sweeps nothing and takes no Wake's session.
  stack = await startStack({ scenarios: [], vault: false, harnessEnv: { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false" } });
  proxy = await startPausableProxy(stack.brain.log.reach("admin")["MH_SESSION_LOG_ADDR"]!);
  const other = await stack.anotherGateway({ MH_SESSION_LOG_ADDR: proxy.address });
  a = new Anthropic({ apiKey: KEY_A, baseURL: stack.gateway.url, maxRetries: 0 });
  b = new Anthropic({ apiKey: KEY_A, baseURL: other.url, maxRetries: 0 });
  environmentId = (await a.beta.environments.create({ name: "env" })).id;
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.close();
});

describe("a send through one instance while another archives the session", () => {
  it("is refused with a 400 naming the session, and nothing is appended", async () => {
    const agent = await a.beta.agents.create({ name: "a", model: "claude-sonnet-5-5" });
    const sessionId = (await a.beta.sessions.create({ agent: agent.id, environment_id: environmentId })).id;
    // B has checked the session (not archived) and its append is on its way, held.
    proxy.pause();
    // Settled only once resumed, where the test awaits it.
    const send = b.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text: "too late" }] }] });
    await eventually(() => Promise.resolve(proxy.heldBytes() > 0 ? true : undefined), "B's append held on its way to the log");
    const archived = await a.beta.sessions.archive(sessionId);
    expect(archived.archived_at).not.toBeNull();
    proxy.resume();
    const failure = await apiFailure(send);
    expect(failure.status).toBe(400);
    expect(failure.message).toContain(sessionId);
    expect(failure.message).toMatch(/archived/);
    const { events } = await stack.brain.log.client.getEvents({ sessionId, position: undefined, limit: 100, types: [] });
    expect(events.map(textOf)).not.toContain("too late");
  });
});
