/**
 * The EnvironmentWorker protocol call by call, with the official SDK: who may call what (an API
 * key, an environment key, a work item's sessions token), what each refuses and how (401, 403,
 * 404, 409, and the SDK's BetaHeartbeatPreconditionFailedError with the lease as the gateway holds
 * it), the lease (a lapsed one is handed out again and the old token fenced off), stop, the
 * calls of the tenant's API key (retrieve, update, stats), and a call no worker answers.
 */
import Anthropic from "@anthropic-ai/sdk";
import { BetaHeartbeatPreconditionFailedError, type BetaSelfHostedWork } from "@anthropic-ai/sdk/resources/beta/environments/work";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workerClient } from "../../support/environment-worker.js";
import { KEY_B, startStack, type Stack } from "../../support/gateway.js";
import { eventually } from "../../support/eventually.js";

const scenarios = [
  defineScenario("one-call", [{ toolUses: [{ name: "bash", input: { command: "echo hi" } }] }, (ctx) => ({ text: `got ${ctx.lastToolResult?.content ?? "?"}` })]),
];

/** How long the harness waits for a worker's answer here: ample for the tests that answer. */
const WORKER_TOOL_TIMEOUT_MS = 5000;

let stack: Stack;
let sdk: Anthropic;
let environmentId: string;
let environmentKey: string;
let keyId: string;
let worker: Anthropic;

beforeAll(async () => {
  stack = await startStack({
    scenarios,
    env: { MH_GATEWAY_WORK_LEASE_TTL_SECONDS: "1", MH_GATEWAY_KEY_CACHE_MS: "0", MH_GATEWAY_SSE_HEARTBEAT_MS: "200" },
    harnessEnv: { MH_WORKER_TOOL_TIMEOUT_MS: String(WORKER_TOOL_TIMEOUT_MS) },
  });
  sdk = stack.client().sdk;
  environmentId = (await sdk.beta.environments.create({ name: "self", config: { type: "self_hosted" } })).id;
  const issued = await sdk.post<{ id: string; key: string; environment_id: string; type: string }>(`/v1/environments/${environmentId}/keys`);
  expect(issued).toMatchObject({ type: "environment_key", environment_id: environmentId });
  expect(issued.key).toMatch(/^mhek_/);
  ({ key: environmentKey, id: keyId } = issued);
  worker = workerClient(stack.gateway.url, environmentKey);
});
afterAll(async () => {
  await stack?.stop();
});

async function newSession(metadata: Record<string, string> = {}): Promise<string> {
  const agent = await sdk.beta.agents.create({ name: "a", model: "claude-sonnet-5-5", system: "[scenario:one-call]", tools: [{ type: "agent_toolset_20260401" }] });
  const session = await sdk.beta.sessions.create({
    agent: agent.id,
    environment_id: environmentId,
    metadata,
    initial_events: [{ type: "user.message", content: [{ type: "text", text: "go" }] }],
  });
  return session.id;
}

/** Polls until an item of `sessionId` comes (others are left to lapse back). */
async function pollFor(sessionId: string, workerId: string): Promise<BetaSelfHostedWork> {
  for (let i = 0; i < 50; i++) {
    // Every other poll with the SDK's nulls (sent as empty values): as if left out.
    const params = i % 2 === 0 ? { block_ms: 500 } : { block_ms: null, reclaim_older_than_ms: null };
    const work = await worker.beta.environments.work.poll(environmentId, { ...params, "Anthropic-Worker-ID": workerId });
    if (work?.data.id === sessionId) return work;
  }
  throw new Error(`no work item for ${sessionId}`);
}

const tokenOf = (work: BetaSelfHostedWork): string => (JSON.parse(Buffer.from(work.secret ?? "", "base64url").toString()) as { sessions_token: string }).sessions_token;
const failure = (p: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> =>
  p.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (e: unknown) => e as InstanceType<typeof Anthropic.APIError>,
  );

