/**
 * Sandboxes as cattle: bounds-checked provisioning, transfer between sessions, release when the
 * session ends (is deleted), idle and lifetime reaping, the warm pool, and what a broker knows after it shut down or crashed (its sandboxes
 * are gone, its running calls were interrupted, never re-run), with events in the session log.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEvent, payloadOf } from "@metaharness/events";
import { NetworkMode, SandboxState } from "@metaharness/proto";
import { INTERRUPTED_OUTPUT, RESTART_REASON, SHUTDOWN_REASON } from "@metaharness/sandbox-broker";
import { eventually } from "../../support/eventually.js";
import { brokerEnv, callId, provision, rejection, run, spawnBrokerProcess, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";
import { startTestLog, type TestLog } from "../../support/session-log.js";

let log: TestLog;
let broker: TestBroker;
let sessionId: string;

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  const { session } = await log.client.createSession({ sessionId: "", metadata: undefined });
  sessionId = session!.sessionId;
  broker = await startTestBroker({
    ...log.reach("broker"),
    MH_REAP_INTERVAL_MS: "100",
    MH_SESSION_CHECK_MS: "200",
    MH_WARM_POOL_SIZE: "2",
  });
});
afterAll(async () => {
  await broker?.stop();
  await log?.stop();
});

async function newSession(): Promise<string> {
  return (await log.client.createSession({ sessionId: "", metadata: undefined })).session!.sessionId;
}

async function state(id: string): Promise<{ state: SandboxState; reason: string }> {
  const { sandbox } = await broker.client.describeSandbox({ sandboxId: id });
  return { state: sandbox!.state, reason: sandbox!.reason };
}

/** Waits until the broker has claimed call `id` in its ledger (it is running). */
async function claimed(id: string): Promise<void> {
  const db = new pg.Client({ connectionString: broker.db.url });
  await db.connect();
  try {
    await eventually(async () => {
      const { rows } = await db.query("SELECT 1 FROM sandbox_calls WHERE call_id = $1", [id]);
      return rows.length > 0 ? true : undefined;
    }, `call ${id} to be claimed`);
  } finally {
    await db.end();
  }
}

async function sandboxEvents(id: string): Promise<Array<{ type: string; reason?: string }>> {
  const { events } = await log.client.getEvents({ sessionId, limit: 1000, types: [], position: undefined });
  return events
    .filter((e) => e.id.startsWith(`${id}:`))
    .map((e) => ({ type: e.type, reason: payloadOf(e, "sandbox.released")?.reason ?? payloadOf(e, "sandbox.lost")?.reason }));
}

describe("provisioning", () => {
  it("rejects resources out of bounds, naming every field", async () => {
    const err = await rejection(provision(broker.client, sessionId, { cpuMillis: 1, memoryBytes: 2 ** 50, idleTimeoutSeconds: 999_999_999 }));
    expect(err.code).toBe("INVALID_ARGUMENT");
    expect(err.field).toBe("resources.cpu_millis");
    for (const field of ["resources.cpu_millis", "resources.memory_bytes", "resources.idle_timeout_seconds"]) {
      expect(err.message).toContain(field);
    }
    const path = await rejection(provision(broker.client, sessionId, { files: [{ path: "../escape", content: Buffer.from("x"), mode: 0 }] }));
    expect(path).toMatchObject({ code: "INVALID_ARGUMENT", field: "resources.files[0].path" });
    const allowlist = await rejection(provision(broker.client, sessionId, { network: { mode: NetworkMode.NETWORK_MODE_ALLOWLIST, allowedHosts: ["github.com"], allowPackageManagers: false } }));
    expect(allowlist.code).toBe("FAILED_PRECONDITION");
    const repos = await rejection(provision(broker.client, sessionId, { repositories: [{ url: "https://github.com/a/b", mountPath: "b", checkout: "" }] }));
    expect(repos.code).toBe("UNIMPLEMENTED");
    expect(await rejection(broker.client.provision({ fork: undefined, key: "", sessionId: "", resources: undefined, handKind: "" }))).toMatchObject({ field: "session_id" });
    // Refused before a sandbox starts (its row, written last, could not hold the NUL).
    const before = (await broker.client.listSandboxes({ sessionId, includeEnded: true })).sandboxes.length;
    expect(await rejection(broker.client.provision({ fork: undefined, key: "", sessionId: `${sessionId}\u0000`, resources: undefined, handKind: "" }))).toMatchObject({
      code: "INVALID_ARGUMENT",
      field: "session_id",
    });
    expect((await broker.client.listSandboxes({ sessionId, includeEnded: true })).sandboxes).toHaveLength(before);
  });

  it("serves default requests from the warm pool and says how limits are enforced", async () => {
    await eventually(() => Promise.resolve(broker.handle.warmPool.available === 2 ? true : undefined), "the warm pool to fill");
    const warm = await broker.client.provision({ fork: undefined, key: "", sessionId, resources: undefined, handKind: "" });
    expect(warm.warm).toBe(true);
    expect(warm.sandbox).toMatchObject({ sessionId, driver: "bubblewrap", state: SandboxState.SANDBOX_STATE_READY });
    expect(warm.sandbox?.limits).toBe(broker.handle.limits);
    expect(warm.sandbox?.resources?.memoryBytes).toBe(broker.config.defaultMemoryBytes);
    expect((await run(broker.client, warm.sandbox!.sandboxId, "bash", { command: "echo warm" })).output).toBe("warm");
    const cold = await broker.client.provision({ fork: undefined, key: "",
      sessionId,
      handKind: "",
      resources: { cpuMillis: 500, memoryBytes: 0, diskBytes: 0, maxProcesses: 0, lifetimeSeconds: 0, idleTimeoutSeconds: 0, network: undefined, files: [], repositories: [], packages: undefined },
    });
    expect(cold.warm).toBe(false);
    const listed = await broker.client.listSandboxes({ sessionId, includeEnded: false });
    expect(listed.sandboxes.map((s) => s.sandboxId)).toEqual(expect.arrayContaining([warm.sandbox!.sandboxId, cold.sandbox!.sandboxId]));
    await eventually(async () => ((await sandboxEvents(cold.sandbox!.sandboxId)).length > 0 ? true : undefined), "sandbox.provisioned");
  });
});

