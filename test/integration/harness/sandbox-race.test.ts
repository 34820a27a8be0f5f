/**
 * Two harnesses racing for one session's first tool call, forced into the order seen once under
 * load in the crash loop: harness A holds the lease, lists the session's sandboxes (none), and
 * stalls before it provisions; its lease expires and harness B takes it, lists (none), provisions
 * and runs the call; then A wakes up, provisions and runs the same call. The log fences A's
 * result (its epoch is stale), but the broker is not fenced by the lease: the call must still run
 * once, in the one sandbox both end up using. Real session log, real broker, real bubblewrap; the
 * harness's own SandboxPort, with its broker calls held at a gate to force the order.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { SandboxPort, type BrokerClient } from "@metaharness/harness";
import { eventually } from "../../support/eventually.js";
import { callId, run, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";
import { newSession, rejection, startTestLog, type TestLog } from "../../support/session-log.js";

let log: TestLog;
let broker: TestBroker;

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  broker = await startTestBroker({ ...log.reach("broker"), MH_WARM_POOL_SIZE: "0" });
});
afterAll(async () => {
  await broker?.stop();
  await log?.stop();
});

/** A harness's broker client whose Provision waits for `open`, and which says when it has listed. */
function stalled(client: BrokerClient, open: Promise<void>): { client: BrokerClient; listed: Promise<void> } {
  let listed!: () => void;
  const seen = new Promise<void>((resolve) => (listed = resolve));
  const gated = new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === "listSandboxes") {
        return async (...args: Parameters<BrokerClient["listSandboxes"]>) => {
          const res = await target.listSandboxes(...args);
          listed();
          return res;
        };
      }
      if (prop === "provision") {
        return async (...args: Parameters<BrokerClient["provision"]>) => {
          await open;
          return target.provision(...args);
        };
      }
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  return { client: gated, listed: seen };
}

/** How many lines `ran` the session's ready sandboxes hold in their file `runs`. */
async function runsIn(sessionId: string): Promise<number> {
  const { sandboxes } = await broker.client.listSandboxes({ sessionId, includeEnded: false });
  let lines = 0;
  for (const s of sandboxes) {
    const res = await run(broker.client, s.sandboxId, "bash", { command: "cat runs 2>/dev/null || true" }, { sessionId });
    lines += res.output.split("\n").filter((l) => l.trim() === "ran").length;
  }
  return lines;
}

async function ledgerRows(sessionId: string, id: string): Promise<string[]> {
  const db = new pg.Client({ connectionString: broker.db.url });
  await db.connect();
  try {
    const { rows } = await db.query<{ sandbox_id: string }>("SELECT sandbox_id FROM sandbox_calls WHERE session_id = $1 AND call_id = $2", [sessionId, id]);
    return rows.map((r) => r.sandbox_id);
  } finally {
    await db.end();
  }
}

describe("two harnesses racing for a session's first tool call", () => {
  it("run it once, in one sandbox, when the lease changes hands between list and provision", async () => {
    const sessionId = await newSession(log.client);
    const toolUseId = callId();
    // A holds the lease and records the model's tool call.
    const a = (await log.client.acquireLease({ sessionId, holder: "harness-a", ttlMs: 500 })).lease!;
    const toolUse = newEvent("agent.tool_use", { name: "bash", input: { command: "echo ran >> runs" }, evaluatedPermission: 0, sandboxId: "" }, { id: toolUseId });
    await log.client.emitEvents({ sessionId, events: [toolUse], leaseEpoch: a.epoch });

    let openA!: () => void;
    const harnessA = stalled(broker.clientAs("harness"), new Promise<void>((resolve) => (openA = resolve)));
    const portA = new SandboxPort(harnessA.client, sessionId);
    const portB = new SandboxPort(broker.clientAs("harness"), sessionId);
    const controller = new AbortController();

    // A lists (no sandbox yet) and stalls before Provision, as a harness on a loaded machine does.
    const resultA = portA.execute("bash", { command: "echo ran >> runs" }, toolUseId, controller.signal, toolUse.seq);
    await harnessA.listed;
    // A's lease runs out while it stalls (it renews nothing): B takes it over.
    const b = await eventually(async () => {
      try {
        return (await log.client.acquireLease({ sessionId, holder: "harness-b", ttlMs: 60_000 })).lease;
      } catch (err) {
        if ((err as { code?: string }).code === "FAILED_PRECONDITION") return undefined; // A's lease still runs
        throw err;
      }
    }, "harness B to take the lease over from A");
    expect(b.epoch).toBeGreaterThan(a.epoch);
    // B resumes the session: the call has no result, so it runs it.
    const outcomeB = await portB.execute("bash", { command: "echo ran >> runs" }, toolUseId, controller.signal, toolUse.seq);
    expect(outcomeB).toMatchObject({ isError: false, exitCode: 0 });
    // A wakes up and carries on with the step it had decided.
    openA();
    const outcomeA = await resultA;

    // The log takes B's result and fences A's.
    const result = (who: string) => newEvent("agent.tool_result", { toolUseId, content: [], isError: false, exitCode: 0 }, { id: `${toolUseId}.result.${who}` });
    await log.client.emitEvents({ sessionId, events: [result("b")], leaseEpoch: b.epoch });
    expect((await rejection(log.client.emitEvents({ sessionId, events: [result("a")], leaseEpoch: a.epoch }))).code).toBe("ABORTED");

    // The broker ran the call once: one ledger row, one line in the session's workspace.
    const rows = await ledgerRows(sessionId, toolUseId);
    expect({ rows: rows.length, runs: await runsIn(sessionId), a: outcomeA.isError }).toEqual({ rows: 1, runs: 1, a: false });
    // And both harnesses use the one sandbox from now on: a second call lands where the first ran.
    const next = callId();
    const seenA = await portA.execute("bash", { command: "cat runs" }, next, controller.signal);
    const seenB = await portB.execute("bash", { command: "cat runs" }, `${next}b`, controller.signal);
    expect([seenA.output.trim(), seenB.output.trim()]).toEqual(["ran", "ran"]);
    const { sandboxes } = await broker.client.listSandboxes({ sessionId, includeEnded: false });
    expect(sandboxes).toHaveLength(1);
  }, 60_000);
});