describe("credentials", () => {
  it("takes the environment key for polling, and refuses the rest with 401, 403 or 404", async () => {
    expect(await failure(sdk.beta.environments.work.poll(environmentId))).toBeInstanceOf(Anthropic.PermissionDeniedError);
    const bogus = workerClient(stack.gateway.url, "mhek_not-a-key-of-anyone-0123456789");
    expect(await failure(bogus.beta.environments.work.poll(environmentId))).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(await failure(worker.beta.environments.work.poll("env_unknown"))).toBeInstanceOf(Anthropic.NotFoundError);
    // An API key reads the queue's stats but cannot list it (the SDK: list rejects a Claude API key).
    expect(await failure(sdk.beta.environments.work.list(environmentId))).toBeInstanceOf(Anthropic.PermissionDeniedError);

    const cloud = await sdk.beta.environments.create({ name: "cloud" });
    const notSelfHosted = await failure(sdk.post(`/v1/environments/${cloud.id}/keys`));
    expect(notSelfHosted).toBeInstanceOf(Anthropic.BadRequestError);
    expect(notSelfHosted.apiMessage).toMatch(/^environment_id: .*not self_hosted/);
    expect(await failure(stack.client(KEY_B).sdk.post(`/v1/environments/${environmentId}/keys`))).toBeInstanceOf(Anthropic.NotFoundError);

    const spare = await sdk.post<{ id: string; key: string }>(`/v1/environments/${environmentId}/keys`);
    const spareWorker = workerClient(stack.gateway.url, spare.key);
    expect(await spareWorker.beta.environments.work.stats(environmentId)).toMatchObject({ type: "work_queue_stats" });
    expect(await sdk.delete(`/v1/environments/${environmentId}/keys/${spare.id}`)).toEqual({ id: spare.id, type: "environment_key_deleted" });
    expect(await failure(spareWorker.beta.environments.work.stats(environmentId))).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(await failure(sdk.delete(`/v1/environments/${environmentId}/keys/${spare.id}x`))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(keyId).toMatch(/^envkey_/);
  });

  it("refuses a long poll beyond 999 ms, naming block_ms", async () => {
    const err = await failure(worker.beta.environments.work.poll(environmentId, { block_ms: 1000 }));
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.apiMessage).toMatch(/^block_ms: /);
  });
});

