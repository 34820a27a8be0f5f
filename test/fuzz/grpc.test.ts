/**
 * Property-based fuzzing (fast-check) of every gRPC method of every service, on the real services
 * and Postgres, with an admin's token so requests get past the door: requests built from the
 * contracts field by field, the same with bytes mutated, and raw bytes. Whatever arrives, no call
 * ends INTERNAL or UNKNOWN, the service keeps answering, and a refused call stored nothing (its
 * database holds the same rows before and after). A counter-example fast-check finds is printed
 * with its seed; each one fixed became a regular test case where its fix lives.
 */
import * as grpc from "@grpc/grpc-js";
import type { DescMethod } from "@bufbuild/protobuf";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBrain, type Brain } from "../support/harness.js";
import { newSession, startTestLog, type TestLog } from "../support/session-log.js";
import { startTestBroker, type TestBroker } from "../support/sandbox-broker.js";
import { newVault, startTestVault, type TestVault } from "../support/vault.js";
import { contractServices, messageArb, mutatedArb, rawArb } from "./contracts.js";
import { callRaw, fingerprinter } from "./probe.js";

/** Runs per method: about 2,300 calls over the four services. */
const RUNS = Number(process.env["MH_FUZZ_RUNS"] ?? 50);

/** A service to fuzz: where it listens, an admin's token, its databases, and ids it holds (for requests that get further). */
type Target = Readonly<{ address: string; token: string; databases: readonly string[]; known: readonly string[] }>;

let log: TestLog;
let vault: TestVault;
let broker: TestBroker;
let brain: Brain;
const targets = new Map<string, Target>();

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  vault = await startTestVault({ sessionLog: log.reach("proxy") });
  broker = await startTestBroker({ ...log.reach("broker"), MH_CREDENTIAL_PROXY_ADDR: vault.address, MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.broker });
  brain = await startBrain({ scenarios: [] });
  const sessionId = await newSession(log.client);
  const vaultId = await newVault(vault.client("admin"));
  const known = [sessionId, vaultId];
  targets.set("metaharness.v1.SessionLog", { address: `127.0.0.1:${log.handle.port}`, token: log.tokens.tokens.admin, databases: [log.db.url], known });
  targets.set("metaharness.v1.CredentialVaultProxy", { address: vault.address, token: vault.tokens.admin, databases: [vault.db.url], known });
  targets.set("metaharness.v1.SandboxBroker", { address: broker.address, token: broker.tokens.tokens.admin, databases: [broker.db.url], known });
  targets.set("metaharness.v1.Harness", {
    address: `127.0.0.1:${brain.harnesses[0]!.port}`,
    token: brain.harnessTokens.tokens.admin,
    databases: [brain.log.db.url],
    // No id of a real session: a Wake that works starts a turn, whose writes would land while a
    // later, refused call is checked for storing nothing.
    known: [],
  });
}, 120_000);

afterAll(async () => {
  await brain?.stop();
  await broker?.stop();
  await vault?.stop();
  await log?.stop();
});

const FAULTS = new Set([grpc.status.INTERNAL, grpc.status.UNKNOWN]);

async function fuzz(serviceName: string, method: DescMethod): Promise<void> {
  const target = targets.get(serviceName)!;
  const client = new grpc.Client(target.address, grpc.credentials.createInsecure());
  const prints = await Promise.all(target.databases.map((url) => fingerprinter(url)));
  const fingerprint = async () => (await Promise.all(prints.map((p) => p.take()))).join(";");
  try {
    const valid = messageArb(method.input, target.known);
    let before = await fingerprint();
    await fc.assert(
      fc.asyncProperty(fc.oneof(valid, mutatedArb(valid), rawArb), async (request) => {
        const status = await callRaw(client, target.token, method, request);
        const after = await fingerprint();
        const refused = status.code !== grpc.status.OK && status.code !== grpc.status.CANCELLED;
        const stored = refused && after !== before;
        before = after;
        if (FAULTS.has(status.code) || stored) {
          throw new Error(`${grpc.status[status.code]}: ${status.details}${stored ? " (and the refused call stored rows)" : ""}; request ${Buffer.from(request).toString("hex")}`);
        }
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    // Still serving: a well-formed call of a read method answers.
    expect((await callRaw(client, target.token, method, new Uint8Array())).code).not.toBe(grpc.status.UNAVAILABLE);
  } finally {
    client.close();
    await Promise.all(prints.map((p) => p.close()));
  }
}

for (const [name, service] of contractServices()) {
  describe(name, () => {
    for (const method of service.methods) {
      it(`${method.name}: no INTERNAL, no crash, nothing stored on refusal`, () => fuzz(name, method), 60_000);
    }
  });
}