describe("the broker's cap (MH_MAX_SANDBOXES)", () => {
  it("counts warm sandboxes: taking from the pool never runs more than the cap", async () => {
    const capped = await startTestBroker({
      ...log.reach("broker"),
      MH_MAX_SANDBOXES: "2",
      MH_WARM_POOL_SIZE: "2",
    });
    try {
      await eventually(() => Promise.resolve(capped.handle.warmPool.available === 2 ? true : undefined), "the warm pool to fill");
      const taken: string[] = [];
      for (let i = 0; i < 2; i++) {
        const res = await capped.client.provision({ fork: undefined, key: "", sessionId, resources: undefined, handKind: "" });
        expect(res.warm).toBe(true);
        taken.push(res.sandbox!.sandboxId);
      }
      const third = await rejection(capped.client.provision({ fork: undefined, key: "", sessionId, resources: undefined, handKind: "" }));
      expect(third.code).toBe("RESOURCE_EXHAUSTED");
      expect(third.message).toContain("MH_MAX_SANDBOXES");
      // Nor does the pool start more behind the sessions' two (it refills a few ms after a take).
      // A fixed wait on purpose: a quiet period proving the pool starts none.
      await new Promise((r) => setTimeout(r, 300));
      expect(capped.handle.warmPool.available).toBe(0);
      // A released sandbox leaves room: the pool takes it back.
      await capped.client.release({ sandboxId: taken[0]!, sessionId });
      await eventually(() => Promise.resolve(capped.handle.warmPool.available === 1 ? true : undefined), "the pool to refill into the freed place");
    } finally {
      await capped.stop();
    }
  });

  it("holds the cap under concurrent Provisions, the pool giving up its place to a new sandbox", async () => {
    const capped = await startTestBroker({ MH_MAX_SANDBOXES: "3", MH_WARM_POOL_SIZE: "1" });
    try {
      await eventually(() => Promise.resolve(capped.handle.warmPool.available === 1 ? true : undefined), "the warm pool to fill");
      // Not the defaults: each starts a new sandbox, all at once.
      const outcomes = await Promise.allSettled(
        Array.from({ length: 5 }, () => provision(capped.client, sessionId, { memoryBytes: 256 * 1024 * 1024 })),
      );
      const refused = outcomes.filter((o) => o.status === "rejected").map((o) => (o.reason as { code: string }).code);
      expect([outcomes.length - refused.length, refused]).toEqual([3, ["RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED"]]);
      // A fixed wait on purpose: a quiet period proving the pool starts no more.
      await new Promise((r) => setTimeout(r, 300));
      expect(capped.handle.warmPool.available).toBe(0);
    } finally {
      await capped.stop();
    }
  });
});

