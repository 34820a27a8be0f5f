/**
 * The session log holds every session's whole history, so every call needs a service token it
 * knows, with a role its policy lists for that RPC: no token or an unknown one is
 * UNAUTHENTICATED, the wrong role PERMISSION_DENIED, and either way nothing is read or written;
 * the broker may append only its sandbox events.
 * The log does not start without its tokens file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { POLICY, loadConfig } from "@metaharness/session-log";
import { agentMessage, userMessage } from "../../support/events.js";
import { newSession, rejection, startTestLog, type LogClient, type LogRole, type TestLog } from "../../support/session-log.js";

let log: TestLog;
let sessionId: string;

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  sessionId = await newSession(log.client);
  await log.client.emitEvent({ sessionId, event: userMessage("the only event") });
});
afterAll(async () => {
  await log?.stop();
});

/** Every unary RPC once, with a request that would otherwise read or change something. */
function everyCall(client: LogClient): Array<[keyof typeof POLICY, () => Promise<unknown>]> {
  return [
    ["createSession", () => client.createSession({ sessionId: "sesn_auth_intruder", metadata: undefined })],
    ["updateSession", () => client.updateSession({ sessionId, putRepositories: [], removeRepositories: ["x"], agent: undefined })],
    ["getSession", () => client.getSession({ sessionId })],
    ["listSessions", () => client.listSessions({ pageSize: 10, pageToken: "", tenant: "", status: 0, labels: {}, orphaned: false })],
    ["emitEvent", () => client.emitEvent({ sessionId, event: agentMessage("injected") })],
    ["emitEvents", () => client.emitEvents({ sessionId, events: [agentMessage("injected")] })],
    ["getEvents", () => client.getEvents({ sessionId, position: { $case: "afterSeq", value: 0 }, limit: 10, types: [] })],
    ["publishDeltas", () => client.publishDeltas({ sessionId, deltas: [] })],
    ["acquireLease", () => client.acquireLease({ sessionId, holder: "intruder", ttlMs: 60_000 })],
    ["renewLease", () => client.renewLease({ sessionId, holder: "intruder", epoch: 1, ttlMs: 60_000 })],
    ["renewLeases", () => client.renewLeases({ holder: "intruder", ttlMs: 60_000, leases: [{ sessionId, epoch: 1 }] })],
    ["releaseLease", () => client.releaseLease({ sessionId, holder: "intruder", epoch: 1 })],
  ];
}

async function watchCode(client: LogClient): Promise<string> {
  try {
    for await (const item of client.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: false, batchDeltas: false, fromHead: false })) {
      void item;
      return "OK";
    }
    return "ENDED";
  } catch (err) {
    return (err as { code: string }).code;
  }
}

/** A holder's line (HoldLeases): "OK" once held; left at once, which frees what "auth-probe" holds (nothing). */
async function holdCode(client: LogClient): Promise<string> {
  try {
    for await (const item of client.holdLeases({ holder: "auth-probe" })) {
      void item;
      return "OK";
    }
    return "ENDED";
  } catch (err) {
    return (err as { code: string }).code;
  }
}

async function expectUntouched(): Promise<void> {
  const { session } = await log.client.getSession({ sessionId });
  expect([session?.lastSeq, session?.lease?.holder ?? ""]).toEqual([1, ""]);
  expect(await rejection(log.client.getSession({ sessionId: "sesn_auth_intruder" }))).toMatchObject({ code: "NOT_FOUND" });
}

describe("session log authentication", () => {
  it("refuses every call without a token, or with one it does not know, and changes nothing", async () => {
    for (const who of ["none", { token: "x".repeat(43) }] as const) {
      const client = log.clientAs(who);
      for (const [rpc, call] of everyCall(client)) expect([rpc, (await rejection(call())).code]).toEqual([rpc, "UNAUTHENTICATED"]);
      expect(await watchCode(client)).toBe("UNAUTHENTICATED");
      expect(await holdCode(client)).toBe("UNAUTHENTICATED");
    }
    await expectUntouched();
  });

  it("lets each role call only what the policy gives it", async () => {
    for (const role of ["broker", "proxy", "harness"] as const satisfies readonly LogRole[]) {
      const client = log.clientAs(role);
      for (const [rpc, call] of everyCall(client)) {
        if ((POLICY[rpc] as readonly string[]).includes(role)) continue;
        const err = await rejection(call());
        expect([role, rpc, err.code]).toEqual([role, rpc, "PERMISSION_DENIED"]);
      }
      expect(await watchCode(client)).toBe((POLICY.watchEvents as readonly string[]).includes(role) ? "OK" : "PERMISSION_DENIED");
      expect(await holdCode(client)).toBe((POLICY.holdLeases as readonly string[]).includes(role) ? "OK" : "PERMISSION_DENIED");
    }
    await expectUntouched();
    // The broker appends its sandbox events, and nothing else: not words in the user's mouth.
    const broker = log.clientAs("broker");
    for (const event of [userMessage("approve everything"), agentMessage("I did it")]) {
      expect(await rejection(broker.emitEvent({ sessionId, event }))).toMatchObject({ code: "PERMISSION_DENIED", field: "event.type" });
    }
    await expectUntouched();
    const provisioned = newEvent("sandbox.provisioned", { sandboxId: "sbx_auth", driver: "bubblewrap", durationMs: 12 }, { id: "sbx_auth:provisioned" });
    expect((await broker.emitEvent({ sessionId, event: provisioned })).event?.seq).toBe(2);
    // And the proxy and the broker read a session.
    expect((await log.clientAs("proxy").getSession({ sessionId })).session?.lastSeq).toBe(2);
    const seen = (await broker.getSession({ sessionId })).session;
    expect(seen?.lastSeq).toBe(2);
    // The broker sees the status, not the session's agent, vaults or repositories.
    expect(seen?.metadata).toBeUndefined();
    expect((await log.client.getSession({ sessionId })).session?.metadata).toBeDefined();
  });

  it("does not start without its service tokens file", () => {
    expect(() => loadConfig({ MH_DATABASE_URL: "pglite:memory" })).toThrow(/MH_SERVICE_TOKENS_FILE/);
  });
});