describe("the lease", () => {
  it("acks once for the worker it was delivered to, heartbeats, and fences a lapsed lease off", async () => {
    const sessionId = await newSession({ team: "blue" });
    const work = await pollFor(sessionId, "w1");
    expect(work).toMatchObject({ state: "queued", environment_id: environmentId, metadata: { team: "blue" }, acknowledged_at: null });
    const token = tokenOf(work);
    expect(token).toMatch(/^mhwt_/);

    const other = await failure(worker.beta.environments.work.ack(work.id, { environment_id: environmentId }, { headers: { "Anthropic-Worker-ID": "w2" } }));
    expect(other).toBeInstanceOf(Anthropic.ConflictError);
    const acked = await worker.beta.environments.work.ack(work.id, { environment_id: environmentId }, { headers: { "Anthropic-Worker-ID": "w1" } });
    expect(acked).toMatchObject({ state: "starting", secret: null });
    expect(acked.acknowledged_at).not.toBeNull();

    const mine = workerClient(stack.gateway.url, token);
    const first = await mine.beta.environments.work.heartbeat(work.id, { environment_id: environmentId, expected_last_heartbeat: "NO_HEARTBEAT" });
    expect(first).toMatchObject({ type: "work_heartbeat", lease_extended: true, state: "active", ttl_seconds: 1 });
    const second = await mine.beta.environments.work.heartbeat(work.id, {
      environment_id: environmentId,
      expected_last_heartbeat: first.last_heartbeat,
      desired_ttl_seconds: 5000,
    });
    expect(second.ttl_seconds).toBe(600);
    // The token reaches the session while the lease holds (here for 600 s: the 1 s leases below
    // may lapse between two calls on a busy machine).
    expect((await mine.beta.sessions.retrieve(sessionId)).id).toBe(sessionId);
    const stale = await failure(mine.beta.environments.work.heartbeat(work.id, { environment_id: environmentId, expected_last_heartbeat: first.last_heartbeat }));
    expect(stale).toBeInstanceOf(BetaHeartbeatPreconditionFailedError);
    expect(stale.details).toEqual({
      error_code: "heartbeat_precondition_failed",
      current_state: { state: "active", last_heartbeat: second.last_heartbeat, lease_extended: false, ttl_seconds: 600 },
    });
    // null (the SDK sends `expected_last_heartbeat=` and `desired_ttl_seconds=`): no check, the default TTL.
    const unconditional = await mine.beta.environments.work.heartbeat(work.id, {
      environment_id: environmentId,
      expected_last_heartbeat: null,
      desired_ttl_seconds: null,
    });
    expect(unconditional).toMatchObject({ lease_extended: true, state: "active", ttl_seconds: 1 });
    // Back to a 1 s lease, then let it lapse: the next poll hands the item out again.
    const third = await mine.beta.environments.work.heartbeat(work.id, { environment_id: environmentId, expected_last_heartbeat: unconditional.last_heartbeat, desired_ttl_seconds: 1 });
    // A fixed wait on purpose: the 1 s lease lapsing with time is what is tested.
    await new Promise((r) => setTimeout(r, 1500));
    // Lapsed, not yet handed out again: the token no longer reaches the session.
    expect(await failure(mine.beta.sessions.retrieve(sessionId))).toBeInstanceOf(Anthropic.PermissionDeniedError);
    const again = await pollFor(sessionId, "w2");
    expect(again.id).toBe(work.id);
    expect(tokenOf(again)).not.toBe(token);

    const lost = await failure(mine.beta.environments.work.heartbeat(work.id, { environment_id: environmentId, expected_last_heartbeat: third.last_heartbeat }));
    expect(lost).toBeInstanceOf(BetaHeartbeatPreconditionFailedError);
    expect((lost.details as { current_state: unknown }).current_state).toEqual({ state: "queued", last_heartbeat: null, lease_extended: false, ttl_seconds: 1 });
    expect(await failure(mine.beta.sessions.retrieve(sessionId))).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(await failure(mine.beta.environments.work.stop(work.id, { environment_id: environmentId, force: true }))).toBeInstanceOf(Anthropic.ConflictError);
  });
});

describe("a work item's sessions token", () => {
  it("acts for its session only, sends tool results only, and the session completes on them", async () => {
    const sessionId = await newSession();
    const elsewhere = await newSession();
    const work = await pollFor(sessionId, "w3");
    await worker.beta.environments.work.ack(work.id, { environment_id: environmentId });
    const mine = workerClient(stack.gateway.url, tokenOf(work));
    // The ack's lease is this file's 1 s: held for the test, or it may lapse mid-turn on a busy machine.
    await mine.beta.environments.work.heartbeat(work.id, { environment_id: environmentId, expected_last_heartbeat: "NO_HEARTBEAT", desired_ttl_seconds: 60 });
    expect((await mine.beta.sessions.retrieve(sessionId)).id).toBe(sessionId);
    expect(await failure(mine.beta.sessions.retrieve(elsewhere))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(await failure(mine.beta.environments.work.poll(environmentId))).toBeInstanceOf(Anthropic.PermissionDeniedError);
    const say = await failure(mine.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text: "hi" }] }] }));
    expect(say).toBeInstanceOf(Anthropic.PermissionDeniedError);

    const use = await waitForToolUse(mine, sessionId);
    await mine.beta.sessions.events.send(sessionId, {
      events: [{ type: "user.tool_result", tool_use_id: use, content: [{ type: "text", text: "hi from the machine" }] }],
    });
    await waitFor(async () => (await mine.beta.sessions.retrieve(sessionId)).status === "idle", "the turn to end");
    const last = [];
    // The idle, the session.usage before it, the span, the message.
    for await (const e of mine.beta.sessions.events.list(sessionId, { order: "desc", limit: 4 })) {
      last.push(e);
      if (last.length === 4) break;
    }
    expect(last.some((e) => e.type === "agent.message" && e.content.some((c) => c.type === "text" && c.text === "got hi from the machine"))).toBe(true);
    await mine.beta.environments.work.stop(work.id, { environment_id: environmentId, force: true });
  });
});