describe("transfer", () => {
  it("only the holding session may transfer; the old holder loses access", async () => {
    const id = await provision(broker.client, sessionId);
    const other = await newSession();
    const wrong = await rejection(broker.client.transfer({ sandboxId: id, fromSession: "sesn_nobody", toSession: other }));
    expect(wrong).toMatchObject({ code: "FAILED_PRECONDITION", field: "from_session" });
    const moved = await broker.client.transfer({ sandboxId: id, fromSession: sessionId, toSession: other });
    expect(moved.sandbox?.sessionId).toBe(other);
    expect((await broker.client.transfer({ sandboxId: id, fromSession: sessionId, toSession: other })).sandbox?.sessionId).toBe(other);
    const denied = await rejection(run(broker.client, id, "bash", { command: "true" }, { sessionId }));
    expect(denied.code).toBe("PERMISSION_DENIED");
    expect((await run(broker.client, id, "bash", { command: "echo mine" }, { sessionId: other })).output).toBe("mine");
    expect((await rejection(broker.client.release({ sandboxId: id, sessionId }))).code).toBe("PERMISSION_DENIED");
    await broker.client.release({ sandboxId: id, sessionId: other });
    expect(await state(id)).toEqual({ state: SandboxState.SANDBOX_STATE_RELEASED, reason: `released by session ${other}` });
  });

  it("is refused by a broker that does not run the sandbox, which changes nothing", async () => {
    const id = await provision(broker.client, sessionId);
    const other = await newSession();
    // Another instance on the same database: it only has the row, not the sandbox's process (it
    // moved the row, and the instance that runs it went on serving the previous session).
    const elsewhere = await broker.start({ MH_BROKER_ID: `${broker.brokerId}-b` });
    const err = await rejection(elsewhere.client.transfer({ sandboxId: id, fromSession: sessionId, toSession: other }));
    expect(err).toMatchObject({ code: "FAILED_PRECONDITION", field: "sandbox_id" });
    expect(err.message).toContain(`run by broker ${broker.brokerId}`);
    expect((await broker.client.describeSandbox({ sandboxId: id })).sandbox?.sessionId).toBe(sessionId);
    expect((await run(broker.client, id, "bash", { command: "echo still mine" }, { sessionId })).output).toBe("still mine");
    await broker.client.release({ sandboxId: id, sessionId });
  });

  it("gives no sandbox to a session the log does not have, or has ended, or whose id is malformed", async () => {
    const ended = await newSession();
    await log.client.emitEvent({ sessionId: ended, event: newEvent("session.status_terminated", {}) });
    const before = (await broker.client.listSandboxes({ sessionId: "", includeEnded: true })).sandboxes.length;
    for (const [target, code] of [["sesn_unknown", "FAILED_PRECONDITION"], [ended, "FAILED_PRECONDITION"], ["café", "INVALID_ARGUMENT"]] as const) {
      const err = await rejection(broker.client.provision({ fork: undefined, key: "", sessionId: target, resources: undefined, handKind: "" }));
      expect(err, target).toMatchObject({ code, field: "session_id" });
    }
    const id = await provision(broker.client, sessionId);
    for (const target of ["sesn_unknown", ended]) {
      const err = await rejection(broker.client.transfer({ sandboxId: id, fromSession: sessionId, toSession: target }));
      expect(err, target).toMatchObject({ code: "FAILED_PRECONDITION", field: "to_session" });
    }
    expect((await run(broker.client, id, "bash", { command: "echo still mine" }, { sessionId })).output).toBe("still mine");
    expect((await broker.client.listSandboxes({ sessionId: "", includeEnded: true })).sandboxes.length).toBe(before + 1);
    await broker.client.release({ sandboxId: id, sessionId });
  });
});

describe("a session that ends", () => {
  it("has its sandboxes released at the next check, saying why; other sessions keep theirs", async () => {
    const doomed = await newSession();
    const sandboxes = [await provision(broker.client, doomed), await provision(broker.client, doomed)];
    const kept = await provision(broker.client, sessionId);
    // What deleting a session through the gateway appends.
    await log.client.emitEvent({ sessionId: doomed, event: newEvent("session.status_terminated", {}) });
    for (const id of sandboxes) {
      await eventually(async () => ((await state(id)).state === SandboxState.SANDBOX_STATE_RELEASED ? true : undefined), `${id} to be released`);
      expect(await state(id)).toEqual({ state: SandboxState.SANDBOX_STATE_RELEASED, reason: "its session ended" });
    }
    expect((await state(kept)).state).toBe(SandboxState.SANDBOX_STATE_READY);
    expect((await run(broker.client, kept, "bash", { command: "echo still here" })).output).toBe("still here");
  });
});

