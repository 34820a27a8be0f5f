/**
 * An external hand's own tools in a session (issue 29): the environment names the kv device's
 * kind, the harness offers the device's tools (ListHandTools) to the model beside the sandbox
 * tools, and a call to one runs on a sandbox of that hand kind, provisioned at the first such call,
 * its result coming back into the session.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario } from "@metaharness/offline-model";
import type { KvDeviceHandle } from "@metaharness/sandbox-broker";
import { EnvironmentNetworking, EnvironmentType, StopReasonType, type EnvironmentConfig, type Event } from "@metaharness/proto";
import { connectKvDevice } from "../../support/sandbox-broker.js";
import { idleReason, startBrain, type Brain } from "../../support/harness.js";
import { textOf, userMessage } from "../../support/events.js";

const scenarios = [
  defineScenario("device", [
    (ctx) => ({ text: `offered: ${(ctx.request.tools ?? []).map((t) => t.name).filter((n) => n.startsWith("kv_")).join(",")}` , toolUses: [{ name: "kv_set", input: { key: "answer", value: "42" } }] }),
    { toolUses: [{ name: "kv_get", input: { key: "answer" } }] },
    (ctx) => ({ text: `device says ${ctx.lastToolResult?.content.trim() ?? "?"}` }),
  ]),
];

const environment = (handKind: string): EnvironmentConfig => ({
  ...{ type: EnvironmentType.ENVIRONMENT_TYPE_CLOUD, networking: EnvironmentNetworking.ENVIRONMENT_NETWORKING_LIMITED, allowedHosts: [] },
  ...{ allowMcpServers: false, allowPackageManagers: false, packages: undefined, handKind },
});

let brain: Brain;
let device: KvDeviceHandle | undefined;
beforeAll(async () => {
  brain = await startBrain({ scenarios, broker: true });
  device = await connectKvDevice(brain.broker!, "kv-harness-1");
});
afterAll(async () => {
  device?.close();
  await brain?.stop();
});

const ended = (e: Event[]): boolean => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN;

describe("a hand's own tools", () => {
  it("are offered to the model and run on a sandbox of the environment's hand kind", async () => {
    const sessionId = await brain.createSession({}, "", environment("kv-device"));
    await brain.log.client.emitEvent({ sessionId, event: userMessage("[scenario:device] use the device") });
    await brain.rpc.wake({ sessionId });
    const events = await brain.waitFor(sessionId, ended);
    const messages = events.filter((e) => e.type === "agent.message").map(textOf);
    expect(messages[0]).toBe("offered: kv_get,kv_list,kv_set");
    expect(messages.at(-1)).toBe("device says 42");
    expect(device?.store.get("answer")).toBe("42");
    const results = events.flatMap((e) => (e.payload?.$case === "agentToolResult" ? [e.payload.value] : []));
    expect(results.map((r) => r.isError)).toEqual([false, false]);
    const { sandboxes } = await brain.broker!.client.listSandboxes({ sessionId, includeEnded: false });
    expect(sandboxes.map((s) => s.driver)).toEqual(["external:kv-device"]);
  });
});
