/**
 * The harness's own API (Wake, ListActive) serves admins only: without a token, or with one the
 * harness does not know, a call is UNAUTHENTICATED and wakes nothing. The harness does not start
 * without its tokens file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@metaharness/harness";
import { HarnessClient, HarnessService } from "@metaharness/proto";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import { startBrain, type Brain } from "../../support/harness.js";
import { rejection } from "../../support/session-log.js";

let brain: Brain;

beforeAll(async () => {
  brain = await startBrain({ scenarios: [] });
});
afterAll(async () => {
  await brain?.stop();
});

describe("harness authentication", () => {
  it("refuses Wake and ListActive without a known admin token, and wakes nothing", async () => {
    const sessionId = await brain.createSession();
    const address = `127.0.0.1:${brain.harnesses[0]!.port}`;
    for (const token of [undefined, "x".repeat(43)]) {
      const raw = createClient(HarnessClient, address, token === undefined ? {} : { bearerToken: token });
      const rpc = promisify(raw, HarnessService);
      expect((await rejection(rpc.wake({ sessionId }))).code).toBe("UNAUTHENTICATED");
      expect((await rejection(rpc.listActive({}))).code).toBe("UNAUTHENTICATED");
      raw.close();
    }
    const { session } = await brain.log.client.getSession({ sessionId });
    expect([session?.lastSeq, session?.lease?.holder ?? ""]).toEqual([0, ""]);
    // The admin's token (the gateway's) is served.
    expect((await brain.rpc.listActive({})).instanceId).not.toBe("");
  });

  it("does not start without its service tokens file", () => {
    expect(() => loadConfig({ MH_SESSION_LOG_TOKEN_FILE: "/dev/null" })).toThrow(/MH_SERVICE_TOKENS_FILE/);
  });
});
