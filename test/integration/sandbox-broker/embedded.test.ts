/**
 * The broker on the embedded default (PGlite, the same migrations): what `mh dev` runs on.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxBrokerClient, SandboxBrokerService } from "@metaharness/proto";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import { createLogger } from "@metaharness/service-kit/logging";
import { loadConfig, startSandboxBroker, type SandboxBrokerHandle } from "@metaharness/sandbox-broker";
import { BROKER_ROLES, provision, run, type BrokerClient, type BrokerRole } from "../../support/sandbox-broker.js";
import { writeServiceTokens, type ServiceTokenFiles } from "../../support/service-tokens.js";

let handle: SandboxBrokerHandle;
let client: BrokerClient;
let tokens: ServiceTokenFiles<BrokerRole>;
beforeAll(async () => {
  tokens = await writeServiceTokens(BROKER_ROLES);
  const config = loadConfig({
    MH_DATABASE_URL: "pglite:memory",
    MH_GRPC_PORT: "0",
    MH_LOG_LEVEL: "silent",
    MH_BROKER_ID: "embedded",
    MH_SERVICE_TOKENS_FILE: tokens.file,
  });
  handle = await startSandboxBroker(config, createLogger({ service: "sandbox-broker", level: "silent" }));
  client = promisify(createClient(SandboxBrokerClient, `127.0.0.1:${handle.port}`, { bearerToken: tokens.tokens.admin }), SandboxBrokerService);
});
afterAll(async () => {
  await handle?.stop();
  await tokens?.dispose();
});

describe("sandbox broker on PGlite", () => {
  it("provisions, runs a tool idempotently and releases", async () => {
    const sandboxId = await provision(client, "sesn_embedded", {});
    const first = await client.execute({ eventSeq: 0, sandboxId, sessionId: "sesn_embedded", name: "bash", input: { command: "echo $((6 * 7))" }, callId: "c1", timeoutMs: 0 });
    expect(first.output).toBe("42");
    const again = await client.execute({ eventSeq: 0, sandboxId, sessionId: "sesn_embedded", name: "bash", input: { command: "echo other" }, callId: "c1", timeoutMs: 0 });
    expect([again.output, again.replayed]).toEqual(["42", true]);
    expect((await run(client, sandboxId, "bash", { command: "pwd" })).output).toBe("/workspace");
    await client.release({ sandboxId, sessionId: "sesn_embedded" });
  });
});
