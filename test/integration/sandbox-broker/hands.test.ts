/**
 * External hands: the example kv device, run as its own process, registers over ConnectHand; one
 * session uses a bubblewrap sandbox and the device at once; when the device goes away its
 * sandbox is lost (a tool result saying so, an event in the log) and the other one carries on.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxBrokerClient, SandboxState, type ConnectHandRequest } from "@metaharness/proto";
import { createClient } from "@metaharness/service-kit/grpc";
import { startKvDevice } from "@metaharness/sandbox-broker";
import { eventually } from "../../support/eventually.js";
import { callId, provision, rejection, run, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";
import { startTestLog, type TestLog } from "../../support/session-log.js";

const KV_DEVICE_JS = fileURLToPath(new URL("../../../apps/sandbox-broker/dist/examples/kv-device.js", import.meta.url));

let log: TestLog;
let broker: TestBroker;
let device: ChildProcess | undefined;
let sessionId: string;

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  sessionId = (await log.client.createSession({ sessionId: "", metadata: undefined })).session!.sessionId;
  broker = await startTestBroker(log.reach("broker"));
});
afterAll(async () => {
  device?.kill("SIGKILL");
  await broker?.stop();
  await log?.stop();
});

async function provisionHand(kind: string, session = sessionId): Promise<string> {
  return eventually(async () => {
    try {
      const res = await broker.client.provision({ fork: undefined, key: "", sessionId: session, resources: undefined, handKind: kind });
      return res.sandbox!.sandboxId;
    } catch (err) {
      if ((err as { code?: string }).code === "FAILED_PRECONDITION") return undefined; // not connected yet
      throw err;
    }
  }, `a ${kind} hand to connect`);
}

describe("external hands", () => {
  it("a session uses a bubblewrap sandbox and the kv device at once", async () => {
    const missing = await rejection(broker.client.provision({ fork: undefined, key: "", sessionId, resources: undefined, handKind: "kv-device" }));
    expect(missing).toMatchObject({ code: "FAILED_PRECONDITION", field: "hand_kind" });

    device = spawn(process.execPath, [KV_DEVICE_JS], {
      env: { MH_SANDBOX_BROKER_ADDR: broker.address, MH_HAND_TOKEN_FILE: broker.tokens.tokenFile.hand, MH_HAND_ID: "kv-lab-1", MH_LOG_LEVEL: "silent" },
      stdio: "ignore",
    });
    const kv = await provisionHand("kv-device");
    const listed = await broker.client.listHandTools({ kind: "kv-device" });
    expect(listed.handIds).toEqual(["kv-lab-1"]);
    expect(listed.tools.map((t) => t.name)).toEqual(["kv_get", "kv_list", "kv_set"]);
    expect(listed.tools[2]?.description).toContain("Store a value");
    expect(listed.tools[2]?.inputSchema).toMatchObject({ type: "object", required: ["key", "value"] });
    const box = await provision(broker.client, sessionId);

    const computed = await run(broker.client, box, "bash", { command: "echo $((6 * 7))" });
    const setId = callId();
    const set = await run(broker.client, kv, "kv_set", { key: "answer", value: computed.output }, { callId: setId });
    expect(set).toMatchObject({ isError: false, output: "stored answer", replayed: false });
    expect(await run(broker.client, kv, "kv_set", { key: "answer", value: "other" }, { callId: setId })).toMatchObject({ replayed: true });
    expect((await run(broker.client, kv, "kv_get", { key: "answer" })).output).toBe("42");
    await run(broker.client, kv, "kv_set", { key: "question", value: "?" });
    expect((await run(broker.client, kv, "kv_list", {})).output).toBe("answer\nquestion");
    // A hand has no workspace: repositories are refused for the sandbox, not for the request.
    const repositories = [{ url: "https://git.example.com/org/app.git", mountPath: "", checkout: "" }];
    expect(await rejection(broker.client.addRepositories({ sandboxId: kv, sessionId, repositories }))).toMatchObject({
      code: "FAILED_PRECONDITION",
      field: "sandbox_id",
    });
    const wrongTool = await run(broker.client, kv, "bash", { command: "true" });
    expect(wrongTool.isError).toBe(true);
    expect(wrongTool.output).toContain("kv_get, kv_set, kv_list");
    expect((await run(broker.client, kv, "kv_get", { key: "nope" })).isError).toBe(true);

    const { sandboxes } = await broker.client.listSandboxes({ sessionId, includeEnded: false });
    expect(sandboxes.map((s) => s.driver).sort()).toEqual(["bubblewrap", "external:kv-device"]);

    device.kill("SIGTERM");
    const lost = await eventually(async () => {
      const res = await run(broker.client, kv, "kv_get", { key: "answer" });
      return res.output.includes("was lost") ? res : undefined;
    }, "the kv sandbox to be lost");
    expect(lost).toMatchObject({ isError: true, output: `sandbox ${kv} was lost: hand kv-lab-1 (kv-device) disconnected` });
    expect((await broker.client.describeSandbox({ sandboxId: kv })).sandbox?.state).toBe(SandboxState.SANDBOX_STATE_LOST);
    expect((await run(broker.client, box, "bash", { command: "echo still" })).output).toBe("still");
    await eventually(async () => {
      const { events } = await log.client.getEvents({ sessionId, limit: 100, types: ["sandbox.lost"], position: undefined });
      return events.some((e) => e.id === `${kv}:lost`) ? true : undefined;
    }, "the sandbox.lost event");
  });

  it("refuses a registration whose tool specs are malformed, naming the field", async () => {
    const bad = createClient(SandboxBrokerClient, broker.address, { bearerToken: broker.tokens.tokens.hand }).connectHand();
    const failed = new Promise<Error>((resolve) => bad.on("error", resolve));
    const spec = { name: "poke", description: "", inputSchema: { type: "string" } };
    bad.write({ message: { $case: "register", value: { kind: "mute", handId: "bad-1", tools: [], toolSpecs: [spec] } } } satisfies ConnectHandRequest);
    expect((await failed).message).toContain("register.tool_specs[0].input_schema.type");
    expect(await rejection(broker.client.listHandTools({ kind: "mute" }))).toMatchObject({ code: "FAILED_PRECONDITION" });
  });

  it("refuses a second hand with the same id, and reports a hand that does not answer in time", async () => {
    const first = startKvDevice({ address: broker.address, token: broker.tokens.tokens.hand, handId: "kv-twin" });
    await provisionHand("kv-device");
    const twin = startKvDevice({ address: broker.address, token: broker.tokens.tokens.hand, handId: "kv-twin" });
    expect(await twin.closed).toContain("already connected");
    first.close();

    const silent = createClient(SandboxBrokerClient, broker.address, { bearerToken: broker.tokens.tokens.hand }).connectHand();
    const register: ConnectHandRequest = { message: { $case: "register", value: { kind: "mute", handId: "mute-1", tools: ["ping"], toolSpecs: [] } } };
    silent.write(register);
    silent.on("error", () => undefined);
    const mute = await provisionHand("mute");
    // A tool given by name alone is offered as taking any object.
    expect((await broker.client.listHandTools({ kind: "mute" })).tools).toEqual([{ name: "ping", description: "", inputSchema: { type: "object" } }]);
    expect(await rejection(broker.client.listHandTools({ kind: "nobody" }))).toMatchObject({ code: "FAILED_PRECONDITION", field: "kind" });
    const started = Date.now();
    const res = await run(broker.client, mute, "ping", {}, { timeoutMs: 300 });
    expect(res).toMatchObject({ isError: true, output: "hand mute-1 (mute) did not answer within 300 ms" });
    // The hand never answers: only the 300 ms limit ends the call; 15 s is a busy machine's margin.
    expect(Date.now() - started).toBeLessThan(15_000);
    silent.cancel();
  });
});