describe("a session that needs hands", () => {
  it("gets a new item when its worker stops the one it had; not after the tenant stops it, nor once deleted", async () => {
    const sessionId = await newSession();
    const work = await pollFor(sessionId, "w5");
    await worker.beta.environments.work.ack(work.id, { environment_id: environmentId });
    await waitForToolUse(sdk, sessionId);
    const mine = workerClient(stack.gateway.url, tokenOf(work));
    await mine.beta.environments.work.stop(work.id, { environment_id: environmentId, force: true });
    const next = await pollFor(sessionId, "w5");
    expect(next.id).not.toBe(work.id);

    // The tenant asks the active item to wind down; its worker then force-stops it as the SDK's
    // worker does on exit (the session still waits for its tool result): nothing new is queued.
    await worker.beta.environments.work.ack(next.id, { environment_id: environmentId });
    const nextWorker = workerClient(stack.gateway.url, tokenOf(next));
    await nextWorker.beta.environments.work.heartbeat(next.id, { environment_id: environmentId, expected_last_heartbeat: "NO_HEARTBEAT", desired_ttl_seconds: 60 });
    expect((await sdk.beta.environments.work.stop(next.id, { environment_id: environmentId })).state).toBe("stopping");
    expect((await nextWorker.beta.environments.work.stop(next.id, { environment_id: environmentId, force: true })).state).toBe("stopped");
    expect((await sdk.beta.sessions.retrieve(sessionId)).status).toBe("running");
    const other = await newSession();
    await sdk.beta.sessions.delete(other);
    const states = new Map<string, string[]>();
    for await (const w of worker.beta.environments.work.list(environmentId)) states.set(w.data.id, [...(states.get(w.data.id) ?? []), w.state]);
    expect(states.get(sessionId)).toEqual(["stopped", "stopped"]);
    expect(states.get(other)).toEqual(["stopped"]);
  });
});

describe("an event stream opened with a sessions token", () => {
  it("ends with a permission error once the item stops", async () => {
    const sessionId = await newSession();
    const work = await pollFor(sessionId, "w6");
    await worker.beta.environments.work.ack(work.id, { environment_id: environmentId });
    const mine = workerClient(stack.gateway.url, tokenOf(work));
    // Held for a minute: with the ack's 1 s lease the token could lapse within the window below
    // on a busy machine, ending the stream for that reason instead of the stop's.
    await mine.beta.environments.work.heartbeat(work.id, { environment_id: environmentId, expected_last_heartbeat: "NO_HEARTBEAT", desired_ttl_seconds: 60 });
    const stream = await mine.beta.sessions.events.stream(sessionId);
    const read = (async () => {
      try {
        for await (const e of stream) void e;
        return "ended without an error";
      } catch (err) {
        return err instanceof Anthropic.APIError ? `${err.status ?? "-"} ${err.message}` : String(err);
      }
    })();
    // Open for a few heartbeats while the token is current.
    // A fixed window on purpose: proves the stream stays open for a while (nothing happens).
    const early = await Promise.race([read, new Promise((r) => setTimeout(() => r("open"), 700))]);
    expect(early).toBe("open");
    await sdk.beta.environments.work.stop(work.id, { environment_id: environmentId, force: true });
    const started = Date.now();
    expect(await read).toMatch(/no longer acts for the session/);
    // At its next heartbeat (200 ms here), not when the minute's lease would end.
    expect(Date.now() - started).toBeLessThan(15_000);
    await sdk.beta.sessions.delete(sessionId);
  });
});

