/**
 * An external hand on a laptop: `mh dev` issues a token for the broker's example kv device and
 * one for an operator, and says where the broker listens, so a developer runs the device as
 * printed (here through a shell, from a data directory whose path holds a space and a quote) and
 * provisions a sandbox on it over gRPC, as on the distributed stack; an environment naming the
 * hand (metadata mh.hand) is accepted by mh dev's gateway, which asks its broker.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { captureOutput, describeDev, startDev, type Stack } from "@metaharness/cli";
import { SandboxBrokerClient, SandboxBrokerService } from "@metaharness/proto";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import { afterAll, beforeAll, expect, it } from "vitest";
import { provisionOnHand } from "../../support/sandbox-broker.js";

const ROOT = new URL("../../../", import.meta.url).pathname;

let stack: Stack;
let keyPath: string;
let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "mh dev's hand-"));
  ({ stack, keyPath } = await startDev({ host: "127.0.0.1", port: 0, dataDir, memory: false, logLevel: "silent" }, {}));
});
afterAll(async () => {
  await stack?.stop();
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
});

it("runs the example hand with the token it printed, and serves a session's calls on it", async () => {
  const sdk = new Anthropic({ baseURL: stack.url, apiKey: stack.apiKey, maxRetries: 0 });
  const agent = await sdk.beta.agents.create({ name: "hands", model: "claude-sonnet-5-5" });
  const environment = await sdk.beta.environments.create({ name: "laptop" });
  const session = await sdk.beta.sessions.create({ agent: agent.id, environment_id: environment.id });

  const { brokerAddress, kind, operatorTokenFile } = stack.hands;
  const out = captureOutput();
  describeDev(stack, keyPath, out);
  const command = /^ *(MH_SANDBOX_BROKER_ADDR=.* npm run kv-device .*)$/m.exec(out.stdout())?.[1];
  // Quoted: the device reads its token from the path the shell hands it, or never connects.
  expect(command).toContain("MH_HAND_TOKEN_FILE='/");
  // As a developer pastes it; its own process group, so the stop reaches npm's child too.
  const device = spawn("sh", ["-c", `MH_HAND_ID=laptop-kv MH_LOG_LEVEL=silent ${command ?? "false"}`], {
    cwd: ROOT,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "" },
    stdio: "ignore",
    detached: true,
  });
  const raw = createClient(SandboxBrokerClient, brokerAddress, { bearerToken: (await readFile(operatorTokenFile, "utf8")).trim() });
  try {
    const broker = promisify(raw, SandboxBrokerService);
    const sandboxId = await provisionOnHand(broker, session.id, kind);
    const call = (name: string, input: Record<string, string>, callId: string) =>
      broker.execute({ eventSeq: 0, sandboxId, sessionId: session.id, name, input, callId, timeoutMs: 0 });
    expect(await call("kv_set", { key: "laptop", value: "from mh dev" }, "kv-1")).toMatchObject({ isError: false });
    expect((await call("kv_get", { key: "laptop" }, "kv-2")).output).toBe("from mh dev");
    // As printed: an environment naming the hand (its sessions offer the device's tools).
    expect(out.stdout()).toContain(`then an environment with metadata {"mh.hand": "${kind}"}`);
    const handEnvironment = await sdk.beta.environments.create({ name: "with the device", metadata: { "mh.hand": kind } });
    expect(handEnvironment.metadata["mh.hand"]).toBe(kind);
  } finally {
    raw.close();
    if (device.pid !== undefined) process.kill(-device.pid, "SIGTERM");
  }
}, 30_000);