describe("reaping", () => {
  it("releases an idle sandbox after its idle timeout, and a busy one at the end of its lifetime", async () => {
    const idle = await provision(broker.client, sessionId, { idleTimeoutSeconds: 1 });
    const old = await provision(broker.client, sessionId, { lifetimeSeconds: 2 });
    const long = await run(broker.client, old, "bash", { command: "sleep 20" });
    expect(long.isError).toBe(true);
    expect(long.output).toBe(`sandbox ${old} was released: its lifetime of 2 s is over`);
    await eventually(async () => ((await state(idle)).state === SandboxState.SANDBOX_STATE_RELEASED ? true : undefined), "idle reaping");
    expect((await state(idle)).reason).toBe("idle for 1 s (its idle timeout)");
    expect((await run(broker.client, idle, "bash", { command: "true" })).output).toBe(`sandbox ${idle} was released: idle for 1 s (its idle timeout)`);
    await eventually(async () => ((await sandboxEvents(idle)).length === 2 ? true : undefined), "sandbox.released");
    expect(await sandboxEvents(idle)).toEqual([
      { type: "sandbox.provisioned", reason: undefined },
      { type: "sandbox.released", reason: "idle for 1 s (its idle timeout)" },
    ]);
  });
});

describe("broker restarts", () => {
  it("after a crash, old sandboxes are lost and a running call reports its outcome unknown, never re-run", async () => {
    // Its own broker id: a broker that starts marks every READY sandbox of its id as lost.
    const brokerId = `crash-${randomBytes(3).toString("hex")}`;
    const crashing = await spawnBrokerProcess(
      brokerEnv(broker.db.url, brokerId, { ...log.reach("broker"), MH_SERVICE_TOKENS_FILE: broker.tokens.file }),
      broker.tokens.tokens.admin,
    );
    const { sandbox } = await crashing.client.provision({ fork: undefined, key: "", sessionId, resources: undefined, handKind: "" });
    const id = sandbox!.sandboxId;
    const doneId = callId();
    await run(crashing.client, id, "bash", { command: "echo before" }, { callId: doneId });
    const pending = callId();
    const running = run(crashing.client, id, "bash", { command: "sleep 30" }, { callId: pending }).catch(() => undefined);
    await claimed(pending);
    await crashing.crash();
    await running;

    const restarted = await broker.start({ MH_BROKER_ID: brokerId });
    expect(await restarted.client.describeSandbox({ sandboxId: id })).toMatchObject({
      sandbox: { state: SandboxState.SANDBOX_STATE_LOST, reason: RESTART_REASON },
    });
    const interrupted = await run(restarted.client, id, "bash", { command: "sleep 30" }, { callId: pending });
    expect(interrupted).toMatchObject({ isError: true, replayed: true, output: INTERRUPTED_OUTPUT });
    const replay = await run(restarted.client, id, "bash", { command: "echo before" }, { callId: doneId });
    expect(replay).toMatchObject({ isError: false, replayed: true, output: "before" });
    const next = await run(restarted.client, id, "bash", { command: "echo after" });
    expect(next).toMatchObject({ isError: true, output: `sandbox ${id} was lost: ${RESTART_REASON}` });
    await eventually(async () => ((await sandboxEvents(id)).some((e) => e.type === "sandbox.lost") ? true : undefined), "sandbox.lost");
    await restarted.handle.stop();
  });

  it("a graceful stop releases every sandbox with the reason", async () => {
    const second = await broker.start({ MH_BROKER_ID: `stop-${randomBytes(3).toString("hex")}` });
    const { sandbox } = await second.client.provision({ fork: undefined, key: "", sessionId, resources: undefined, handKind: "" });
    const pending = callId();
    const running = run(second.client, sandbox!.sandboxId, "bash", { command: "sleep 30" }, { callId: pending });
    await claimed(pending);
    await second.handle.stop();
    expect((await running).output).toBe(`sandbox ${sandbox!.sandboxId} was released: ${SHUTDOWN_REASON}`);
    expect(await broker.client.describeSandbox({ sandboxId: sandbox!.sandboxId })).toMatchObject({
      sandbox: { state: SandboxState.SANDBOX_STATE_RELEASED, reason: SHUTDOWN_REASON },
    });
  });
});