describe("the tenant's API key", () => {
  it("retrieves and updates items, reads the stats, and stops: gracefully, then at once", async () => {
    const sessionId = await newSession({ team: "red" });
    const work = await pollFor(sessionId, "w4");
    expect((await sdk.beta.environments.work.stats(environmentId)).pending).toBeGreaterThanOrEqual(1);
    await worker.beta.environments.work.ack(work.id, { environment_id: environmentId });
    const mine = workerClient(stack.gateway.url, tokenOf(work));
    await mine.beta.environments.work.heartbeat(work.id, { environment_id: environmentId, expected_last_heartbeat: "NO_HEARTBEAT", desired_ttl_seconds: 60 });

    const got = await sdk.beta.environments.work.retrieve(work.id, { environment_id: environmentId });
    expect(got).toMatchObject({ id: work.id, state: "active", secret: null, metadata: { team: "red" } });
    const updated = await sdk.beta.environments.work.update(work.id, { environment_id: environmentId, metadata: { team: null, ticket: "T-1" } });
    expect(updated.metadata).toEqual({ ticket: "T-1" });
    expect(await failure(stack.client(KEY_B).sdk.beta.environments.work.retrieve(work.id, { environment_id: environmentId }))).toBeInstanceOf(
      Anthropic.NotFoundError,
    );

    expect((await sdk.beta.environments.work.stop(work.id, { environment_id: environmentId })).state).toBe("stopping");
    const beat = await mine.beta.environments.work.heartbeat(work.id, { environment_id: environmentId, expected_last_heartbeat: "anything: not compared while stopping" });
    expect(beat).toMatchObject({ state: "stopping", lease_extended: true });
    const stopped = await sdk.beta.environments.work.stop(work.id, { environment_id: environmentId, force: true });
    expect(stopped.state).toBe("stopped");
    expect(stopped.stopped_at).not.toBeNull();
    expect(await mine.beta.environments.work.heartbeat(work.id, { environment_id: environmentId })).toMatchObject({ state: "stopped", lease_extended: false });
    expect(await failure(sdk.beta.environments.work.stop(work.id, { environment_id: environmentId }))).toBeInstanceOf(Anthropic.ConflictError);
    await sdk.beta.sessions.delete(sessionId);
  });
});

describe("a call no worker answers", () => {
  it("is answered with an error once the harness waited MH_WORKER_TOOL_TIMEOUT_MS, and the turn goes on", async () => {
    const sessionId = await newSession();
    const started = Date.now();
    const all: Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[] = [];
    await waitFor(async () => {
      all.length = 0;
      for await (const e of sdk.beta.sessions.events.list(sessionId)) all.push(e);
      return all.at(-1)?.type === "session.status_idle";
    }, "the turn to end");
    expect(Date.now() - started).toBeGreaterThanOrEqual(WORKER_TOOL_TIMEOUT_MS - 500);
    const answer = all.find((e) => e.type === "agent.tool_result");
    expect(answer?.type === "agent.tool_result" && answer.is_error).toBe(true);
    const message = all.filter((e) => e.type === "agent.message").at(-1);
    expect(message?.type === "agent.message" && message.content[0]?.type === "text" && message.content[0].text).toMatch(
      new RegExp(`^got no worker of the self-hosted environment ${environmentId} answered this tool call within 5 s`),
    );
  });
});

async function waitFor(probe: () => Promise<boolean>, what: string): Promise<void> {
  await eventually(async () => ((await probe()) ? true : undefined), what, 20_000);
}

async function waitForToolUse(client: Anthropic, sessionId: string): Promise<string> {
  return eventually(async () => {
    for await (const e of client.beta.sessions.events.list(sessionId)) if (e.type === "agent.tool_use") return e.id;
    return undefined;
  }, "the agent's tool call");
}
