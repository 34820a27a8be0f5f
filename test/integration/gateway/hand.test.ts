/**
 * An environment's external hand through the public API (issue 29): an environment created with
 * the official SDK and the metadata key mh.hand = "kv-device" makes its sessions offer the
 * connected kv device's own tools to the model (the offline model, a real broker, the example
 * device connected over ConnectHand) and run them on the device; the calls and their results come
 * back in the SDK's event stream. A kind no connected hand has is a 400 naming the key and listing
 * the connected kinds, and nothing is stored.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { defineScenario } from "@metaharness/offline-model";
import type { KvDeviceHandle } from "@metaharness/sandbox-broker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectKvDevice } from "../../support/sandbox-broker.js";
import { apiFailure, startStack, type Stack } from "../../support/gateway.js";

const scenarios = [
  defineScenario("device", [
    (ctx) => ({
      text: `offered: ${(ctx.request.tools ?? []).map((t) => t.name).filter((n) => n.startsWith("kv_")).join(",")}`,
      toolUses: [{ name: "kv_set", input: { key: "answer", value: "42" } }],
    }),
    { toolUses: [{ name: "kv_get", input: { key: "answer" } }] },
    (ctx) => ({ text: `device says ${ctx.lastToolResult?.content.trim() ?? "?"}` }),
  ]),
];

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsStreamSessionEvents;

let stack: Stack;
let sdk: Anthropic;
let device: KvDeviceHandle | undefined;

beforeAll(async () => {
  stack = await startStack({ scenarios, broker: true });
  sdk = stack.client().sdk;
  device = await connectKvDevice(stack.brain.broker!, "kv-gateway-1");
}, 120_000);
afterAll(async () => {
  device?.close();
  await stack?.stop();
});

/** The refusal's status and message, as the SDK parsed them. */
async function refusal(p: Promise<unknown>): Promise<{ status: number | undefined; message: string }> {
  const err = await apiFailure(p);
  const body: unknown = err.error;
  return { status: err.status, message: (body as { error?: { message?: string } } | undefined)?.error?.message ?? "" };
}

const text = (e: Event): string => (e.type === "agent.message" ? e.content.map((c) => (c.type === "text" ? c.text : "")).join("") : "");

describe("an environment naming an external hand (metadata mh.hand)", () => {
  it("offers the hand's tools to the model and runs them on it; the SDK's stream carries the calls and results", async () => {
    const environment = await sdk.beta.environments.create({ name: "with a device", metadata: { "mh.hand": "kv-device" } });
    expect(environment.metadata["mh.hand"]).toBe("kv-device");
    const agent = await sdk.beta.agents.create({ name: "device user", model: "claude-sonnet-5-5", system: "[scenario:device]", tools: [{ type: "agent_toolset_20260401" }] });
    const session = await sdk.beta.sessions.create({ agent: agent.id, environment_id: environment.id });
    const stream = await sdk.beta.sessions.events.stream(session.id);
    await sdk.beta.sessions.events.send(session.id, { events: [{ type: "user.message", content: [{ type: "text", text: "use the device" }] }] });
    const seen: Event[] = [];
    for await (const e of stream) {
      seen.push(e);
      if (e.type === "session.status_idle") break;
    }
    const uses = seen.flatMap((e) => (e.type === "agent.tool_use" ? [{ name: e.name, input: e.input }] : []));
    expect(uses).toEqual([
      { name: "kv_set", input: { key: "answer", value: "42" } },
      { name: "kv_get", input: { key: "answer" } },
    ]);
    const results = seen.flatMap((e) => (e.type === "agent.tool_result" ? [e] : []));
    expect(results.map((r) => r.is_error ?? false)).toEqual([false, false]);
    expect(results[1]?.content).toEqual([{ type: "text", text: "42" }]);
    const said = seen.filter((e) => e.type === "agent.message").map(text);
    expect(said[0]).toBe("offered: kv_get,kv_list,kv_set");
    expect(said.at(-1)).toBe("device says 42");
    expect(device?.store.get("answer")).toBe("42");
  }, 120_000);

  it("refuses a kind no connected hand has, naming the key and listing the connected kinds; nothing is stored", async () => {
    const before = (await sdk.beta.environments.list()).data.length;
    const err = await refusal(sdk.beta.environments.create({ name: "typo", metadata: { "mh.hand": "kv-devic" } }));
    expect(err.status).toBe(400);
    expect(err.message).toBe('metadata.mh.hand: no hand of kind "kv-devic" is connected to the sandbox broker; connected kinds: kv-device');
    expect((await sdk.beta.environments.list()).data.length).toBe(before);

    const malformed = await refusal(sdk.beta.environments.create({ name: "bad", metadata: { "mh.hand": "kv device" } }));
    expect(malformed.status).toBe(400);
    expect(malformed.message).toContain('metadata.mh.hand: "kv device" is not a hand kind');

    const plain = await sdk.beta.environments.create({ name: "plain" });
    const update = await refusal(sdk.beta.environments.update(plain.id, { metadata: { "mh.hand": "nobody" } }));
    expect(update.status).toBe(400);
    expect(update.message).toContain("metadata.mh.hand: no hand of kind \"nobody\"");
    expect((await sdk.beta.environments.retrieve(plain.id)).metadata["mh.hand"]).toBeUndefined();

    const selfHosted = await refusal(sdk.beta.environments.create({ name: "workers", config: { type: "self_hosted" }, metadata: { "mh.hand": "kv-device" } }));
    expect(selfHosted.status).toBe(400);
    expect(selfHosted.message).toContain("metadata.mh.hand: a self_hosted environment");
  }, 60_000);
});
