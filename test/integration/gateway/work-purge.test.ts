/**
 * Stopped work items are deleted once past their retention (MH_GATEWAY_WORK_RETENTION_SECONDS),
 * swept by the gateway itself; items still in the queue are never touched.
 */
import Anthropic from "@anthropic-ai/sdk";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, expect, it } from "vitest";
import { workerClient } from "../../support/environment-worker.js";
import { startStack, type Stack } from "../../support/gateway.js";
import { eventually } from "../../support/eventually.js";

const RETENTION_S = 2;
let stack: Stack;
let sdk: Anthropic;

beforeAll(async () => {
  stack = await startStack({
    scenarios: [defineScenario("idle", [{ text: "ok" }])],
    env: { MH_GATEWAY_WORK_RETENTION_SECONDS: String(RETENTION_S), MH_GATEWAY_WORK_PURGE_EVERY_MS: "200" },
  });
  sdk = stack.client().sdk;
});
afterAll(async () => {
  await stack?.stop();
});

it("deletes a stopped item once its retention has passed, and leaves queued ones alone", async () => {
  const environmentId = (await sdk.beta.environments.create({ name: "self", config: { type: "self_hosted" } })).id;
  const { key } = await sdk.post<{ key: string }>(`/v1/environments/${environmentId}/keys`);
  const worker = workerClient(stack.gateway.url, key);
  const agent = await sdk.beta.agents.create({ name: "a", model: "claude-sonnet-5-5", system: "[scenario:idle]" });
  const start = async (): Promise<string> =>
    (
      await sdk.beta.sessions.create({
        agent: agent.id,
        environment_id: environmentId,
        initial_events: [{ type: "user.message", content: [{ type: "text", text: "go" }] }],
      })
    ).id;
  const [first, second] = [await start(), await start()];
  const itemOf = async (sessionId: string): Promise<string | undefined> => {
    for await (const w of worker.beta.environments.work.list(environmentId)) if (w.data.id === sessionId) return w.id;
    return undefined;
  };
  const stopped = await eventually(() => itemOf(first), "the first session's work item");
  const queued = await eventually(() => itemOf(second), "the second session's work item");

  expect((await sdk.beta.environments.work.stop(stopped, { environment_id: environmentId })).state).toBe("stopped");
  const stoppedAt = Date.now();
  // Within its retention it is still there.
  expect((await sdk.beta.environments.work.retrieve(stopped, { environment_id: environmentId })).state).toBe("stopped");

  const gone = async (): Promise<true | undefined> => {
    try {
      await sdk.beta.environments.work.retrieve(stopped, { environment_id: environmentId });
      return undefined;
    } catch (e) {
      if (e instanceof Anthropic.NotFoundError) return true;
      throw e;
    }
  };
  await eventually(gone, "the stopped item to be purged", RETENTION_S * 1000 + 10_000);
  expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(RETENTION_S * 1000 - 100);
  expect(await itemOf(stopped)).toBeUndefined();
  expect((await sdk.beta.environments.work.retrieve(queued, { environment_id: environmentId })).state).toBe("queued");
});
