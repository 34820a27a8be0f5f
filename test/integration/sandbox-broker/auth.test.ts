/**
 * The broker runs code, so every call needs a service token the broker knows, with a role its
 * policy lists for that RPC: no token or an unknown one is UNAUTHENTICATED, the wrong role
 * PERMISSION_DENIED, and either way nothing is provisioned, run or registered. A harness names
 * the session it acts for; a hand registers only the kinds its token was given. The broker does not start without its tokens file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxBrokerClient, type ConnectHandRequest } from "@metaharness/proto";
import { createClient } from "@metaharness/service-kit/grpc";
import { loadConfig } from "@metaharness/sandbox-broker";
import { callId, provision, rejection, run, startTestBroker, type BrokerClient, type TestBroker } from "../../support/sandbox-broker.js";

let broker: TestBroker;
let sandboxId: string;
const sessionId = "sesn_auth_owner";

beforeAll(async () => {
  broker = await startTestBroker();
  sandboxId = await provision(broker.clientAs("harness"), sessionId);
});
afterAll(async () => {
  await broker?.stop();
});

const bash = (command: string, session: string) => ({ sandboxId, name: "bash", input: { command }, callId: callId(), sessionId: session, timeoutMs: 0, eventSeq: 0 });

/** Every unary RPC once, with a request that would otherwise do something. */
function everyCall(client: BrokerClient): Array<[string, Promise<unknown>]> {
  return [
    ["Provision", client.provision({ fork: undefined, key: "", sessionId: "sesn_auth_intruder", resources: undefined, handKind: "" })],
    ["AddRepositories", client.addRepositories({ sandboxId, sessionId, repositories: [] })],
    ["Execute", client.execute(bash("touch /workspace/intruder", sessionId))],
    ["Release", client.release({ sandboxId, sessionId })],
    ["ListSandboxes", client.listSandboxes({ sessionId: "", includeEnded: true })],
    ["DescribeSandbox", client.describeSandbox({ sandboxId })],
    ["Transfer", client.transfer({ sandboxId, fromSession: sessionId, toSession: "sesn_auth_intruder" })],
  ];
}

async function expectUntouched(): Promise<void> {
  const { sandboxes } = await broker.client.listSandboxes({ sessionId: "", includeEnded: true });
  expect(sandboxes.map((s) => [s.sessionId, s.state])).toEqual([[sessionId, expect.anything()]]);
  expect((await broker.client.describeSandbox({ sandboxId })).sandbox?.sessionId).toBe(sessionId);
  const ls = await run(broker.client, sandboxId, "bash", { command: "ls -A /workspace" }, { sessionId });
  expect(ls).toMatchObject({ isError: false, output: "" });
}

describe("sandbox broker authentication", () => {
  it("refuses every call without a token, or with one it does not know, and changes nothing", async () => {
    for (const who of ["none", { token: "x".repeat(43) }] as const) {
      for (const [rpc, call] of everyCall(broker.clientAs(who))) {
        const err = await rejection(call);
        expect([rpc, err.code]).toEqual([rpc, "UNAUTHENTICATED"]);
      }
    }
    await expectUntouched();
  });

  it("lets a role call only what the policy gives it", async () => {
    for (const [rpc, call] of everyCall(broker.clientAs("hand"))) {
      const err = await rejection(call);
      expect([rpc, err.code, err.message]).toEqual([rpc, "PERMISSION_DENIED", `test-hand (role hand) may not call metaharness.v1.SandboxBroker/${rpc}`]);
    }
    const harness = broker.clientAs("harness");
    expect(await rejection(harness.describeSandbox({ sandboxId }))).toMatchObject({ code: "PERMISSION_DENIED" });
    expect(await rejection(harness.transfer({ sandboxId, fromSession: sessionId, toSession: "sesn_auth_intruder" }))).toMatchObject({
      code: "PERMISSION_DENIED",
    });
    await expectUntouched();
  });

  it("makes a harness name its session: an empty one no longer skips the holder check", async () => {
    const harness = broker.clientAs("harness");
    expect(await rejection(harness.execute(bash("touch /workspace/x", "")))).toMatchObject({ code: "INVALID_ARGUMENT", field: "session_id" });
    expect(await rejection(harness.release({ sandboxId, sessionId: "" }))).toMatchObject({ code: "INVALID_ARGUMENT", field: "session_id" });
    expect(await rejection(harness.listSandboxes({ sessionId: "", includeEnded: true }))).toMatchObject({ code: "INVALID_ARGUMENT", field: "session_id" });
    expect(await rejection(harness.execute(bash("touch /workspace/x", "sesn_auth_other")))).toMatchObject({ code: "PERMISSION_DENIED", field: "session_id" });
    await expectUntouched();

    expect(await harness.execute(bash("echo $((6 * 7))", sessionId))).toMatchObject({ isError: false, output: "42" });
    const { sandboxes } = await harness.listSandboxes({ sessionId, includeEnded: false });
    expect(sandboxes.map((s) => s.sandboxId)).toEqual([sandboxId]);
  });

  it("lets only a hand connect", async () => {
    const register: ConnectHandRequest = { message: { $case: "register", value: { kind: "auth-probe", handId: "probe-1", tools: ["ping"], toolSpecs: [] } } };
    for (const [who, code] of [
      [undefined, "UNAUTHENTICATED"],
      [broker.tokens.tokens.harness, "PERMISSION_DENIED"],
      [broker.tokens.tokens.admin, "PERMISSION_DENIED"],
    ] as const) {
      const raw = createClient(SandboxBrokerClient, broker.address, who === undefined ? {} : { bearerToken: who });
      const stream = raw.connectHand();
      const ended = new Promise<{ code: number; details: string }>((resolve) => stream.on("error", (e: { code: number; details: string }) => resolve(e)));
      stream.on("data", () => undefined);
      stream.write(register);
      const err = await ended;
      raw.close();
      expect([who === undefined ? "none" : "token", err.code]).toEqual([who === undefined ? "none" : "token", code === "UNAUTHENTICATED" ? 16 : 7]);
    }
    // A hand's token registers only the kinds its entry lists (HAND_KINDS here).
    const hand = createClient(SandboxBrokerClient, broker.address, { bearerToken: broker.tokens.tokens.hand });
    const stream = hand.connectHand();
    const refused = new Promise<{ code: number; details: string }>((resolve) => stream.on("error", (e: { code: number; details: string }) => resolve(e)));
    stream.on("data", () => undefined);
    stream.write(register);
    expect(await refused).toMatchObject({ code: 7, details: "this hand's token may register kv-device, mute, not auth-probe" });
    hand.close();
    // Nothing registered: a sandbox on that hand cannot be had.
    const none = await rejection(broker.client.provision({ fork: undefined, key: "", sessionId, resources: undefined, handKind: "auth-probe" }));
    expect(none).toMatchObject({ code: "FAILED_PRECONDITION", field: "hand_kind" });
  });

  it("does not start without its service tokens file", () => {
    expect(() => loadConfig({ MH_DATABASE_URL: "pglite:memory" })).toThrow(/MH_SERVICE_TOKENS_FILE/);
  });
});
